/*
 * tpsim explain: a trace, step by step, for people. Every event with every
 * rank's shard; more values than --max-values are elided visibly, never
 * dropped; --step, --module and --phase pick the events.
 */
#include "cli_internal.h"
#include "tpsim/cli.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tpsim/check.h"
#include "tpsim/event.h"
#include "tpsim/jsonio.h"
#include "tpsim/numfmt.h"
#include "tpsim/spec.h"
#include "tpsim/trace.h"

/* ---- explain: a trace, step by step, for people ---------------------- */

static const char *str_of(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsString(v) ? v->valuestring : "?";
}

/* Prints a trace number as the trace writes it: integers whole (1048576,
 * never 1.04858e+06), others as their shortest decimal; "?" if absent. */
static void print_number(FILE *out, const cJSON *v)
{
	char buf[TPS_NUMFMT_MAX];
	if (cJSON_IsNumber(v) && isfinite(v->valuedouble)) {
		tps_format_double(v->valuedouble, buf);
		fputs(buf, out);
	} else {
		fputc('?', out);
	}
}

/* Prints a JSON array of numbers or strings between open and close,
 * ", "-separated: a shape "(2, 4)" or placements "[shard(1)]". */
static void print_list(FILE *out, const cJSON *list, char open, char close)
{
	const cJSON *e;
	bool first = true;
	fputc(open, out);
	cJSON_ArrayForEach(e, list)
	{
		fputs(first ? "" : ", ", out);
		if (cJSON_IsNumber(e)) {
			print_number(out, e);
		} else {
			fputs(cJSON_IsString(e) ? e->valuestring : "?", out);
		}
		first = false;
	}
	fputc(close, out);
}

static void print_shape(FILE *out, const cJSON *shape)
{
	print_list(out, shape, '(', ')');
}

/* The numbers of nested arrays, in order (depth-first), into a flat array
 * of at most cap pointers; returns how many there are in all. */
static size_t flatten(const cJSON *v, const cJSON **flat, size_t cap, size_t n)
{
	const cJSON *e;
	if (!cJSON_IsArray(v)) {
		if (n < cap) {
			flat[n] = v;
		}
		return n + 1;
	}
	cJSON_ArrayForEach(e, v)
	{
		n = flatten(e, flat, cap, n);
	}
	return n;
}

/* The last `keep` numbers of nested arrays (flatten keeps the first). */
static void last_numbers(const cJSON *v, const cJSON **ring, size_t keep,
			 size_t *seen)
{
	const cJSON *e;
	if (!cJSON_IsArray(v)) {
		ring[*seen % keep] = v;
		(*seen)++;
		return;
	}
	cJSON_ArrayForEach(e, v)
	{
		last_numbers(e, ring, keep, seen);
	}
}

/*
 * A rank's values, never dropped without saying so: up to max_values
 * numbers (0: no limit) as the trace's nested arrays; more as the first
 * and last max_values / 2 in row-major order around "...", followed by
 * how many were shown. A summary trace's keys stand in for absent values.
 */
#define EXPLAIN_MAX_KEEP 512

static void print_values(FILE *out, const cJSON *holder, size_t max_values,
			 bool md)
{
	const char *tick = md ? "`" : "";
	const cJSON *values =
		cJSON_GetObjectItemCaseSensitive(holder, "values");
	const cJSON *head[EXPLAIN_MAX_KEEP], *tail[EXPLAIN_MAX_KEEP];
	size_t n, keep, seen = 0;

	if (!values) {
		const cJSON *hash =
			cJSON_GetObjectItemCaseSensitive(holder, "hash");
		if (!cJSON_IsString(hash)) {
			return;
		}
		if (cJSON_GetObjectItemCaseSensitive(holder, "min")) {
			fputs(" min ", out);
			print_number(out, cJSON_GetObjectItemCaseSensitive(
						  holder, "min"));
			fputs(", max ", out);
			print_number(out, cJSON_GetObjectItemCaseSensitive(
						  holder, "max"));
			fputs(", mean ", out);
			print_number(out, cJSON_GetObjectItemCaseSensitive(
						  holder, "mean"));
			fputc(',', out);
		}
		fprintf(out, " hash %s%s%s", tick, hash->valuestring, tick);
		return;
	}
	n = flatten(values, head, 0, 0);
	if (max_values == 0 || n <= max_values) {
		char *text = cJSON_PrintUnformatted(values);
		if (text) {
			fprintf(out, " %s%s%s", tick, text, tick);
		} else {
			fputs(" (values: out of memory to print)", out);
		}
		free(text);
		return;
	}
	keep = max_values / 2 ? max_values / 2 : 1;
	keep = keep > EXPLAIN_MAX_KEEP ? EXPLAIN_MAX_KEEP : keep;
	flatten(values, head, keep, 0);
	last_numbers(values, tail, keep, &seen);
	fprintf(out, " %s[", tick);
	for (size_t i = 0; i < keep; i++) {
		print_number(out, head[i]);
		fputc(',', out);
	}
	fputs("...", out);
	for (size_t i = 0; i < keep; i++) {
		fputc(',', out);
		print_number(out, tail[(seen + i) % keep]);
	}
	fprintf(out,
		"]%s (%zu of %zu values: the first and last %zu in row-major "
		"order; --max-values)",
		tick, 2 * keep, n, keep);
}

/* A collective's groups: all of them when short, else the first and how
 * many. */
static void print_groups(FILE *out, const cJSON *groups)
{
	char *text = groups ? cJSON_PrintUnformatted(groups) : NULL;
	if (text && strlen(text) <= 60) {
		fprintf(out, " %s", text);
	} else if (cJSON_IsArray(groups) && groups->child) {
		char *first = cJSON_PrintUnformatted(groups->child);
		fprintf(out, " [%s,...] (%d groups)", first ? first : "?",
			cJSON_GetArraySize(groups));
		free(first);
	}
	free(text);
}

/* What a collective or a local split computes, as an equation over the
 * ranks i of one group (y_i: rank i's tensor, y: the group's whole), in
 * the notation of the trace's notes. */
/*
 * The equation of a collective or split, written with the event's tensor
 * T: "T = sum_i T_i" (i a rank of the group, as the notes write it), into
 * buf; NULL for other ops. A name that could break a Markdown code span
 * is written as T.
 */
static const char *op_equation(const char *op, const char *tensor, char *buf,
			       size_t size)
{
	static const struct {
		const char *op, *equation; /* %1$s: the tensor */
	} table[] = {
		{"all_reduce",
		 "%1$s = sum_i %1$s_i, on every rank of the group"},
		{"all_gather",
		 "%1$s = concat_i %1$s_i, on every rank of the group"},
		{"reduce_scatter", "%1$s_i = chunk_i(sum_j %1$s_j)"},
		{"broadcast", "%1$s_i = %1$s_0, the group's first rank's"},
		{"scatter", "%1$s_i = chunk_i(%1$s_0)"},
		{"all_to_all", "%1$s_i = concat_j chunk_i(%1$s_j)"},
		{"split", "%1$s_i = chunk_i(%1$s), no communication"},
	};
	if (strpbrk(tensor, "`\n") || strlen(tensor) > 64) {
		tensor = "T";
	}
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
		if (strcmp(op, table[i].op) == 0) {
			snprintf(buf, size, table[i].equation, tensor);
			return buf;
		}
	}
	return NULL;
}

/* Colour, only on a terminal and never under NO_COLOR (no-color.org):
 * headings bold, collectives yellow, the verdict green or red. The codes
 * take no columns, so the text aligns as without them. */
#define BOLD   "\033[1m"
#define YELLOW "\033[33m"
#define GREEN  "\033[32m"
#define RED    "\033[31m"
#define PLAIN  "\033[0m"

static bool want_color(FILE *out)
{
	const char *no_color = getenv("NO_COLOR");
	int fd = fileno(out);
	return fd >= 0 && isatty(fd) && !(no_color && no_color[0]);
}

/* Column widths of the module and op names, so every event line of a
 * trace aligns: at least 8 and 11, more for longer names. */
struct columns {
	int seq, module, op; /* seq: the widest "[n]" */
};

/* "[n]" of an event's seq; "[?]" without one. */
static int seq_label(const cJSON *ev, char *buf, size_t size)
{
	const cJSON *seq = cJSON_GetObjectItemCaseSensitive(ev, "seq");
	if (cJSON_IsNumber(seq) && seq->valuedouble >= 0 &&
	    seq->valuedouble < 1e15) {
		return snprintf(buf, size, "[%.0f]", seq->valuedouble);
	}
	return snprintf(buf, size, "[?]");
}

static struct columns columns_of(const cJSON *events)
{
	struct columns c = {0, 8, 11};
	const cJSON *ev;
	cJSON_ArrayForEach(ev, events)
	{
		char label[32];
		int q = seq_label(ev, label, sizeof label);
		int m = (int)strlen(str_of(ev, "module"));
		c.seq = q > c.seq ? q : c.seq;
		int o = (int)strlen(str_of(ev, "op"));
		c.module = m > c.module ? (m < 64 ? m : 64) : c.module;
		c.op = o > c.op ? (o < 64 ? o : 64) : c.op;
	}
	return c;
}

/*
 * The placements each tensor had last, by name, so that a layout change or
 * a collective can show its placement before as well as after. Borrowed
 * from the trace's events.
 */
struct placements_seen {
	const char **names;
	const cJSON **placements;
	size_t n, cap;
};

/* A redistribution's (layout or collective event's) placements before it,
 * or NULL (a compute, or the tensor's first event); then records ev's. */
static const cJSON *placements_before(struct placements_seen *seen,
				      const cJSON *ev)
{
	const char *name = str_of(ev, "tensor");
	const cJSON *now = cJSON_GetObjectItemCaseSensitive(ev, "placements");
	const cJSON *before = NULL;
	size_t i = 0;
	while (i < seen->n && strcmp(seen->names[i], name) != 0) {
		i++;
	}
	if (i < seen->n) {
		before = seen->placements[i];
	} else if (seen->n < seen->cap) {
		seen->names[seen->n++] = name;
	} else {
		return NULL; /* more tensors than room: shown without */
	}
	seen->placements[i] = now;
	return strcmp(str_of(ev, "kind"), "compute") == 0 ? NULL : before;
}

static void explain_event(FILE *out, const cJSON *ev, const cJSON *before,
			  size_t max_values, bool color, struct columns cols)
{
	char equation[256];
	const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(ev, "ranks");
	const cJSON *bytes =
		cJSON_GetObjectItemCaseSensitive(ev, "bytes_per_rank");
	const cJSON *r;
	const char *kind = str_of(ev, "kind");

	char label[32];
	seq_label(ev, label, sizeof label);
	color = color && strcmp(kind, "collective") == 0;
	fprintf(out, "  %-*s %-*s %s%-*s%s %s: ", cols.seq, label, cols.module,
		str_of(ev, "module"), color ? YELLOW : "", cols.op,
		str_of(ev, "op"), color ? PLAIN : "", str_of(ev, "tensor"));
	if (before) {
		print_list(out, before, '[', ']');
		fputs(" -> ", out);
	}
	print_list(out, cJSON_GetObjectItemCaseSensitive(ev, "placements"), '[',
		   ']');
	fputs(" global ", out);
	print_shape(out, cJSON_GetObjectItemCaseSensitive(ev, "global_shape"));
	if (strcmp(kind, "compute") != 0 &&
	    cJSON_GetObjectItemCaseSensitive(ev, "mesh_dim")) {
		fprintf(out, ", over %s groups", str_of(ev, "mesh_dim"));
		print_groups(out,
			     cJSON_GetObjectItemCaseSensitive(ev, "groups"));
	}
	if (cJSON_IsNumber(bytes)) {
		fputs(", ", out);
		print_number(out, bytes);
		fputs(" bytes/rank", out);
	}
	fputc('\n', out);
	if (!ranks) {
		fputs("        every rank: the block its placements give "
		      "(symbolic: no values; --pictures draws them)\n",
		      out);
	}
	cJSON_ArrayForEach(r, ranks)
	{
		const cJSON *rank = cJSON_GetObjectItemCaseSensitive(r, "rank");
		fputs("        rank ", out);
		print_number(out, rank);
		fputs(": ", out);
		print_shape(out, cJSON_GetObjectItemCaseSensitive(r, "shape"));
		print_values(out, r, max_values, false);
		fputc('\n', out);
	}
	if (op_equation(str_of(ev, "op"), str_of(ev, "tensor"), equation,
			sizeof equation)) {
		fprintf(out, "        %s\n", equation);
	}
	if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(ev, "note"))) {
		fprintf(out, "        (%s)\n", str_of(ev, "note"));
	}
}

/* The training part of a result: the loss at each step, both ways, and
 * what else was compared. */
/* ---- the same in Markdown (--format md) ------------------------------- */

/* Text from a config or a trace (module names, notes) as Markdown that
 * shows it literally: every character GitHub or MkDocs could read as
 * markup is escaped. */
static void md_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (strchr("\\`*_{}[]<>#|~", *s)) {
			fputc('\\', out);
		}
		fputc(*s, out);
	}
}

/* The run's global tensors, which the events show only as shards: the
 * input (and target), and every parameter's initial value with its
 * placements. */
static void md_or_text(FILE *out, bool md, const char *s);

static void global_row(FILE *out, bool md, const char *name, const cJSON *t,
		       size_t max_values)
{
	const cJSON *placements =
		cJSON_GetObjectItemCaseSensitive(t, "placements");
	fputs(md ? "| " : "  ", out);
	md_or_text(out, md, name);
	fputs(md ? " | " : " ", out);
	print_shape(out, cJSON_GetObjectItemCaseSensitive(t, "shape"));
	if (md) {
		fputs(" | ", out);
		if (placements) {
			fputc('`', out);
			print_list(out, placements, '[', ']');
			fputc('`', out);
		}
		fputs(" |", out);
	} else if (placements) {
		fputc(' ', out);
		print_list(out, placements, '[', ']');
	}
	print_values(out, t, max_values, md);
	fputs(md ? " |\n" : "\n", out);
}

static void explain_globals(FILE *out, const cJSON *trace, bool md,
			    size_t max_values)
{
	const cJSON *t;
	fputs(md ? "## Global tensors\n\n| tensor | shape | placements | "
		   "values |\n|---|---|---|---|\n"
		 : "global tensors:\n",
	      out);
	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(trace, "inputs"))
	{
		global_row(out, md, t->string, t, max_values);
	}
	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(trace, "params"))
	{
		global_row(out, md, t->string, t, max_values);
	}
	if (md) {
		fputc('\n', out);
	}
}

/* Which module's collectives cost what: comm.by_module as a table. */
static void explain_by_module(FILE *out, const cJSON *comm, bool md)
{
	const cJSON *m;
	const cJSON *by = cJSON_GetObjectItemCaseSensitive(comm, "by_module");
	if (!by || !by->child) {
		return;
	}
	fputs(md ? "\n| module | collectives | bytes per rank |\n"
		   "|---|---:|---:|\n"
		 : "  by module:",
	      out);
	cJSON_ArrayForEach(m, by)
	{
		fputs(md ? "| " : " ", out);
		md_or_text(out, md, m->string);
		fputs(md ? " | " : " x", out);
		print_number(out, cJSON_GetObjectItemCaseSensitive(m, "count"));
		fputs(md ? " | " : " (", out);
		print_number(out, cJSON_GetObjectItemCaseSensitive(
					  m, "bytes_per_rank"));
		fputs(md ? " |\n" : " bytes/rank)", out);
	}
	if (!md) {
		fputc('\n', out);
	}
}

static void md_or_text(FILE *out, bool md, const char *s)
{
	if (md) {
		md_text(out, s);
	} else {
		fputs(s, out);
	}
}

static void md_event(FILE *out, const cJSON *ev, const cJSON *before,
		     size_t max_values)
{
	char equation[256];
	const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(ev, "ranks");
	const cJSON *bytes =
		cJSON_GetObjectItemCaseSensitive(ev, "bytes_per_rank");
	const cJSON *r;
	const char *kind = str_of(ev, "kind");

	fputs("### [", out);
	print_number(out, cJSON_GetObjectItemCaseSensitive(ev, "seq"));
	fputs("] ", out);
	md_text(out, str_of(ev, "module"));
	fputs(": ", out);
	md_text(out, str_of(ev, "op"));
	fputs(" -> ", out);
	md_text(out, str_of(ev, "tensor"));
	fputs("\n\nPlacements `", out);
	if (before) {
		print_list(out, before, '[', ']');
		fputs("` -> `", out);
	}
	print_list(out, cJSON_GetObjectItemCaseSensitive(ev, "placements"), '[',
		   ']');
	fputs("`, global shape ", out);
	print_shape(out, cJSON_GetObjectItemCaseSensitive(ev, "global_shape"));
	if (strcmp(kind, "compute") != 0 &&
	    cJSON_GetObjectItemCaseSensitive(ev, "mesh_dim")) {
		char *groups = cJSON_PrintUnformatted(
			cJSON_GetObjectItemCaseSensitive(ev, "groups"));
		fputs(", over the ", out);
		md_text(out, str_of(ev, "mesh_dim"));
		fprintf(out, " groups `%s`", groups ? groups : "?");
		free(groups);
	}
	if (cJSON_IsNumber(bytes)) {
		fputs(", ", out);
		print_number(out, bytes);
		fputs(" bytes per rank", out);
	}
	fputs(ranks ? ".\n\n| rank | shape | values |\n|---:|---|---|\n"
		    : ". Every rank holds the block its placements give (a "
		      "symbolic trace lists no ranks; `--pictures` draws "
		      "them).\n",
	      out);
	cJSON_ArrayForEach(r, ranks)
	{
		fputs("| ", out);
		print_number(out, cJSON_GetObjectItemCaseSensitive(r, "rank"));
		fputs(" | ", out);
		print_shape(out, cJSON_GetObjectItemCaseSensitive(r, "shape"));
		fputs(" |", out);
		print_values(out, r, max_values, true);
		fputs(" |\n", out);
	}
	if (op_equation(str_of(ev, "op"), str_of(ev, "tensor"), equation,
			sizeof equation)) {
		fprintf(out, "\n`%s`\n", equation);
	}
	if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(ev, "note"))) {
		fputs("\n", out);
		md_text(out, str_of(ev, "note"));
		fputs("\n", out);
	}
	fputs("\n", out);
}

static void explain_training(FILE *out, const cJSON *result)
{
	const cJSON *loss = cJSON_GetObjectItemCaseSensitive(result, "loss");
	const cJSON *ref =
		cJSON_GetObjectItemCaseSensitive(result, "reference_loss");
	const cJSON *grads = cJSON_GetObjectItemCaseSensitive(result, "grads");
	if (!cJSON_IsArray(loss)) {
		return;
	}
	fputs("loss by step: ", out);
	print_list(out, loss, '[', ']');
	fputs(", reference ", out);
	print_list(out, ref, '[', ']');
	fputc('\n', out);
	fprintf(out,
		"compared too: the last step's gradients of %d tensor%s and "
		"the parameters after it (result.grads, result.params_after)\n",
		cJSON_GetArraySize(grads),
		cJSON_GetArraySize(grads) == 1 ? "" : "s");
}

/* Which events `explain` shows: all by default. */
struct explain_filter {
	long step;	    /* -1: any */
	const char *module; /* NULL: any */
	const char *phase;  /* NULL: any */
	size_t max_values;
	bool md;       /* --format md */
	bool color;    /* text on a terminal, NO_COLOR unset */
	bool pictures; /* --pictures: each event's sharding picture */
};

static bool explain_wants(const struct explain_filter *f, const cJSON *ev)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(ev, "step");
	if (f->step >= 0 &&
	    !(cJSON_IsNumber(s) && s->valuedouble == (double)f->step)) {
		return false;
	}
	if (f->module && strcmp(f->module, str_of(ev, "module")) != 0) {
		return false;
	}
	return !f->phase || strcmp(f->phase, str_of(ev, "phase")) == 0;
}

/* A whole number in [0, hi] for an explain option. */
static bool parse_count(const char *text, long hi, long *out)
{
	char *end;
	long n;
	errno = 0;
	n = strtol(text, &end, 10);
	if (errno || end == text || *end != '\0' || n < 0 || n > hi) {
		return false;
	}
	*out = n;
	return true;
}

static int explain_options(int argc, char **argv, struct explain_filter *f,
			   const char **path, FILE *err)
{
	for (int i = 2; i < argc; i++) {
		const char *opt = argv[i];
		const char *arg = i + 1 < argc ? argv[i + 1] : NULL;
		long n;
		if (strcmp(opt, "--step") == 0 ||
		    strcmp(opt, "--max-values") == 0) {
			if (!arg || !parse_count(arg, 1000000000L, &n)) {
				return tps_cli_usage_error(
					err,
					strcmp(opt, "--step") == 0
						? "explain: --step needs a "
						  "step "
						  "number (0, 1, ...), got '%s'"
						: "explain: --max-values needs "
						  "a "
						  "count (0: no limit), got "
						  "'%s'",
					arg ? arg : "");
			}
			if (strcmp(opt, "--step") == 0) {
				f->step = n;
			} else {
				f->max_values = (size_t)n;
			}
			i++;
		} else if (strcmp(opt, "--format") == 0) {
			if (!arg || (strcmp(arg, "text") != 0 &&
				     strcmp(arg, "md") != 0)) {
				return tps_cli_usage_error(
					err,
					"explain: --format expects text or md, "
					"got '%s'",
					arg ? arg : "");
			}
			f->md = strcmp(arg, "md") == 0;
			i++;
		} else if (strcmp(opt, "--pictures") == 0) {
			f->pictures = true;
		} else if (strcmp(opt, "--module") == 0) {
			if (!arg) {
				return tps_cli_usage_error(
					err, "explain: --module needs a name%s",
					"");
			}
			f->module = arg;
			i++;
		} else if (strcmp(opt, "--phase") == 0) {
			if (!arg || tps_name_index(tps_phase_names, arg) < 0) {
				return tps_cli_usage_error(
					err,
					"explain: --phase expects setup, "
					"forward, backward or optimizer, got "
					"'%s'",
					arg ? arg : "");
			}
			f->phase = arg;
			i++;
		} else if (opt[0] == '-' && opt[1] != '\0') {
			return tps_cli_usage_error(
				err, "explain: unknown option '%s'", opt);
		} else if (*path) {
			return tps_cli_usage_error(
				err, "explain: unexpected argument '%s'", opt);
		} else {
			*path = opt;
		}
	}
	if (!*path) {
		return tps_cli_usage_error(err, "explain: expected TRACE%s",
					   "");
	}
	return TPS_EXIT_OK;
}

/* One figure of result.symbolic: bytes, and the ranks when they differ. */
static void symbolic_figure(FILE *out, const cJSON *symbolic, const char *key,
			    const char *what, bool md)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(symbolic, key);
	const cJSON *min = cJSON_GetObjectItemCaseSensitive(f, "min_bytes");
	fprintf(out, md ? "- %s: " : "  %s ", what);
	print_number(out, cJSON_GetObjectItemCaseSensitive(f, "bytes"));
	if (min) {
		fputs(" bytes on rank ", out);
		print_number(out, cJSON_GetObjectItemCaseSensitive(f, "rank"));
		fputs(" (rank ", out);
		print_number(out,
			     cJSON_GetObjectItemCaseSensitive(f, "min_rank"));
		fputs(": ", out);
		print_number(out, min);
		fputc(')', out);
	} else {
		fputs(" bytes", out);
	}
	fputc('\n', out);
}

/* The result of a symbolic run: the output's shape, what each rank holds
 * and sends; no values, no reference. */
/* Counts the "exact" leaves of a result's "comparison" and all of its
 * leaves. */
static void count_comparison(const cJSON *c, int *exact, int *all)
{
	const cJSON *e;
	if (cJSON_IsString(c)) {
		*exact += strcmp(c->valuestring, "exact") == 0;
		*all += 1;
		return;
	}
	cJSON_ArrayForEach(e, c)
	{
		count_comparison(e, exact, all);
	}
}

/* ", exact comparison" and the like, from "comparison" (traces before it
 * have none: nothing). */
static void print_comparison(FILE *out, const cJSON *comparison)
{
	int exact = 0, all = 0;
	char how[96];
	count_comparison(comparison, &exact, &all);
	if (all > 0) {
		tps_cli_describe_comparison(exact, all, how, sizeof how);
		fprintf(out, ", %s", how);
	}
}

static void explain_symbolic(FILE *out, const cJSON *result, bool md)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(result, "symbolic");
	const cJSON *comm =
		cJSON_GetObjectItemCaseSensitive(s, "comm_bytes_per_rank");
	const cJSON *phase;
	fputs(md ? "## Result\n\nSymbolic: no values, no reference. Output "
		 : "result: symbolic: no values, no reference; output ",
	      out);
	print_shape(out,
		    cJSON_GetObjectItemCaseSensitive(
			    cJSON_GetObjectItemCaseSensitive(result, "output"),
			    "shape"));
	fputs(md ? ". Per rank, float32, the largest over ranks:\n\n"
		 : "; per rank, float32, the largest over ranks:\n",
	      out);
	symbolic_figure(out, s, "param_bytes", "parameters", md);
	symbolic_figure(out, s, "grad_bytes", "gradients", md);
	symbolic_figure(out, s, "optimizer_state_bytes", "optimizer state", md);
	symbolic_figure(out, s, "saved_activation_bytes",
			"activations saved for backward", md);
	symbolic_figure(out, s, "output_bytes", "model output", md);
	symbolic_figure(out, s, "peak_activation_bytes", "activations at peak",
			md);
	fputs(md ? "- collectives:" : "  collectives", out);
	cJSON_ArrayForEach(phase, comm)
	{
		fputs(phase == comm->child ? " " : ", ", out);
		md_or_text(out, md, phase->string);
		fputc(' ', out);
		print_number(out, phase);
	}
	fputs(md ? " bytes per rank\n\n" : " bytes per rank\n", out);
}

int tps_cli_explain(int argc, char **argv, FILE *out, FILE *err)
{
	cJSON *trace = NULL;
	const cJSON *ev, *result, *comm, *op, *mesh;
	struct tps_error e = {0};
	const char *phase = NULL, *path = NULL;
	struct explain_filter filter = {-1,    NULL,  NULL, 16,
					false, false, false};
	int step = -2, shown = 0, index = -1;
	struct columns cols;
	struct placements_seen seen = {0};
	int rc = explain_options(argc, argv, &filter, &path, err);

	if (rc != TPS_EXIT_OK) {
		return rc;
	}
	filter.color = !filter.md && want_color(out);
	if (tps_json_load(path, TPS_JSON_MAX_TRACE_BYTES, &trace, &e) !=
		    TPS_OK ||
	    tps_check_is_trace(trace, path, &e) != TPS_OK) {
		cJSON_Delete(trace);
		return tps_cli_trouble(err, &e);
	}
	/* Every picture is checked before anything is printed: a trace that
	 * cannot be drawn is trouble, not half an explanation. */
	cJSON_ArrayForEach(ev,
			   cJSON_GetObjectItemCaseSensitive(trace, "events"))
	{
		index++;
		if (filter.pictures && explain_wants(&filter, ev) &&
		    (rc = tps_cli_explain_picture(NULL, trace, path, index,
						  false, err)) != TPS_EXIT_OK) {
			cJSON_Delete(trace);
			return rc;
		}
	}
	index = -1;
	/* At most one tensor name per event. */
	seen.cap = (size_t)cJSON_GetArraySize(
		cJSON_GetObjectItemCaseSensitive(trace, "events"));
	seen.names = calloc(seen.cap + 1, sizeof *seen.names);
	seen.placements = calloc(seen.cap + 1, sizeof *seen.placements);
	if (!seen.names || !seen.placements) {
		free(seen.names);
		free(seen.placements);
		cJSON_Delete(trace);
		tps_error_set(&e, TPS_ERR_NOMEM, "out of memory");
		return tps_cli_trouble(err, &e);
	}
	mesh = cJSON_GetObjectItemCaseSensitive(trace, "mesh");
	fputs(filter.md ? "# A " : "", out);
	md_or_text(out, filter.md, str_of(trace, "generator"));
	fputs(" trace of a mesh ", out);
	print_shape(out, cJSON_GetObjectItemCaseSensitive(mesh, "shape"));
	fputs(" named", out);
	{
		char *names = cJSON_PrintUnformatted(
			cJSON_GetObjectItemCaseSensitive(mesh, "dim_names"));
		fprintf(out, filter.md ? " `%s`\n\n" : " %s\n",
			names ? names : "?");
		free(names);
	}
	cJSON_ArrayForEach(ev,
			   cJSON_GetObjectItemCaseSensitive(trace, "warnings"))
	{
		fputs(filter.md ? "> **Warning:** " : "warning: ", out);
		md_or_text(out, filter.md,
			   cJSON_IsString(ev) ? ev->valuestring : "?");
		fputs(filter.md ? "\n\n" : "\n", out);
	}
	explain_globals(out, trace, filter.md, filter.max_values);
	cols = columns_of(cJSON_GetObjectItemCaseSensitive(trace, "events"));
	cJSON_ArrayForEach(ev,
			   cJSON_GetObjectItemCaseSensitive(trace, "events"))
	{
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(ev, "step");
		int this_step = cJSON_IsNumber(s) ? s->valueint : -1;
		const char *this_phase = str_of(ev, "phase");
		index++;
		const cJSON *before = placements_before(&seen, ev);
		if (!explain_wants(&filter, ev)) {
			continue;
		}
		shown++;
		if (!phase || strcmp(phase, this_phase) != 0 ||
		    this_step != step) {
			fputs(filter.md	     ? "## "
			      : filter.color ? BOLD
					     : "",
			      out);
			md_or_text(out, filter.md, this_phase);
			if (this_step >= 0) {
				fprintf(out, ", step %d", this_step);
			}
			fputs(filter.md ? "\n\n" : ":", out);
			fputs(filter.color ? PLAIN "\n"
			      : filter.md  ? ""
					   : "\n",
			      out);
			phase = this_phase;
			step = this_step;
		}
		if (filter.md) {
			md_event(out, ev, before, filter.max_values);
		} else {
			explain_event(out, ev, before, filter.max_values,
				      filter.color, cols);
		}
		if (filter.pictures) {
			tps_cli_explain_picture(out, trace, path, index,
						filter.md, err);
		}
	}
	if (shown == 0) {
		fputs(filter.md ? "*No event matches --step, --module and "
				  "--phase.*\n\n"
				: "(no event matches --step, --module and "
				  "--phase)\n",
		      out);
	}
	result = cJSON_GetObjectItemCaseSensitive(trace, "result");
	if (cJSON_GetObjectItemCaseSensitive(result, "symbolic")) {
		explain_symbolic(out, result, filter.md);
	} else if (result) {
		const cJSON *o =
			cJSON_GetObjectItemCaseSensitive(result, "output");
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(
			result, "max_abs_diff");
		bool match = cJSON_IsTrue(
			cJSON_GetObjectItemCaseSensitive(result, "match"));
		const cJSON *ref;
		const cJSON *stopped =
			cJSON_GetObjectItemCaseSensitive(result, "stopped");
		if (cJSON_IsString(stopped)) {
			/* An injected mistake broke the shapes: no output. */
			fputs(filter.md ? "## Result\n\nThe simulation "
					  "**stopped** at a shape error: "
					: "result: the simulation STOPPED at a "
					  "shape error: ",
			      out);
			md_or_text(out, filter.md, stopped->valuestring);
			fputs(filter.md ? "\n\n" : "\n", out);
		} else {
			fputs(filter.md ? "## Result\n\nOutput "
					: "result: output ",
			      out);
			print_shape(out, cJSON_GetObjectItemCaseSensitive(
						 o, "shape"));
			/* Training compares more than the output: say so,
			 * since the output alone may agree. */
			bool training = cJSON_GetObjectItemCaseSensitive(
						result, "loss") != NULL;
			const char *what = " the single-device reference";
			print_values(out, o, filter.max_values, filter.md);
			fputs(training ? "; over output, loss, gradients and "
					 "parameters, the run"
				       : "",
			      out);
			if (filter.md) {
				fprintf(out, " %s%s",
					match ? "**matches**"
					      : "**differs from**",
					what);
			} else {
				fprintf(out, " %s%s%s%s",
					filter.color ? (match ? GREEN : RED)
						     : "",
					match ? "matches" : "DIFFERS from",
					filter.color ? PLAIN : "", what);
			}
			fputs(filter.md ? " (`max_abs_diff` "
					: " (max_abs_diff ",
			      out);
			if (!d) {
				fputs("none: the shapes differ", out);
			} else {
				print_number(out, d);
				print_comparison(
					out, cJSON_GetObjectItemCaseSensitive(
						     result, "comparison"));
			}
			fputs(filter.md ? ").\n\n" : ")\n", out);
		}
		if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(
			    result, "diagnosis"))) {
			fputs(filter.md ? "**Diagnosis:** " : "  diagnosis: ",
			      out);
			md_or_text(out, filter.md, str_of(result, "diagnosis"));
			fputs(filter.md ? "\n\n" : "\n", out);
		}
		ref = cJSON_GetObjectItemCaseSensitive(result,
						       "reference_output");
		if (ref) {
			fputs(filter.md ? "Reference output " : "  reference ",
			      out);
			print_shape(out, cJSON_GetObjectItemCaseSensitive(
						 ref, "shape"));
			print_values(out, ref, filter.max_values, filter.md);
			fputs(filter.md ? ".\n\n" : "\n", out);
		}
		explain_training(out, result);
		if (filter.md &&
		    cJSON_GetObjectItemCaseSensitive(result, "loss")) {
			fputc('\n', out);
		}
	}
	comm = cJSON_GetObjectItemCaseSensitive(trace, "comm");
	if (comm) {
		const cJSON *n =
			cJSON_GetObjectItemCaseSensitive(comm, "collectives");
		const cJSON *b = cJSON_GetObjectItemCaseSensitive(
			comm, "bytes_per_rank");
		fputs(filter.md ? "Communication: " : "comm: ", out);
		print_number(out, n);
		fprintf(out, " collective%s, ",
			cJSON_IsNumber(n) && n->valuedouble == 1 ? "" : "s");
		print_number(out, b);
		fputs(" bytes per rank", out);
		cJSON_ArrayForEach(
			op, cJSON_GetObjectItemCaseSensitive(comm, "by_op"))
		{
			fputs("; ", out);
			md_or_text(out, filter.md, op->string);
			fputs(" x", out);
			print_number(out, cJSON_GetObjectItemCaseSensitive(
						  op, "count"));
		}
		fputc('\n', out);
		explain_by_module(out, comm, filter.md);
	}
	free(seen.names);
	free(seen.placements);
	cJSON_Delete(trace);
	return TPS_EXIT_OK;
}
