/*
 * explain (explain.h): a trace, step by step, for people. Each part of the
 * explanation (the title, a warning, a global tensor, a phase's heading,
 * an event, the result, the communication) is gathered once into a view,
 * and one of two formatters writes it: text_format or md_format. Nothing
 * here decides between the formats but the choice of the formatter.
 */
#include "explain.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "nn_event.h"
#include "numfmt.h"
#include "picture.h"
#include "spec.h"
#include "trace.h"

/* ---- reading the trace ------------------------------------------------ */

static const cJSON *get(const cJSON *obj, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static const char *str_of(const cJSON *obj, const char *key)
{
	const cJSON *v = get(obj, key);
	return cJSON_IsString(v) ? v->valuestring : "?";
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

/* The most values an elision keeps at each end. */
#define EXPLAIN_MAX_KEEP 512

/* How many values at each end an elision keeps. */
static size_t elision_keep(size_t max_values)
{
	size_t keep = max_values / 2 ? max_values / 2 : 1;
	return keep > EXPLAIN_MAX_KEEP ? EXPLAIN_MAX_KEEP : keep;
}

/* ---- views ------------------------------------------------------------ */

/*
 * One tensor's values as explain shows them, never dropped without saying
 * so: up to max_values numbers (0: no limit) as the trace's nested arrays;
 * more as the first and last `keep` in row-major order around "..." (the
 * block they belong to states the rule once); a summary trace's keys
 * stand in for absent values.
 */
enum values_kind {
	VALUES_NONE,	/* neither values nor a hash: nothing shown */
	VALUES_SUMMARY, /* min, max, mean (absent when empty) and hash */
	VALUES_ALL,
	VALUES_ELIDED,
};

struct values_view {
	enum values_kind kind;
	const cJSON *values;	       /* ALL, ELIDED */
	const cJSON *min, *max, *mean; /* SUMMARY; min NULL: empty tensor */
	const char *hash;	       /* SUMMARY */
	size_t keep;		       /* ELIDED: values kept at each end */
};

static struct values_view values_of(const cJSON *holder, size_t max_values)
{
	struct values_view v = {VALUES_NONE, NULL, NULL, NULL, NULL, NULL, 0};
	const cJSON *values = get(holder, "values");
	size_t n;
	if (!values) {
		const cJSON *hash = get(holder, "hash");
		if (cJSON_IsString(hash)) {
			v.kind = VALUES_SUMMARY;
			v.hash = hash->valuestring;
			v.min = get(holder, "min");
			v.max = get(holder, "max");
			v.mean = get(holder, "mean");
		}
		return v;
	}
	v.values = values;
	n = flatten(values, NULL, 0, 0);
	if (max_values == 0 || n <= max_values) {
		v.kind = VALUES_ALL;
	} else {
		v.kind = VALUES_ELIDED;
		v.keep = elision_keep(max_values);
	}
	return v;
}

/* A trace's text as columns of its own: a module's and an op's name, each
 * at least 8 and 11 wide, more for longer names (at most 64), and the
 * widest "[seq]", so that every event line of the text aligns. */
struct columns {
	int seq, module, op;
};

/* What one event shows: what made it, its placements before (a layout
 * change's or a collective's, when the tensor was seen before in the
 * step) and after, its shape, the groups and bytes of a collective, each
 * rank's shape and values, the equation of a collective or split, and
 * its note. */
struct explain_rank_row {
	const cJSON *rank, *shape;
	struct values_view values;
};

struct explain_event_view {
	const cJSON *seq;
	const char *module, *op, *tensor;
	bool collective;
	const cJSON *before; /* NULL: none shown */
	const cJSON *placements, *global_shape;
	const char *mesh_dim; /* NULL: no groups shown (a compute event) */
	const cJSON *groups;
	const cJSON *bytes; /* bytes_per_rank; NULL: none */
	bool symbolic;	    /* no ranks listed: a symbolic trace */
	struct explain_rank_row *rows;
	int n_rows;
	bool elided;	      /* some row's values are */
	const char *equation; /* NULL: none */
	const char *note;     /* NULL: none */
	char equation_text[256];
};

/* The title: who wrote the trace, of which mesh. */
struct title_view {
	const char *generator;
	const cJSON *mesh_shape;
	const char *dim_names; /* as JSON ("?" when out of memory) */
};

/* A global tensor: an input, or a parameter's initial value. */
struct global_row_view {
	const char *name;
	const cJSON *shape, *placements; /* placements NULL: an input */
	struct values_view values;
};

/* One figure of a symbolic result: bytes, and the ranks when they
 * differ. */
struct symbolic_figure_view {
	const char *what;
	bool hide_zero; /* left out when 0 (the master copy, kept or not) */
	const cJSON *bytes, *min_bytes, *rank, *min_rank;
};

#define SYMBOLIC_FIGURES 9

struct symbolic_view {
	const cJSON *output_shape;
	/* {"params": 4, ...}: the bytes an element of each role (NULL in a
	 * trace from before dtypes counted, whose figures are float32). */
	const cJSON *bytes_per_element;
	struct symbolic_figure_view figures[SYMBOLIC_FIGURES];
	const cJSON *comm_by_phase; /* {"forward": bytes, ...} */
};

/* The result of a run with values. */
struct result_view {
	const char *stopped; /* NULL: the run finished */
	const cJSON *output_shape;
	struct values_view output;
	bool training, match;
	const cJSON *max_abs_diff; /* NULL: the shapes differ */
	char comparison[96];	   /* "": the trace has none */
	/* The comparison in words (result.verdict, since tpsim 0.4), or
	 * NULL: then max_abs_diff and comparison say it. */
	const char *verdict;
	const char *diagnosis;	   /* NULL: none */
	const cJSON *reference_shape;
	struct values_view reference;
	bool has_reference;
	bool elided;
	const cJSON *loss, *reference_loss, *grads;
};

/* The communication of the events shown. */
struct comm_view {
	const cJSON *comm; /* collectives, bytes_per_rank, by_op, by_module */
	bool filtered;
};

/* What every formatter is given. */
struct explainer {
	FILE *out;
	const struct tps_explain_options *o;
	struct columns cols;
	bool color; /* text, and the caller wants colour */
};

/* ---- writing what both formats write alike ---------------------------- */

/* A trace number as the trace writes it: integers whole (1048576, never
 * 1.04858e+06), others as their shortest decimal; "?" if absent. */
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

/* A JSON array of numbers or strings between open and close,
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

/* Whether v is a whole number of bytes numfmt can say. */
static bool is_byte_count(const cJSON *v)
{
	return cJSON_IsNumber(v) && v->valuedouble >= 0 &&
	       v->valuedouble < 9e18 &&
	       v->valuedouble == (double)(int64_t)v->valuedouble;
}

/* A byte count of the trace for people (numfmt.h: "16 bytes", "2.25
 * MiB"); "?" unless a whole number. */
static void print_size(FILE *out, const cJSON *v)
{
	char buf[TPS_NUMFMT_MAX];
	if (is_byte_count(v)) {
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
	if (is_byte_count(v)) {
		tps_format_bytes_exact((int64_t)v->valuedouble, buf);
		fputs(buf, out);
	} else {
		fputc('?', out);
	}
}

/* Values, after a space; `tick` around them (Markdown's code span, or
 * nothing). */
static void print_values(FILE *out, const struct values_view *v,
			 const char *tick)
{
	const cJSON *head[EXPLAIN_MAX_KEEP], *tail[EXPLAIN_MAX_KEEP];
	size_t seen = 0;
	char *text;
	switch (v->kind) {
	case VALUES_NONE: break;
	case VALUES_SUMMARY:
		if (v->min) {
			fputs(" min ", out);
			print_number(out, v->min);
			fputs(", max ", out);
			print_number(out, v->max);
			fputs(", mean ", out);
			print_number(out, v->mean);
			fputc(',', out);
		}
		fprintf(out, " hash %s%s%s", tick, v->hash, tick);
		break;
	case VALUES_ALL:
		text = cJSON_PrintUnformatted(v->values);
		if (text) {
			fprintf(out, " %s%s%s", tick, text, tick);
		} else {
			fputs(" (values: out of memory to print)", out);
		}
		free(text);
		break;
	case VALUES_ELIDED:
		flatten(v->values, head, v->keep, 0);
		last_numbers(v->values, tail, v->keep, &seen);
		fprintf(out, " %s[", tick);
		for (size_t i = 0; i < v->keep; i++) {
			print_number(out, head[i]);
			fputc(',', out);
		}
		fputs("...", out);
		for (size_t i = 0; i < v->keep; i++) {
			fputc(',', out);
			print_number(out, tail[(seen + i) % v->keep]);
		}
		fprintf(out, "]%s", tick);
		break;
	}
}

/* "the first and last 8 values": what an elision keeps, for its note. */
static void elision_ends(size_t max_values, char *buf, size_t size)
{
	size_t keep = elision_keep(max_values);
	if (keep == 1) {
		snprintf(buf, size, "the first and last value");
	} else {
		snprintf(buf, size, "the first and last %zu values", keep);
	}
}

/* Text from a config or a trace (module names, notes) as a format writes
 * it: as it is (plain_text), or as Markdown that shows it literally
 * (md_text: every character GitHub or MkDocs could read as markup is
 * escaped). */
typedef void (*write_text_fn)(FILE *out, const char *s);

static void plain_text(FILE *out, const char *s)
{
	fputs(s, out);
}

static void md_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (strchr("\\`*_{}[]<>#|~", *s)) {
			fputc('\\', out);
		}
		fputc(*s, out);
	}
}

/* A symbolic figure's bytes, and the ranks when they differ: "1.5 KiB
 * (1536 bytes) on rank 0 (rank 3: 1 KiB (1024 bytes))". */
static void print_figure(FILE *out, const struct symbolic_figure_view *f)
{
	print_size_exact(out, f->bytes);
	if (f->min_bytes) {
		fputs(" on rank ", out);
		print_number(out, f->rank);
		fputs(" (rank ", out);
		print_number(out, f->min_rank);
		fputs(": ", out);
		print_size_exact(out, f->min_bytes);
		fputc(')', out);
	}
}

/* A symbolic run's collective bytes per rank by phase: " forward 16
 * bytes, backward 32 bytes". */
static void print_phase_bytes(FILE *out, const cJSON *by_phase,
			      write_text_fn text)
{
	const cJSON *phase;
	cJSON_ArrayForEach(phase, by_phase)
	{
		fputs(phase == by_phase->child ? " " : ", ", out);
		text(out, phase->string);
		fputc(' ', out);
		print_size_exact(out, phase);
	}
}

/* The result's max_abs_diff and how the tensors were compared, or that
 * the shapes differ. */
static void print_difference(FILE *out, const struct result_view *v)
{
	if (!v->max_abs_diff) {
		fputs("none: the shapes differ", out);
		return;
	}
	print_number(out, v->max_abs_diff);
	if (v->comparison[0]) {
		fprintf(out, ", %s", v->comparison);
	}
}

/* The collectives shown and their bytes, in all and by op: "3
 * collectives, 48 bytes per rank; all_reduce x2; all_gather x1". */
static void print_comm_total(FILE *out, const cJSON *comm, write_text_fn text)
{
	const cJSON *n = get(comm, "collectives");
	const cJSON *op;
	print_number(out, n);
	fprintf(out, " collective%s, ",
		cJSON_IsNumber(n) && n->valuedouble == 1 ? "" : "s");
	print_size(out, get(comm, "bytes_per_rank"));
	fputs(" per rank", out);
	cJSON_ArrayForEach(op, get(comm, "by_op"))
	{
		fputs("; ", out);
		text(out, op->string);
		fputs(" x", out);
		print_number(out, get(op, "count"));
	}
}

/* The training part of a result, the same in both formats: the loss at
 * each step, both ways, and what else was compared. */
static void print_training(FILE *out, const struct result_view *v)
{
	if (!cJSON_IsArray(v->loss)) {
		return;
	}
	fputs("loss by step: ", out);
	print_list(out, v->loss, '[', ']');
	fputs(", reference ", out);
	print_list(out, v->reference_loss, '[', ']');
	fputc('\n', out);
	fprintf(out,
		"compared too: the last step's gradients of %d tensor%s and "
		"the parameters after it (result.grads, result.params_after)\n",
		cJSON_GetArraySize(v->grads),
		cJSON_GetArraySize(v->grads) == 1 ? "" : "s");
}

/* ---- text ------------------------------------------------------------- */

/* Colour, only where the caller asks for it (explain.h): headings bold,
 * collectives yellow, the verdict green or red. The codes take no
 * columns, so the text aligns as without them. */
#define BOLD   "\033[1m"
#define YELLOW "\033[33m"
#define GREEN  "\033[32m"
#define RED    "\033[31m"
#define PLAIN  "\033[0m"

/* "[n]" of an event's seq; "[?]" without one. */
static int seq_label(const cJSON *seq, char *buf, size_t size)
{
	if (cJSON_IsNumber(seq) && seq->valuedouble >= 0 &&
	    seq->valuedouble < 1e15) {
		return snprintf(buf, size, "[%.0f]", seq->valuedouble);
	}
	return snprintf(buf, size, "[?]");
}

static void text_elision_note(const struct explainer *x, const char *indent,
			      const char *whose)
{
	char ends[64];
	elision_ends(x->o->max_values, ends, sizeof ends);
	fprintf(x->out,
		"%s(elided: %s of each %s, in row-major order; "
		"--max-values 0 prints all)\n",
		indent, ends, whose);
}

static void text_title(const struct explainer *x, const struct title_view *v)
{
	fputs(v->generator, x->out);
	fputs(" trace of a mesh ", x->out);
	print_shape(x->out, v->mesh_shape);
	fprintf(x->out, " named %s\n", v->dim_names);
}

static void text_warning(const struct explainer *x, const char *text)
{
	fprintf(x->out, "warning: %s\n", text);
}

static void text_globals_begin(const struct explainer *x)
{
	fputs("global tensors:\n", x->out);
}

static void text_global_row(const struct explainer *x,
			    const struct global_row_view *v)
{
	fprintf(x->out, "  %s ", v->name);
	print_shape(x->out, v->shape);
	if (v->placements) {
		fputc(' ', x->out);
		print_list(x->out, v->placements, '[', ']');
	}
	print_values(x->out, &v->values, "");
	fputc('\n', x->out);
}

static void text_globals_end(const struct explainer *x, bool elided)
{
	if (elided) {
		text_elision_note(x, "  ", "tensor");
	}
}

static void text_heading(const struct explainer *x, const char *phase, int step)
{
	fprintf(x->out, "%s%s", x->color ? BOLD : "", phase);
	if (step >= 0) {
		fprintf(x->out, ", step %d", step);
	}
	fprintf(x->out, ":%s\n", x->color ? PLAIN : "");
}

/* A collective's groups: all of them when short, else the first and how
 * many. */
static void text_groups(FILE *out, const cJSON *groups)
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

static void text_event(const struct explainer *x,
		       const struct explain_event_view *v)
{
	FILE *out = x->out;
	bool color = x->color && v->collective;
	char label[32];

	seq_label(v->seq, label, sizeof label);
	fprintf(out, "  %-*s %-*s %s%-*s%s %s: ", x->cols.seq, label,
		x->cols.module, v->module, color ? YELLOW : "", x->cols.op,
		v->op, color ? PLAIN : "", v->tensor);
	if (v->before) {
		print_list(out, v->before, '[', ']');
		fputs(" -> ", out);
	}
	print_list(out, v->placements, '[', ']');
	fputs(" global ", out);
	print_shape(out, v->global_shape);
	if (v->mesh_dim) {
		fprintf(out, ", over %s groups", v->mesh_dim);
		text_groups(out, v->groups);
	}
	if (v->bytes) {
		fputs(", ", out);
		print_size(out, v->bytes);
		fputs("/rank", out);
	}
	fputc('\n', out);
	if (v->symbolic) {
		fputs("        every rank: the block its placements give "
		      "(symbolic: no values; --pictures draws them)\n",
		      out);
	}
	for (int i = 0; i < v->n_rows; i++) {
		fputs("        rank ", out);
		print_number(out, v->rows[i].rank);
		fputs(": ", out);
		print_shape(out, v->rows[i].shape);
		print_values(out, &v->rows[i].values, "");
		fputc('\n', out);
	}
	if (v->elided) {
		text_elision_note(x, "        ", "rank");
	}
	if (v->equation) {
		fprintf(out, "        %s\n", v->equation);
	}
	if (v->note) {
		fprintf(out, "        (%s)\n", v->note);
	}
}

static void text_picture(const struct explainer *x,
			 const struct tps_picture *pic)
{
	tps_picture_write_text(x->out, pic, false);
}

static void text_none_shown(const struct explainer *x)
{
	fputs("(no event matches --step, --module and --phase)\n", x->out);
}

/* A figure a trace from before it lacks, or that only some runs write
 * (gathered_param_bytes: ZeRO stage 3), or a master copy of 0 bytes
 * (none is kept when it is the params dtype). */
static bool skip_figure(const struct symbolic_figure_view *f)
{
	return !f->bytes || (f->hide_zero && cJSON_IsNumber(f->bytes) &&
			     f->bytes->valuedouble == 0.0);
}

/* What the figures count an element as: "float32" when every role is,
 * else "bytes an element: params 2, master_params 4, ...". */
static void print_element_bytes(FILE *out, const struct symbolic_view *v,
				write_text_fn text)
{
	const cJSON *e;
	bool f32 = true, first = true;
	cJSON_ArrayForEach(e, v->bytes_per_element)
	{
		f32 = f32 && cJSON_IsNumber(e) && e->valuedouble == 4.0;
	}
	if (f32) {
		fputs("float32", out);
		return;
	}
	fputs("bytes an element: ", out);
	cJSON_ArrayForEach(e, v->bytes_per_element)
	{
		fputs(first ? "" : ", ", out);
		first = false;
		text(out, e->string);
		fputc(' ', out);
		print_number(out, e);
	}
}

static void text_symbolic(const struct explainer *x,
			  const struct symbolic_view *v)
{
	FILE *out = x->out;
	fputs("result: symbolic: no values, no reference; output ", out);
	print_shape(out, v->output_shape);
	fputs("; per rank (", out);
	print_element_bytes(out, v, plain_text);
	fputs("), the largest over ranks:\n", out);
	for (int i = 0; i < SYMBOLIC_FIGURES; i++) {
		if (skip_figure(&v->figures[i])) {
			continue;
		}
		fprintf(out, "  %s ", v->figures[i].what);
		print_figure(out, &v->figures[i]);
		fputc('\n', out);
	}
	fputs("  collectives per rank", out);
	print_phase_bytes(out, v->comm_by_phase, plain_text);
	fputc('\n', out);
}

static void text_result(const struct explainer *x, const struct result_view *v)
{
	FILE *out = x->out;
	if (v->stopped) {
		/* An injected mistake broke the shapes: no output. */
		fprintf(out,
			"result: the simulation STOPPED at a shape error: "
			"%s\n",
			v->stopped);
	} else {
		fputs("result: output ", out);
		print_shape(out, v->output_shape);
		print_values(out, &v->output, "");
		/* Training compares more than the output: say so, since
		 * the output alone may agree. */
		fputs(v->training ? "; over output, loss, gradients and "
				    "parameters, the run"
				  : "",
		      out);
		if (v->verdict) {
			fprintf(out, "%s %s%s%s", v->training ? "" : ";",
				x->color ? (v->match ? GREEN : RED) : "",
				v->verdict, x->color ? PLAIN : "");
			fputs(v->match ? "\n"
				       : " (no match with the single-device "
					 "reference)\n",
			      out);
		} else {
			fprintf(out, " %s%s%s the single-device reference",
				x->color ? (v->match ? GREEN : RED) : "",
				v->match ? "matches" : "DIFFERS from",
				x->color ? PLAIN : "");
			fputs(" (max_abs_diff ", out);
			print_difference(out, v);
			fputs(")\n", out);
		}
	}
	if (v->diagnosis) {
		fprintf(out, "  diagnosis: %s\n", v->diagnosis);
	}
	if (v->has_reference) {
		fputs("  reference ", out);
		print_shape(out, v->reference_shape);
		print_values(out, &v->reference, "");
		fputc('\n', out);
	}
	if (v->elided) {
		text_elision_note(x, "  ", "tensor");
	}
	print_training(out, v);
}

static void text_comm(const struct explainer *x, const struct comm_view *v)
{
	FILE *out = x->out;
	const cJSON *by = get(v->comm, "by_module");
	const cJSON *m;
	int width = 0, count_width = 0;

	fprintf(out, "comm%s", v->filtered ? " of the events shown: " : ": ");
	print_comm_total(out, v->comm, plain_text);
	fputc('\n', out);
	if (!by || !by->child) {
		return;
	}
	/* One line per module, the names and counts aligned. */
	cJSON_ArrayForEach(m, by)
	{
		char count[32];
		int w = (int)strlen(m->string);
		int c = snprintf(count, sizeof count, "%.0f",
				 get(m, "count")->valuedouble);
		width = w > width ? (w < 64 ? w : 64) : width;
		count_width = c > count_width ? c : count_width;
	}
	fputs("  by module:\n", out);
	cJSON_ArrayForEach(m, by)
	{
		fprintf(out, "    %-*s  x%-*.0f  ", width, m->string,
			count_width, get(m, "count")->valuedouble);
		print_size(out, get(m, "bytes_per_rank"));
		fputs("/rank\n", out);
	}
}

/* ---- Markdown --------------------------------------------------------- */

/* "## ": a heading `below` levels under the title's (1 to 6 in all). */
static void md_heading(const struct explainer *x, int below)
{
	for (int i = 0; i < x->o->heading_level + below; i++) {
		fputc('#', x->out);
	}
	fputc(' ', x->out);
}

static void md_elision_note(const struct explainer *x, const char *before,
			    const char *whose)
{
	char ends[64];
	elision_ends(x->o->max_values, ends, sizeof ends);
	fprintf(x->out,
		"%sElided: %s of each %s, in row-major order "
		"(`--max-values 0` prints all).\n",
		before, ends, whose);
}

static void md_title(const struct explainer *x, const struct title_view *v)
{
	md_heading(x, 0);
	fputs("A ", x->out);
	md_text(x->out, v->generator);
	fputs(" trace of a mesh ", x->out);
	print_shape(x->out, v->mesh_shape);
	fprintf(x->out, " named `%s`\n\n", v->dim_names);
}

static void md_warning(const struct explainer *x, const char *text)
{
	fputs("> **Warning:** ", x->out);
	md_text(x->out, text);
	fputs("\n\n", x->out);
}

static void md_globals_begin(const struct explainer *x)
{
	md_heading(x, 1);
	fputs("Global tensors\n\n| tensor | shape | placements | values |\n"
	      "|---|---|---|---|\n",
	      x->out);
}

static void md_global_row(const struct explainer *x,
			  const struct global_row_view *v)
{
	fputs("| ", x->out);
	md_text(x->out, v->name);
	fputs(" | ", x->out);
	print_shape(x->out, v->shape);
	fputs(" | ", x->out);
	if (v->placements) {
		fputc('`', x->out);
		print_list(x->out, v->placements, '[', ']');
		fputc('`', x->out);
	}
	fputs(" |", x->out);
	print_values(x->out, &v->values, "`");
	fputs(" |\n", x->out);
}

static void md_globals_end(const struct explainer *x, bool elided)
{
	if (elided) {
		md_elision_note(x, "\n", "tensor");
	}
	fputc('\n', x->out);
}

static void md_heading_of(const struct explainer *x, const char *phase,
			  int step)
{
	md_heading(x, 1);
	md_text(x->out, phase);
	if (step >= 0) {
		fprintf(x->out, ", step %d", step);
	}
	fputs("\n\n", x->out);
}

static void md_event(const struct explainer *x,
		     const struct explain_event_view *v)
{
	FILE *out = x->out;

	md_heading(x, 2);
	fputc('[', out);
	print_number(out, v->seq);
	fputs("] ", out);
	md_text(out, v->module);
	fputs(": ", out);
	md_text(out, v->op);
	fputs(" -> ", out);
	md_text(out, v->tensor);
	fputs("\n\nPlacements `", out);
	if (v->before) {
		print_list(out, v->before, '[', ']');
		fputs("` -> `", out);
	}
	print_list(out, v->placements, '[', ']');
	fputs("`, global shape ", out);
	print_shape(out, v->global_shape);
	if (v->mesh_dim) {
		char *groups = cJSON_PrintUnformatted(v->groups);
		fputs(", over the ", out);
		md_text(out, v->mesh_dim);
		fprintf(out, " groups `%s`", groups ? groups : "?");
		free(groups);
	}
	if (v->bytes) {
		fputs(", ", out);
		print_size(out, v->bytes);
		fputs(" per rank", out);
	}
	fputs(v->symbolic ? ". Every rank holds the block its placements "
			    "give (a symbolic trace lists no ranks; "
			    "`--pictures` draws them).\n"
			  : ".\n\n| rank | shape | values |\n|---:|---|---|\n",
	      out);
	for (int i = 0; i < v->n_rows; i++) {
		fputs("| ", out);
		print_number(out, v->rows[i].rank);
		fputs(" | ", out);
		print_shape(out, v->rows[i].shape);
		fputs(" |", out);
		print_values(out, &v->rows[i].values, "`");
		fputs(" |\n", out);
	}
	if (v->elided) {
		md_elision_note(x, "\n", "rank");
	}
	if (v->equation) {
		fprintf(out, "\n`%s`\n", v->equation);
	}
	if (v->note) {
		fputs("\n", out);
		md_text(out, v->note);
		fputs("\n", out);
	}
	fputs("\n", out);
}

static void md_picture(const struct explainer *x, const struct tps_picture *pic)
{
	tps_picture_write_text(x->out, pic, true);
}

static void md_none_shown(const struct explainer *x)
{
	fputs("*No event matches --step, --module and --phase.*\n\n", x->out);
}

static void md_symbolic(const struct explainer *x,
			const struct symbolic_view *v)
{
	FILE *out = x->out;
	md_heading(x, 1);
	fputs("Result\n\nSymbolic: no values, no reference. Output ", out);
	print_shape(out, v->output_shape);
	fputs(". Per rank (", out);
	print_element_bytes(out, v, md_text);
	fputs("), the largest over ranks:\n\n", out);
	for (int i = 0; i < SYMBOLIC_FIGURES; i++) {
		if (skip_figure(&v->figures[i])) {
			continue;
		}
		fprintf(out, "- %s: ", v->figures[i].what);
		print_figure(out, &v->figures[i]);
		fputc('\n', out);
	}
	fputs("- collectives per rank:", out);
	print_phase_bytes(out, v->comm_by_phase, md_text);
	fputs("\n\n", out);
}

static void md_result(const struct explainer *x, const struct result_view *v)
{
	FILE *out = x->out;
	md_heading(x, 1);
	if (v->stopped) {
		fputs("Result\n\nThe simulation **stopped** at a shape error: ",
		      out);
		md_text(out, v->stopped);
		fputs("\n\n", out);
	} else {
		fputs("Result\n\nOutput ", out);
		print_shape(out, v->output_shape);
		print_values(out, &v->output, "`");
		fputs(v->training ? "; over output, loss, gradients and "
				    "parameters, the run"
				  : "",
		      out);
		if (v->verdict) {
			fputs(v->training ? " **" : "; **", out);
			md_text(out, v->verdict);
			fputs(v->match ? "**.\n\n"
				       : "** (no match with the single-device "
					 "reference).\n\n",
			      out);
		} else {
			fprintf(out, " %s the single-device reference",
				v->match ? "**matches**" : "**differs from**");
			fputs(" (`max_abs_diff` ", out);
			print_difference(out, v);
			fputs(").\n\n", out);
		}
	}
	if (v->diagnosis) {
		fputs("**Diagnosis:** ", out);
		md_text(out, v->diagnosis);
		fputs("\n\n", out);
	}
	if (v->has_reference) {
		fputs("Reference output ", out);
		print_shape(out, v->reference_shape);
		print_values(out, &v->reference, "`");
		fputs(".\n\n", out);
	}
	if (v->elided) {
		md_elision_note(x, "", "tensor");
		fputc('\n', out);
	}
	print_training(out, v);
	if (v->loss) {
		fputc('\n', out);
	}
}

static void md_comm(const struct explainer *x, const struct comm_view *v)
{
	FILE *out = x->out;
	const cJSON *by = get(v->comm, "by_module");
	const cJSON *m;

	fprintf(out, "Communication%s",
		v->filtered ? " of the events shown: " : ": ");
	print_comm_total(out, v->comm, md_text);
	fputc('\n', out);
	if (!by || !by->child) {
		return;
	}
	fputs("\n| module | collectives | bytes per rank |\n"
	      "|---|---:|---:|\n",
	      out);
	cJSON_ArrayForEach(m, by)
	{
		fputs("| ", out);
		md_text(out, m->string);
		fputs(" | ", out);
		print_number(out, get(m, "count"));
		fputs(" | ", out);
		print_size(out, get(m, "bytes_per_rank"));
		fputs(" |\n", out);
	}
}

/* ---- the two formats ---------------------------------------------------- */

struct explain_format {
	void (*title)(const struct explainer *x, const struct title_view *v);
	void (*warning)(const struct explainer *x, const char *text);
	void (*globals_begin)(const struct explainer *x);
	void (*global_row)(const struct explainer *x,
			   const struct global_row_view *v);
	void (*globals_end)(const struct explainer *x, bool elided);
	void (*heading)(const struct explainer *x, const char *phase, int step);
	void (*event)(const struct explainer *x,
		      const struct explain_event_view *v);
	void (*picture)(const struct explainer *x,
			const struct tps_picture *pic);
	void (*none_shown)(const struct explainer *x);
	void (*symbolic)(const struct explainer *x,
			 const struct symbolic_view *v);
	void (*result)(const struct explainer *x, const struct result_view *v);
	void (*comm)(const struct explainer *x, const struct comm_view *v);
};

static const struct explain_format text_format = {
	text_title,	  text_warning,	 text_globals_begin, text_global_row,
	text_globals_end, text_heading,	 text_event,	     text_picture,
	text_none_shown,  text_symbolic, text_result,	     text_comm,
};

static const struct explain_format md_format = {
	md_title,	md_warning,    md_globals_begin, md_global_row,
	md_globals_end, md_heading_of, md_event,	 md_picture,
	md_none_shown,	md_symbolic,   md_result,	 md_comm,
};

/* ---- which events are shown ------------------------------------------- */

static bool filtered(const struct tps_explain_options *o)
{
	return o->step >= 0 || o->module || o->phase;
}

/* Whether the filters pass something of this step (-1: none, a setup),
 * module and phase; any_step: it belongs to every step (the input). */
static bool passes(const struct tps_explain_options *o, long step,
		   bool any_step, const char *module, const char *phase)
{
	if (o->step >= 0 && !any_step && step != o->step) {
		return false;
	}
	if (o->module && strcmp(o->module, module) != 0) {
		return false;
	}
	return !o->phase || strcmp(o->phase, phase) == 0;
}

static bool wants(const struct tps_explain_options *o, const cJSON *ev)
{
	const cJSON *s = get(ev, "step");
	long step =
		cJSON_IsNumber(s) && s->valuedouble >= 0 &&
				s->valuedouble < 1e15 &&
				s->valuedouble == (double)(long)s->valuedouble
			? (long)s->valuedouble
			: -1;
	return passes(o, step, false, str_of(ev, "module"),
		      str_of(ev, "phase"));
}

/* The text's column widths over the events the filters pass. */
static struct columns columns_of(const cJSON *events,
				 const struct tps_explain_options *o)
{
	struct columns c = {0, 8, 11};
	const cJSON *ev;
	cJSON_ArrayForEach(ev, events)
	{
		char label[32];
		int q, m, op;
		if (!wants(o, ev)) {
			continue;
		}
		q = seq_label(get(ev, "seq"), label, sizeof label);
		m = (int)strlen(str_of(ev, "module"));
		op = (int)strlen(str_of(ev, "op"));
		c.seq = q > c.seq ? q : c.seq;
		c.module = m > c.module ? (m < 64 ? m : 64) : c.module;
		c.op = op > c.op ? (op < 64 ? op : 64) : c.op;
	}
	return c;
}

/* ---- gathering the views ------------------------------------------------ */

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
	const cJSON *now = get(ev, "placements");
	const cJSON *s = get(ev, "step");
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

/* ev's view; rows has room for every rank ev lists. */
static void event_view_of(struct explain_event_view *v, const cJSON *ev,
			  const cJSON *before, size_t max_values,
			  struct explain_rank_row *rows)
{
	const cJSON *ranks = get(ev, "ranks");
	const cJSON *bytes = get(ev, "bytes_per_rank");
	const cJSON *note = get(ev, "note");
	const cJSON *r;
	bool compute = strcmp(str_of(ev, "kind"), "compute") == 0;

	v->seq = get(ev, "seq");
	v->module = str_of(ev, "module");
	v->op = str_of(ev, "op");
	v->tensor = str_of(ev, "tensor");
	v->collective = strcmp(str_of(ev, "kind"), "collective") == 0;
	v->before = before;
	v->placements = get(ev, "placements");
	v->global_shape = get(ev, "global_shape");
	v->mesh_dim =
		!compute && get(ev, "mesh_dim") ? str_of(ev, "mesh_dim") : NULL;
	v->groups = get(ev, "groups");
	v->bytes = cJSON_IsNumber(bytes) ? bytes : NULL;
	v->symbolic = ranks == NULL;
	v->rows = rows;
	v->n_rows = 0;
	v->elided = false;
	cJSON_ArrayForEach(r, ranks)
	{
		struct explain_rank_row *row = &rows[v->n_rows++];
		row->rank = get(r, "rank");
		row->shape = get(r, "shape");
		row->values = values_of(r, max_values);
		v->elided |= row->values.kind == VALUES_ELIDED;
	}
	v->equation = op_equation(v->op, v->tensor, v->equation_text,
				  sizeof v->equation_text);
	v->note = cJSON_IsString(note) ? note->valuestring : NULL;
}

/* The most ranks any event lists. */
static int most_ranks(const cJSON *events)
{
	const cJSON *ev;
	int most = 0;
	cJSON_ArrayForEach(ev, events)
	{
		int n = 0;
		const cJSON *r;
		cJSON_ArrayForEach(r, get(ev, "ranks"))
		{
			n++;
		}
		most = n > most ? n : most;
	}
	return most;
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
 * is written when none passes.
 */
static void explain_globals(const struct explainer *x,
			    const struct explain_format *f, const cJSON *trace)
{
	const cJSON *events = get(trace, "events");
	const cJSON *t;
	bool elided = false;
	int shown = 0;
	for (int pass = 0; pass < 2; pass++) {
		bool params = pass == 1;
		cJSON_ArrayForEach(t, get(trace, params ? "params" : "inputs"))
		{
			char buf[256];
			struct global_row_view row;
			const char *module =
				params ? param_module(events, t->string, buf,
						      sizeof buf)
				: strcmp(t->string, "target") == 0 ? "loss"
								   : "input";
			if (!passes(x->o, -1, !params, module,
				    params ? "setup" : "forward")) {
				continue;
			}
			if (shown++ == 0) {
				f->globals_begin(x);
			}
			row.name = t->string;
			row.shape = get(t, "shape");
			row.placements = get(t, "placements");
			row.values = values_of(t, x->o->max_values);
			elided |= row.values.kind == VALUES_ELIDED;
			f->global_row(x, &row);
		}
	}
	if (shown) {
		f->globals_end(x, elided);
	}
}

/* Counts the "exact" leaves of a result's "comparison", those "exact" or
 * "bound", and all of its leaves. */
static void count_comparison(const cJSON *c, int *exact, int *bounded,
			     int *all)
{
	const cJSON *e;
	if (cJSON_IsString(c)) {
		*exact += strcmp(c->valuestring, "exact") == 0;
		*bounded += strcmp(c->valuestring, "exact") == 0 ||
			    strcmp(c->valuestring, "bound") == 0;
		*all += 1;
		return;
	}
	cJSON_ArrayForEach(e, c)
	{
		count_comparison(e, exact, bounded, all);
	}
}

static void symbolic_view_of(struct symbolic_view *v, const cJSON *result)
{
	static const struct {
		const char *key, *what;
		bool hide_zero;
	} keys[SYMBOLIC_FIGURES] = {
		{"param_bytes", "parameters", false},
		{"gathered_param_bytes",
		 "parameters gathered at once (FSDP, besides the shards)",
		 false},
		{"grad_bytes", "gradients", false},
		{"optimizer_state_bytes", "optimizer state", false},
		{"master_param_bytes", "of which the master copy", true},
		{"saved_activation_bytes", "activations saved for backward",
		 false},
		{"output_bytes", "model output", false},
		{"peak_activation_bytes", "activations at peak", false},
		{"total_bytes", "in all", false},
	};
	const cJSON *s = get(result, "symbolic");
	v->output_shape = get(get(result, "output"), "shape");
	v->bytes_per_element = cJSON_IsObject(get(s, "bytes_per_element"))
				       ? get(s, "bytes_per_element")
				       : NULL;
	for (int i = 0; i < SYMBOLIC_FIGURES; i++) {
		const cJSON *f = get(s, keys[i].key);
		v->figures[i].what = keys[i].what;
		v->figures[i].hide_zero = keys[i].hide_zero;
		v->figures[i].bytes = get(f, "bytes");
		v->figures[i].min_bytes = get(f, "min_bytes");
		v->figures[i].rank = get(f, "rank");
		v->figures[i].min_rank = get(f, "min_rank");
	}
	v->comm_by_phase = get(s, "comm_bytes_per_rank");
}

static void result_view_of(struct result_view *v, const cJSON *result,
			   size_t max_values)
{
	const cJSON *stopped = get(result, "stopped");
	const cJSON *diagnosis = get(result, "diagnosis");
	const cJSON *o = get(result, "output");
	const cJSON *ref = get(result, "reference_output");

	memset(v, 0, sizeof *v);
	v->stopped = cJSON_IsString(stopped) ? stopped->valuestring : NULL;
	if (!v->stopped) {
		v->output_shape = get(o, "shape");
		v->output = values_of(o, max_values);
		v->elided = v->output.kind == VALUES_ELIDED;
		v->training = get(result, "loss") != NULL;
		v->match = cJSON_IsTrue(get(result, "match"));
		v->max_abs_diff = get(result, "max_abs_diff");
		if (v->max_abs_diff) {
			int exact = 0, bounded = 0, all = 0;
			count_comparison(get(result, "comparison"), &exact,
					 &bounded, &all);
			if (all > 0) {
				tps_trace_describe_comparison(
					exact, bounded, all, v->comparison,
					sizeof v->comparison);
			}
		}
		if (cJSON_IsString(get(result, "verdict"))) {
			v->verdict = get(result, "verdict")->valuestring;
		}
	}
	v->diagnosis =
		cJSON_IsString(diagnosis) ? diagnosis->valuestring : NULL;
	if (ref) {
		v->has_reference = true;
		v->reference_shape = get(ref, "shape");
		v->reference = values_of(ref, max_values);
		v->elided |= v->reference.kind == VALUES_ELIDED;
	}
	v->loss = get(result, "loss");
	v->reference_loss = get(result, "reference_loss");
	v->grads = get(result, "grads");
}

/* ---- the communication of the events shown ------------------------------ */

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
static cJSON *comm_of_shown(const cJSON *trace,
			    const struct tps_explain_options *o)
{
	cJSON *comm = cJSON_CreateObject();
	cJSON *by_op = comm ? cJSON_AddObjectToObject(comm, "by_op") : NULL;
	cJSON *by_module =
		by_op ? cJSON_AddObjectToObject(comm, "by_module") : NULL;
	const cJSON *ev;
	double count = 0, bytes = 0;
	bool ok = by_module != NULL;
	cJSON_ArrayForEach(ev, get(trace, "events"))
	{
		const cJSON *b = get(ev, "bytes_per_rank");
		double n = cJSON_IsNumber(b) ? b->valuedouble : 0;
		if (!ok) {
			break;
		}
		if (strcmp(str_of(ev, "kind"), "collective") != 0 ||
		    !wants(o, ev)) {
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

/* ---- a module that names none of the trace's ---------------------------- */

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
 * Whether `asked` names a module of the trace's events. If not,
 * TPS_ERR_USAGE naming the closest names: at most EXPLAIN_CLOSEST of the
 * names that contain what was asked, nearest first, or else of those at
 * the least edit distance; in trace order among equals; and how many more
 * of that kind there are.
 */
static enum tps_status check_module(const cJSON *trace, const char *name,
				    const char *asked, struct tps_error *err)
{
	const cJSON *events = get(trace, "events");
	const cJSON *ev;
	const char **names =
		calloc((size_t)cJSON_GetArraySize(events) + 1, sizeof *names);
	int *score =
		calloc((size_t)cJSON_GetArraySize(events) + 1, sizeof *score);
	int n = 0, pick[EXPLAIN_CLOSEST], n_pick = 0, more = 0;
	char esc[256], *message = NULL;
	size_t len = 0;
	FILE *mem = NULL;
	enum tps_status st = TPS_ERR_USAGE;

	if (!names || !score) {
		st = tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
		goto out;
	}
	/* The distinct names, in trace order, each with its closeness. */
	cJSON_ArrayForEach(ev, events)
	{
		const char *module = str_of(ev, "module");
		bool seen = false;
		if (strcmp(module, asked) == 0) {
			st = TPS_OK;
			goto out;
		}
		for (int i = n - 1; i >= 0 && !seen; i--) {
			seen = strcmp(names[i], module) == 0;
		}
		if (!seen) {
			names[n] = module;
			score[n++] = closeness(asked, module);
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
	/* Every name in the message escaped. */
	mem = open_memstream(&message, &len);
	if (!mem) {
		st = tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
		goto out;
	}
	fprintf(mem, "--module '%s' names no module of ",
		tps_json_escape_for_message(asked, esc, sizeof esc));
	fputs(tps_json_escape_for_message(name, esc, sizeof esc), mem);
	for (int j = 0; j < n_pick; j++) {
		fprintf(mem, "%s'%s'", j == 0 ? "; the closest: " : ", ",
			tps_json_escape_for_message(names[pick[j]], esc,
						    sizeof esc));
	}
	if (more > 0) {
		fprintf(mem, " (and %d more %s)", more,
			contains(score[pick[0]]) ? "that contain it"
						 : "as close");
	}
	if (fclose(mem) != 0) {
		st = tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	} else {
		tps_error_set(err, TPS_ERR_USAGE, "%s", message);
	}
out:
	free(message);
	free(names);
	free(score);
	return st;
}

/* Options a caller other than the CLI (which checks them first) could
 * get wrong. */
static enum tps_status check_options(const struct tps_explain_options *o,
				     struct tps_error *err)
{
	if (o->format != TPS_EXPLAIN_TEXT &&
	    o->format != TPS_EXPLAIN_MARKDOWN) {
		return tps_error_set(err, TPS_ERR_USAGE,
				     "explain: format %d is neither text nor "
				     "Markdown",
				     (int)o->format);
	}
	if (o->step < -1) {
		return tps_error_set(err, TPS_ERR_USAGE,
				     "explain: step %ld: expected a step "
				     "number (0, 1, ...) or -1 for every step",
				     o->step);
	}
	if (o->phase && tps_name_index(tps_phase_names, o->phase) < 0) {
		char esc[64];
		return tps_error_set(
			err, TPS_ERR_USAGE,
			"explain: phase '%s': expected setup, forward, "
			"backward or optimizer",
			tps_json_escape_for_message(o->phase, esc, sizeof esc));
	}
	if (o->format == TPS_EXPLAIN_MARKDOWN &&
	    (o->heading_level < 1 || o->heading_level > 4)) {
		/* Events are two levels below the title: at most
		 * Markdown's 6. */
		return tps_error_set(err, TPS_ERR_USAGE,
				     "explain: heading level %d: expected 1, "
				     "2, 3 or 4",
				     o->heading_level);
	}
	return TPS_OK;
}

/* ---- the explanation ------------------------------------------------------
 */

/* Every picture the events shown would have, made once to see that it
 * can be: a trace that cannot be drawn is an error, not half an
 * explanation. */
static enum tps_status check_pictures(const cJSON *trace, const char *name,
				      const struct tps_explain_options *o,
				      struct tps_error *err)
{
	const cJSON *ev;
	int index = -1;
	enum tps_status st = TPS_OK;
	cJSON_ArrayForEach(ev, get(trace, "events"))
	{
		struct tps_picture pic = {0};
		index++;
		if (!wants(o, ev)) {
			continue;
		}
		st = tps_picture_from_event(&pic, trace, name, index, err);
		tps_picture_free(&pic);
		if (st != TPS_OK) {
			break;
		}
	}
	return st;
}

/* The events, under a heading at each new phase or step, each with its
 * picture when asked for. */
static enum tps_status explain_events(const struct explainer *x,
				      const struct explain_format *f,
				      const cJSON *trace, const char *name,
				      struct placements_seen *seen,
				      struct explain_rank_row *rows,
				      struct tps_error *err)
{
	const cJSON *ev;
	const char *phase = NULL;
	int step = -2, shown = 0, index = -1;
	enum tps_status st = TPS_OK;
	cJSON_ArrayForEach(ev, get(trace, "events"))
	{
		const cJSON *s = get(ev, "step");
		int this_step = cJSON_IsNumber(s) ? s->valueint : -1;
		const char *this_phase = str_of(ev, "phase");
		const cJSON *before = placements_before(seen, ev);
		struct explain_event_view view;
		index++;
		if (!wants(x->o, ev)) {
			continue;
		}
		shown++;
		if (!phase || strcmp(phase, this_phase) != 0 ||
		    this_step != step) {
			f->heading(x, this_phase, this_step);
			phase = this_phase;
			step = this_step;
		}
		event_view_of(&view, ev, before, x->o->max_values, rows);
		f->event(x, &view);
		if (x->o->pictures) {
			struct tps_picture pic = {0};
			st = tps_picture_from_event(&pic, trace, name, index,
						    err);
			if (st == TPS_OK) {
				f->picture(x, &pic);
			}
			tps_picture_free(&pic);
			if (st != TPS_OK) {
				return st;
			}
		}
	}
	if (shown == 0) {
		f->none_shown(x);
	}
	return st;
}

enum tps_status tps_explain(FILE *out, const cJSON *trace,
			    const char *trace_name,
			    const struct tps_explain_options *opts,
			    struct tps_error *err)
{
	const struct explain_format *f = opts->format == TPS_EXPLAIN_MARKDOWN
						 ? &md_format
						 : &text_format;
	const cJSON *events = get(trace, "events");
	const cJSON *result = get(trace, "result");
	const cJSON *mesh = get(trace, "mesh");
	const cJSON *w;
	const char *name = trace_name ? trace_name : "trace";
	struct placements_seen seen = {.step = -1};
	struct explainer x = {out, opts, {0, 8, 11}, false};
	struct explain_rank_row *rows = NULL;
	struct title_view title;
	cJSON *comm = NULL;
	char *dim_names = NULL;
	enum tps_status st = check_options(opts, err);

	if (st == TPS_OK && opts->module) {
		st = check_module(trace, name, opts->module, err);
	}
	if (st == TPS_OK && opts->pictures) {
		st = check_pictures(trace, name, opts, err);
	}
	if (st != TPS_OK) {
		return st;
	}
	/* At most one tensor name per event. */
	seen.cap = (size_t)cJSON_GetArraySize(events);
	seen.names = calloc(seen.cap + 1, sizeof *seen.names);
	seen.placements = calloc(seen.cap + 1, sizeof *seen.placements);
	seen.at_setup = calloc(seen.cap + 1, sizeof *seen.at_setup);
	rows = calloc((size_t)most_ranks(events) + 1, sizeof *rows);
	comm = get(trace, "comm") ? comm_of_shown(trace, opts) : NULL;
	if (!seen.names || !seen.placements || !seen.at_setup || !rows ||
	    (!comm && get(trace, "comm"))) {
		st = tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
		goto out;
	}
	x.cols = columns_of(events, opts);
	x.color = opts->color && opts->format == TPS_EXPLAIN_TEXT;

	dim_names = cJSON_PrintUnformatted(get(mesh, "dim_names"));
	title.generator = str_of(trace, "generator");
	title.mesh_shape = get(mesh, "shape");
	title.dim_names = dim_names ? dim_names : "?";
	f->title(&x, &title);
	cJSON_ArrayForEach(w, get(trace, "warnings"))
	{
		f->warning(&x, cJSON_IsString(w) ? w->valuestring : "?");
	}
	explain_globals(&x, f, trace);
	st = explain_events(&x, f, trace, name, &seen, rows, err);
	if (st != TPS_OK) {
		goto out;
	}
	if (get(result, "symbolic")) {
		struct symbolic_view v;
		symbolic_view_of(&v, result);
		f->symbolic(&x, &v);
	} else if (result) {
		struct result_view v;
		result_view_of(&v, result, opts->max_values);
		f->result(&x, &v);
	}
	if (comm) {
		struct comm_view v = {comm, filtered(opts)};
		f->comm(&x, &v);
	}
	if (ferror(out)) {
		char esc[256];
		st = tps_error_set(
			err, TPS_ERR_IO,
			"explain: writing the explanation of %s failed",
			tps_json_escape_for_message(name, esc, sizeof esc));
	}
out:
	free(dim_names);
	free(rows);
	free(seen.names);
	free(seen.placements);
	free(seen.at_setup);
	cJSON_Delete(comm);
	return st;
}
