/*
 * tpsim explain: a trace, step by step, for people. Every event with every
 * rank's shard; more values than --max-values are elided visibly, never
 * dropped; --step, --module and --phase pick the events.
 */
#include "cli_internal.h"
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "explain_bridge.h"
#include "fixture_check.h"
#include "nn_event.h"
#include "jsonio.h"
#include "numfmt.h"
#include "spec.h"
#include "trace.h"

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

/* A byte count of the trace for people (numfmt.h: "16 bytes", "2.25
 * MiB"); "?" unless a whole number. */
static void print_size(FILE *out, const cJSON *v)
{
	char buf[TPS_NUMFMT_MAX];
	if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 9e18 &&
	    v->valuedouble == (double)(int64_t)v->valuedouble) {
		tps_format_bytes((int64_t)v->valuedouble, buf);
		fputs(buf, out);
	} else {
		fputc('?', out);
	}
}

/* The same with the exact count from 1024 bytes on. */
static void print_size_exact(FILE *out, const cJSON *v)
{
	char buf[TPS_NUMFMT_BYTES_MAX];
	if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 9e18 &&
	    v->valuedouble == (double)(int64_t)v->valuedouble) {
		tps_format_bytes_exact((int64_t)v->valuedouble, buf);
		fputs(buf, out);
	} else {
		fputc('?', out);
	}
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
 * and last max_values / 2 in row-major order around "...". Returns
 * whether it elided: the caller states the rule once for its block
 * (elision_note). A summary trace's keys stand in for absent values.
 */
#define EXPLAIN_MAX_KEEP 512

/* How many values at each end an elision keeps. */
static size_t elision_keep(size_t max_values)
{
	size_t keep = max_values / 2 ? max_values / 2 : 1;
	return keep > EXPLAIN_MAX_KEEP ? EXPLAIN_MAX_KEEP : keep;
}

static bool print_values(FILE *out, const cJSON *holder, size_t max_values,
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
			return false;
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
		return false;
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
		return false;
	}
	keep = elision_keep(max_values);
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
	fprintf(out, "]%s", tick);
	return true;
}

/* The rule of the elisions of one block (an event's ranks, the global
 * tensors, the result), said once: "whose" is what each line holds. */
static void elision_note(FILE *out, bool md, const char *indent,
			 size_t max_values, const char *whose)
{
	char ends[64];
	size_t keep = elision_keep(max_values);
	if (keep == 1) {
		snprintf(ends, sizeof ends, "the first and last value");
	} else {
		snprintf(ends, sizeof ends, "the first and last %zu values",
			 keep);
	}
	fprintf(out,
		md ? "%sElided: %s of each %s, in row-major order "
		     "(`--max-values 0` prints all).\n"
		   : "%s(elided: %s of each %s, in row-major order; "
		     "--max-values 0 prints all)\n",
		indent, ends, whose);
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

/*
 * The placements each tensor had last, by name, so that a layout change or
 * a collective can show its placement before as well as after. Borrowed
 * from the trace's events.
 */
struct placements_seen {
	const char **names;
	const cJSON **placements;
	size_t n, cap;
	/* Each step starts again from what setup left (the parameters as
	 * distributed; the batch is split anew from the global input):
	 * setup's n and placements, and the step of the events seen. */
	const cJSON **at_setup;
	size_t n_setup;
	int step;
};

/* A redistribution's (layout or collective event's) placements before it,
 * or NULL (a compute, or the tensor's first event); then records ev's. */
static const cJSON *placements_before(struct placements_seen *seen,
				      const cJSON *ev)
{
	const char *name = str_of(ev, "tensor");
	const cJSON *now = cJSON_GetObjectItemCaseSensitive(ev, "placements");
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(ev, "step");
	const cJSON *before = NULL;
	size_t i = 0;
	if (cJSON_IsNumber(s) && s->valueint != seen->step) {
		if (seen->step < 0) {
			seen->n_setup = seen->n;
			memcpy(seen->at_setup, seen->placements,
			       seen->n * sizeof *seen->placements);
		} else {
			seen->n = seen->n_setup;
			memcpy(seen->placements, seen->at_setup,
			       seen->n * sizeof *seen->placements);
		}
		seen->step = s->valueint;
	}
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
	bool elided = false;
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
		print_size(out, bytes);
		fputs("/rank", out);
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
		elided |= print_values(out, r, max_values, false);
		fputc('\n', out);
	}
	if (elided) {
		elision_note(out, false, "        ", max_values, "rank");
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

static void md_or_text(FILE *out, bool md, const char *s)
{
	if (md) {
		md_text(out, s);
	} else {
		fputs(s, out);
	}
}

/* "## ": a Markdown heading of that level (1 to 6). */
static void md_heading(FILE *out, int level)
{
	for (int i = 0; i < level; i++) {
		fputc('#', out);
	}
	fputc(' ', out);
}

static void md_event(FILE *out, const cJSON *ev, const cJSON *before,
		     size_t max_values, int level)
{
	char equation[256];
	bool elided = false;
	const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(ev, "ranks");
	const cJSON *bytes =
		cJSON_GetObjectItemCaseSensitive(ev, "bytes_per_rank");
	const cJSON *r;
	const char *kind = str_of(ev, "kind");

	md_heading(out, level + 2);
	fputc('[', out);
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
		print_size(out, bytes);
		fputs(" per rank", out);
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
		elided |= print_values(out, r, max_values, true);
		fputs(" |\n", out);
	}
	if (elided) {
		elision_note(out, true, "\n", max_values, "rank");
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
	int heading;   /* --heading-level: the title's Markdown level */
	bool md;       /* --format md */
	bool color;    /* text on a terminal, NO_COLOR unset */
	bool pictures; /* --pictures: each event's sharding picture */
};

static bool explain_filtered(const struct explain_filter *f)
{
	return f->step >= 0 || f->module || f->phase;
}

/* Whether the filters pass something of this step (-1: none, a setup),
 * module and phase; any_step: it belongs to every step (the input). */
static bool explain_passes(const struct explain_filter *f, long step,
			   bool any_step, const char *module, const char *phase)
{
	if (f->step >= 0 && !any_step && step != f->step) {
		return false;
	}
	if (f->module && strcmp(f->module, module) != 0) {
		return false;
	}
	return !f->phase || strcmp(f->phase, phase) == 0;
}

static bool explain_wants(const struct explain_filter *f, const cJSON *ev)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(ev, "step");
	long step =
		cJSON_IsNumber(s) && s->valuedouble >= 0 &&
				s->valuedouble < 1e15 &&
				s->valuedouble == (double)(long)s->valuedouble
			? (long)s->valuedouble
			: -1;
	return explain_passes(f, step, false, str_of(ev, "module"),
			      str_of(ev, "phase"));
}

/* The widths over the events the filters pass. */
static struct columns columns_of(const cJSON *events,
				 const struct explain_filter *f)
{
	struct columns c = {0, 8, 11};
	const cJSON *ev;
	cJSON_ArrayForEach(ev, events)
	{
		char label[32];
		if (!explain_wants(f, ev)) {
			continue;
		}
		int q = seq_label(ev, label, sizeof label);
		int m = (int)strlen(str_of(ev, "module"));
		c.seq = q > c.seq ? q : c.seq;
		int o = (int)strlen(str_of(ev, "op"));
		c.module = m > c.module ? (m < 64 ? m : 64) : c.module;
		c.op = o > c.op ? (o < 64 ? o : 64) : c.op;
	}
	return c;
}

/* ---- the global tensors ----------------------------------------------- */

static void global_row(FILE *out, bool md, const char *name, const cJSON *t,
		       size_t max_values, bool *elided)
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
	*elided |= print_values(out, t, max_values, md);
	fputs(md ? " |\n" : "\n", out);
}

/* The module a parameter belongs to: its setup event's, else the name
 * up to its last dot ("fc1.weight": "fc1"), into buf. */
static const char *param_module(const cJSON *events, const char *name,
				char *buf, size_t size)
{
	const cJSON *ev;
	const char *dot = strrchr(name, '.');
	cJSON_ArrayForEach(ev, events)
	{
		if (strcmp(str_of(ev, "phase"), "setup") != 0) {
			break; /* setup events come first */
		}
		if (strcmp(str_of(ev, "tensor"), name) == 0) {
			return str_of(ev, "module");
		}
	}
	snprintf(buf, size, "%.*s", dot ? (int)(dot - name) : (int)strlen(name),
		 name);
	return buf;
}

/*
 * The run's global tensors, which the events show only as shards: the
 * input (and target), and every parameter's initial value with its
 * placements. The filters pass them as they pass events: a parameter's
 * initial value is its module's setup; the input is module input's, and
 * the target module loss's, in the forward phase of every step. Nothing
 * is printed when none passes.
 */
static void explain_globals(FILE *out, const cJSON *trace,
			    const struct explain_filter *f)
{
	const cJSON *events = cJSON_GetObjectItemCaseSensitive(trace, "events");
	const cJSON *t;
	bool md = f->md, elided = false;
	int shown = 0;
	for (int pass = 0; pass < 2; pass++) {
		bool params = pass == 1;
		cJSON_ArrayForEach(t,
				   cJSON_GetObjectItemCaseSensitive(
					   trace, params ? "params" : "inputs"))
		{
			char buf[256];
			const char *module =
				params ? param_module(events, t->string, buf,
						      sizeof buf)
				: strcmp(t->string, "target") == 0 ? "loss"
								   : "input";
			if (!explain_passes(f, -1, !params, module,
					    params ? "setup" : "forward")) {
				continue;
			}
			if (shown++ == 0 && md) {
				md_heading(out, f->heading + 1);
				fputs("Global tensors\n\n| tensor | shape | "
				      "placements | values |\n|---|---|---|---"
				      "|\n",
				      out);
			} else if (shown == 1) {
				fputs("global tensors:\n", out);
			}
			global_row(out, md, t->string, t, f->max_values,
				   &elided);
		}
	}
	if (shown && elided) {
		elision_note(out, md, md ? "\n" : "  ", f->max_values,
			     "tensor");
	}
	if (shown && md) {
		fputc('\n', out);
	}
}

/* ---- the communication footer ------------------------------------------ */

/* Adds one collective to the tally obj[key] ({"count", "bytes_per_rank"},
 * as the trace's comm section has them). */
static bool tally_add(cJSON *obj, const char *key, double bytes)
{
	cJSON *entry = cJSON_GetObjectItemCaseSensitive(obj, key);
	cJSON *count, *sum;
	if (!entry) {
		entry = cJSON_AddObjectToObject(obj, key);
		if (!entry || !cJSON_AddNumberToObject(entry, "count", 0) ||
		    !cJSON_AddNumberToObject(entry, "bytes_per_rank", 0)) {
			return false;
		}
	}
	count = cJSON_GetObjectItemCaseSensitive(entry, "count");
	sum = cJSON_GetObjectItemCaseSensitive(entry, "bytes_per_rank");
	cJSON_SetNumberValue(count, count->valuedouble + 1);
	cJSON_SetNumberValue(sum, sum->valuedouble + bytes);
	return true;
}

/*
 * The collectives of the events the filters pass, in the form of the
 * trace's comm section (collectives, bytes_per_rank, by_op, by_module):
 * without filters, the whole run's. NULL when out of memory.
 */
static cJSON *comm_of_shown(const cJSON *trace, const struct explain_filter *f)
{
	cJSON *comm = cJSON_CreateObject();
	cJSON *by_op = comm ? cJSON_AddObjectToObject(comm, "by_op") : NULL;
	cJSON *by_module =
		by_op ? cJSON_AddObjectToObject(comm, "by_module") : NULL;
	const cJSON *ev;
	double count = 0, bytes = 0;
	bool ok = by_module != NULL;
	cJSON_ArrayForEach(ev,
			   cJSON_GetObjectItemCaseSensitive(trace, "events"))
	{
		const cJSON *b =
			cJSON_GetObjectItemCaseSensitive(ev, "bytes_per_rank");
		double n = cJSON_IsNumber(b) ? b->valuedouble : 0;
		if (!ok) {
			break;
		}
		if (strcmp(str_of(ev, "kind"), "collective") != 0 ||
		    !explain_wants(f, ev)) {
			continue;
		}
		count++;
		bytes += n;
		ok = tally_add(by_op, str_of(ev, "op"), n) &&
		     tally_add(by_module, str_of(ev, "module"), n);
	}
	if (!ok || !cJSON_AddNumberToObject(comm, "collectives", count) ||
	    !cJSON_AddNumberToObject(comm, "bytes_per_rank", bytes)) {
		cJSON_Delete(comm);
		return NULL;
	}
	return comm;
}

/* Which module's collectives cost what: one line (a table row) per
 * module, the names aligned. */
static void explain_by_module(FILE *out, const cJSON *comm, bool md)
{
	const cJSON *m;
	const cJSON *by = cJSON_GetObjectItemCaseSensitive(comm, "by_module");
	int width = 0, count_width = 0;
	if (!by || !by->child) {
		return;
	}
	cJSON_ArrayForEach(m, by)
	{
		char n[32];
		int w = (int)strlen(m->string);
		int c = snprintf(n, sizeof n, "%.0f",
				 cJSON_GetObjectItemCaseSensitive(m, "count")
					 ->valuedouble);
		width = w > width ? (w < 64 ? w : 64) : width;
		count_width = c > count_width ? c : count_width;
	}
	fputs(md ? "\n| module | collectives | bytes per rank |\n"
		   "|---|---:|---:|\n"
		 : "  by module:\n",
	      out);
	cJSON_ArrayForEach(m, by)
	{
		const cJSON *count =
			cJSON_GetObjectItemCaseSensitive(m, "count");
		const cJSON *bytes =
			cJSON_GetObjectItemCaseSensitive(m, "bytes_per_rank");
		if (md) {
			fputs("| ", out);
			md_text(out, m->string);
			fputs(" | ", out);
			print_number(out, count);
			fputs(" | ", out);
			print_size(out, bytes);
			fputs(" |\n", out);
		} else {
			fprintf(out, "    %-*s  x%-*.0f  ", width, m->string,
				count_width, count->valuedouble);
			print_size(out, bytes);
			fputs("/rank\n", out);
		}
	}
}

/* The communication of the events shown (of the whole run, unfiltered):
 * the total, by op, and by module. */
static void explain_comm(FILE *out, const cJSON *comm, bool md, bool filtered)
{
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(comm, "collectives");
	const cJSON *b =
		cJSON_GetObjectItemCaseSensitive(comm, "bytes_per_rank");
	const cJSON *op;
	fputs(md ? "Communication" : "comm", out);
	fputs(filtered ? " of the events shown: " : ": ", out);
	print_number(out, n);
	fprintf(out, " collective%s, ",
		cJSON_IsNumber(n) && n->valuedouble == 1 ? "" : "s");
	print_size(out, b);
	fputs(" per rank", out);
	cJSON_ArrayForEach(op, cJSON_GetObjectItemCaseSensitive(comm, "by_op"))
	{
		fputs("; ", out);
		md_or_text(out, md, op->string);
		fputs(" x", out);
		print_number(out,
			     cJSON_GetObjectItemCaseSensitive(op, "count"));
	}
	fputc('\n', out);
	explain_by_module(out, comm, md);
}

/* ---- options --------------------------------------------------------- */

/* A whole number in [lo, hi] for an explain option. */
static bool parse_count(const char *text, long lo, long hi, long *out)
{
	char *end;
	long n;
	errno = 0;
	n = strtol(text, &end, 10);
	if (errno || end == text || *end != '\0' || n < lo || n > hi) {
		return false;
	}
	*out = n;
	return true;
}

static int explain_options(int argc, char **argv, struct explain_filter *f,
			   const char **path, FILE *err)
{
	bool heading_given = false;
	for (int i = 2; i < argc; i++) {
		const char *opt = argv[i];
		const char *arg = i + 1 < argc ? argv[i + 1] : NULL;
		long n;
		if (strcmp(opt, "--step") == 0 ||
		    strcmp(opt, "--max-values") == 0) {
			if (!arg || !parse_count(arg, 0, 1000000000L, &n)) {
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
		} else if (strcmp(opt, "--heading-level") == 0) {
			/* Events are two levels below the title: at most
			 * Markdown's 6. */
			if (!arg || !parse_count(arg, 1, 4, &n)) {
				return tps_cli_usage_error(
					err,
					"explain: --heading-level expects 1, "
					"2, 3 or 4 (the title's Markdown "
					"level), got '%s'",
					arg ? arg : "");
			}
			f->heading = (int)n;
			heading_given = true;
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
	if (heading_given && !f->md) {
		/* Text output has no headings: say so rather than ignore
		 * the option. */
		return tps_cli_usage_error(err,
					   "explain: --heading-level applies to "
					   "--format md%s",
					   "");
	}
	return TPS_EXIT_OK;
}

/* ---- --module NAME that names no module --------------------------------- */

/* Levenshtein distance of a and b, capped at 255 (names are at most 128
 * bytes; one row of the table at a time). */
static int edit_distance(const char *a, const char *b)
{
	int row[257];
	int la = (int)strlen(a), lb = (int)strlen(b);
	if (la > 255 || lb > 255) {
		return 255;
	}
	for (int j = 0; j <= lb; j++) {
		row[j] = j;
	}
	for (int i = 1; i <= la; i++) {
		int diag = row[0];
		row[0] = i;
		for (int j = 1; j <= lb; j++) {
			int up = row[j];
			int best = diag + (a[i - 1] != b[j - 1]);
			best = up + 1 < best ? up + 1 : best;
			best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

/* How far a module name is from what was asked: names that contain it
 * first (a leaf name, "fc1" for "layers.0.mlp.fc1"), then by edit
 * distance. */
#define EXPLAIN_FAR 1000 /* added for names that do not contain it */
static int closeness(const char *asked, const char *name)
{
	return (strstr(name, asked) ? 0 : EXPLAIN_FAR) +
	       edit_distance(asked, name);
}

static bool contains(int closeness_score)
{
	return closeness_score < EXPLAIN_FAR;
}

#define EXPLAIN_CLOSEST 3

/*
 * Whether --module names a module of the trace's events. If not, a usage
 * error naming the closest names, before anything is printed: at most
 * EXPLAIN_CLOSEST of the names that contain what was asked, nearest
 * first, or else of those at the least edit distance; in trace order
 * among equals; and how many more of that kind there are.
 */
static int check_module(const cJSON *trace, const char *path, const char *asked,
			FILE *err)
{
	const cJSON *events = cJSON_GetObjectItemCaseSensitive(trace, "events");
	const cJSON *ev;
	const char **names =
		calloc((size_t)cJSON_GetArraySize(events) + 1, sizeof *names);
	int *score =
		calloc((size_t)cJSON_GetArraySize(events) + 1, sizeof *score);
	int n = 0, pick[EXPLAIN_CLOSEST], n_pick = 0, more = 0;
	char esc[256];
	int rc = TPS_EXIT_TROUBLE;

	if (!names || !score) {
		struct tps_error e = {0};
		tps_error_set(&e, TPS_ERR_NOMEM, "out of memory");
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	/* The distinct names, in trace order, each with its closeness. */
	cJSON_ArrayForEach(ev, events)
	{
		const char *name = str_of(ev, "module");
		bool seen = false;
		if (strcmp(name, asked) == 0) {
			rc = TPS_EXIT_OK;
			goto out;
		}
		for (int i = n - 1; i >= 0 && !seen; i--) {
			seen = strcmp(names[i], name) == 0;
		}
		if (!seen) {
			names[n] = name;
			score[n++] = closeness(asked, name);
		}
	}
	/* The closest, first seen first among equals. */
	for (int k = 0; k < EXPLAIN_CLOSEST && k < n; k++) {
		int best = -1;
		for (int i = 0; i < n; i++) {
			bool taken = false;
			for (int j = 0; j < n_pick; j++) {
				taken = taken || pick[j] == i;
			}
			if (!taken && (best < 0 || score[i] < score[best])) {
				best = i;
			}
		}
		/* Names that contain what was asked, or else the names as
		 * close as the closest. */
		if (n_pick > 0 &&
		    (contains(score[pick[0]]) ? !contains(score[best])
					      : score[best] > score[pick[0]])) {
			break;
		}
		pick[n_pick++] = best;
	}
	/* How many more there are of the same kind. */
	for (int i = 0; i < n && n_pick > 0; i++) {
		more += contains(score[pick[0]]) ? contains(score[i])
						 : score[i] == score[pick[0]];
	}
	more -= n_pick;
	/* A usage error, printed whole here: every name in it escaped. */
	fprintf(err, "tpsim: explain: --module '%s' names no module of ",
		tps_json_escape_for_message(asked, esc, sizeof esc));
	fprintf(err, "%s", tps_json_escape_for_message(path, esc, sizeof esc));
	for (int j = 0; j < n_pick; j++) {
		fprintf(err, "%s'%s'", j == 0 ? "; the closest: " : ", ",
			tps_json_escape_for_message(names[pick[j]], esc,
						    sizeof esc));
	}
	if (more > 0) {
		fprintf(err, " (and %d more %s)", more,
			contains(score[pick[0]]) ? "that contain it"
						 : "as close");
	}
	fputs("\nTry 'tpsim --help'.\n", err);
out:
	free(names);
	free(score);
	return rc;
}

/* ---- the result -------------------------------------------------------- */

/* One figure of result.symbolic: bytes, and the ranks when they differ. */
static void symbolic_figure(FILE *out, const cJSON *symbolic, const char *key,
			    const char *what, bool md)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(symbolic, key);
	const cJSON *min = cJSON_GetObjectItemCaseSensitive(f, "min_bytes");
	fprintf(out, md ? "- %s: " : "  %s ", what);
	print_size_exact(out, cJSON_GetObjectItemCaseSensitive(f, "bytes"));
	if (min) {
		fputs(" on rank ", out);
		print_number(out, cJSON_GetObjectItemCaseSensitive(f, "rank"));
		fputs(" (rank ", out);
		print_number(out,
			     cJSON_GetObjectItemCaseSensitive(f, "min_rank"));
		fputs(": ", out);
		print_size_exact(out, min);
		fputc(')', out);
	}
	fputc('\n', out);
}

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
		tps_trace_describe_comparison(exact, all, how, sizeof how);
		fprintf(out, ", %s", how);
	}
}

/* The result of a symbolic run: the output's shape, what each rank holds
 * and sends; no values, no reference. */
static void explain_symbolic(FILE *out, const cJSON *result,
			     const struct explain_filter *f)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(result, "symbolic");
	const cJSON *comm =
		cJSON_GetObjectItemCaseSensitive(s, "comm_bytes_per_rank");
	const cJSON *phase;
	bool md = f->md;
	if (md) {
		md_heading(out, f->heading + 1);
	}
	fputs(md ? "Result\n\nSymbolic: no values, no reference. Output "
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
	fputs(md ? "- collectives per rank:" : "  collectives per rank", out);
	cJSON_ArrayForEach(phase, comm)
	{
		fputs(phase == comm->child ? " " : ", ", out);
		md_or_text(out, md, phase->string);
		fputc(' ', out);
		print_size_exact(out, phase);
	}
	fputs(md ? "\n\n" : "\n", out);
}

/* The result of a run with values: the output against the reference,
 * the diagnosis of an injected mistake, the losses. */
static void explain_result(FILE *out, const cJSON *result,
			   const struct explain_filter *f)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(result, "output");
	const cJSON *d =
		cJSON_GetObjectItemCaseSensitive(result, "max_abs_diff");
	bool match =
		cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result, "match"));
	const cJSON *ref;
	const cJSON *stopped =
		cJSON_GetObjectItemCaseSensitive(result, "stopped");
	bool md = f->md, elided = false;
	if (md) {
		md_heading(out, f->heading + 1);
	}
	if (cJSON_IsString(stopped)) {
		/* An injected mistake broke the shapes: no output. */
		fputs(md ? "Result\n\nThe simulation **stopped** at a shape "
			   "error: "
			 : "result: the simulation STOPPED at a shape error: ",
		      out);
		md_or_text(out, md, stopped->valuestring);
		fputs(md ? "\n\n" : "\n", out);
	} else {
		/* Training compares more than the output: say so, since the
		 * output alone may agree. */
		bool training = cJSON_GetObjectItemCaseSensitive(
					result, "loss") != NULL;
		const char *what = " the single-device reference";
		fputs(md ? "Result\n\nOutput " : "result: output ", out);
		print_shape(out, cJSON_GetObjectItemCaseSensitive(o, "shape"));
		elided |= print_values(out, o, f->max_values, md);
		fputs(training ? "; over output, loss, gradients and "
				 "parameters, the run"
			       : "",
		      out);
		if (md) {
			fprintf(out, " %s%s",
				match ? "**matches**" : "**differs from**",
				what);
		} else {
			fprintf(out, " %s%s%s%s",
				f->color ? (match ? GREEN : RED) : "",
				match ? "matches" : "DIFFERS from",
				f->color ? PLAIN : "", what);
		}
		fputs(md ? " (`max_abs_diff` " : " (max_abs_diff ", out);
		if (!d) {
			fputs("none: the shapes differ", out);
		} else {
			print_number(out, d);
			print_comparison(out, cJSON_GetObjectItemCaseSensitive(
						      result, "comparison"));
		}
		fputs(md ? ").\n\n" : ")\n", out);
	}
	if (cJSON_IsString(
		    cJSON_GetObjectItemCaseSensitive(result, "diagnosis"))) {
		fputs(md ? "**Diagnosis:** " : "  diagnosis: ", out);
		md_or_text(out, md, str_of(result, "diagnosis"));
		fputs(md ? "\n\n" : "\n", out);
	}
	ref = cJSON_GetObjectItemCaseSensitive(result, "reference_output");
	if (ref) {
		fputs(md ? "Reference output " : "  reference ", out);
		print_shape(out,
			    cJSON_GetObjectItemCaseSensitive(ref, "shape"));
		elided |= print_values(out, ref, f->max_values, md);
		fputs(md ? ".\n\n" : "\n", out);
	}
	if (elided) {
		elision_note(out, md, md ? "" : "  ", f->max_values, "tensor");
		fputs(md ? "\n" : "", out);
	}
	explain_training(out, result);
	if (md && cJSON_GetObjectItemCaseSensitive(result, "loss")) {
		fputc('\n', out);
	}
}

/* Explains a read trace (path names it) with the filter: the verb after
 * its options and its reading; tps_explain_write's bridge too. */
static int explain_trace(FILE *out, const cJSON *trace, const char *path,
			 struct explain_filter filter, FILE *err)
{
	cJSON *comm = NULL;
	const cJSON *ev, *result, *mesh;
	struct tps_error e = {0};
	const char *phase = NULL;
	int step = -2, shown = 0, index = -1, rc;
	struct columns cols;
	struct placements_seen seen = {.step = -1};

	if (filter.module && (rc = check_module(trace, path, filter.module,
						err)) != TPS_EXIT_OK) {
		return rc;
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
			return rc;
		}
	}
	index = -1;
	/* At most one tensor name per event. */
	seen.cap = (size_t)cJSON_GetArraySize(
		cJSON_GetObjectItemCaseSensitive(trace, "events"));
	seen.names = calloc(seen.cap + 1, sizeof *seen.names);
	seen.placements = calloc(seen.cap + 1, sizeof *seen.placements);
	seen.at_setup = calloc(seen.cap + 1, sizeof *seen.at_setup);
	comm = cJSON_GetObjectItemCaseSensitive(trace, "comm")
		       ? comm_of_shown(trace, &filter)
		       : NULL;
	if (!seen.names || !seen.placements || !seen.at_setup ||
	    (!comm && cJSON_GetObjectItemCaseSensitive(trace, "comm"))) {
		free(seen.names);
		free(seen.placements);
		free(seen.at_setup);
		cJSON_Delete(comm);
		tps_error_set(&e, TPS_ERR_NOMEM, "out of memory");
		return tps_cli_trouble(err, &e);
	}
	mesh = cJSON_GetObjectItemCaseSensitive(trace, "mesh");
	if (filter.md) {
		md_heading(out, filter.heading);
		fputs("A ", out);
	}
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
	explain_globals(out, trace, &filter);
	cols = columns_of(cJSON_GetObjectItemCaseSensitive(trace, "events"),
			  &filter);
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
			if (filter.md) {
				md_heading(out, filter.heading + 1);
			}
			fputs(filter.color ? BOLD : "", out);
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
			md_event(out, ev, before, filter.max_values,
				 filter.heading);
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
		explain_symbolic(out, result, &filter);
	} else if (result) {
		explain_result(out, result, &filter);
	}
	if (comm) {
		explain_comm(out, comm, filter.md, explain_filtered(&filter));
	}
	free(seen.names);
	free(seen.placements);
	free(seen.at_setup);
	cJSON_Delete(comm);
	return TPS_EXIT_OK;
}

int tps_cli_explain(int argc, char **argv, FILE *out, FILE *err)
{
	cJSON *trace = NULL;
	struct tps_error e = {0};
	const char *path = NULL;
	struct explain_filter filter = {-1, NULL,  NULL,  16,
					1,  false, false, false};
	int rc = explain_options(argc, argv, &filter, &path, err);

	if (rc != TPS_EXIT_OK) {
		return rc;
	}
	filter.color = !filter.md && want_color(out);
	if (tps_trace_read(path, &trace, NULL, NULL, &e) != TPS_OK) {
		return tps_cli_trouble(err, &e);
	}
	rc = explain_trace(out, trace, path, filter, err);
	cJSON_Delete(trace);
	return rc;
}

/* TEMPORARY (issue 16): the public API's explain (explain_bridge.h), the
 * verb on a read trace, its trouble turned from the line it prints into an
 * error. */
enum tps_status tps_explain_write(FILE *out, const cJSON *trace,
				  const char *trace_name,
				  const struct tps_explain_options *opts,
				  struct tps_error *err)
{
	struct explain_filter filter = {
		opts->step,	  opts->module, opts->phase,
		opts->max_values, opts->heading, opts->md,
		opts->color && !opts->md, opts->pictures};
	char *text = NULL;
	size_t len = 0;
	FILE *trouble = open_memstream(&text, &len);
	int rc;

	if (!trouble) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	rc = explain_trace(out, trace, trace_name, filter, trouble);
	if (fclose(trouble) != 0 || !text) {
		free(text);
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	if (rc != TPS_EXIT_OK) {
		const char *line = strncmp(text, "tpsim: ", 7) == 0 ? text + 7
								  : text;
		size_t n = strcspn(line, "\n");
		enum tps_status st =
			strstr(text, "out of memory") ? TPS_ERR_NOMEM
						      : TPS_ERR_INPUT;
		tps_error_set(err, st, "%.*s", (int)n, line);
		free(text);
		return st;
	}
	free(text);
	return TPS_OK;
}
