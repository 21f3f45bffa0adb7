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

/* Prints v compactly when short enough to read in a line, else nothing. */
static void print_short_json(FILE *out, const cJSON *v, size_t limit)
{
	char *text = v ? cJSON_PrintUnformatted(v) : NULL;
	if (text && strlen(text) <= limit) {
		fprintf(out, " %s", text);
	}
	free(text);
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

static void print_values(FILE *out, const cJSON *holder, size_t max_values)
{
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
		fprintf(out, " hash %s", hash->valuestring);
		return;
	}
	n = flatten(values, head, 0, 0);
	if (max_values == 0 || n <= max_values) {
		char *text = cJSON_PrintUnformatted(values);
		if (text) {
			fprintf(out, " %s", text);
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
	fputs(" [", out);
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
		"] (%zu of %zu values: the first and last %zu in row-major "
		"order; --max-values)",
		2 * keep, n, keep);
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

static void explain_event(FILE *out, const cJSON *ev, size_t max_values)
{
	const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(ev, "ranks");
	const cJSON *bytes =
		cJSON_GetObjectItemCaseSensitive(ev, "bytes_per_rank");
	const cJSON *seq = cJSON_GetObjectItemCaseSensitive(ev, "seq");
	const cJSON *r;
	const char *kind = str_of(ev, "kind");

	fputs("  [", out);
	print_number(out, seq);
	fprintf(out, "] %-8s %-11s %s -> ", str_of(ev, "module"),
		str_of(ev, "op"), str_of(ev, "tensor"));
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
	cJSON_ArrayForEach(r, ranks)
	{
		const cJSON *rank = cJSON_GetObjectItemCaseSensitive(r, "rank");
		fputs("        rank ", out);
		print_number(out, rank);
		fputs(": ", out);
		print_shape(out, cJSON_GetObjectItemCaseSensitive(r, "shape"));
		print_values(out, r, max_values);
		fputc('\n', out);
	}
	if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(ev, "note"))) {
		fprintf(out, "        (%s)\n", str_of(ev, "note"));
	}
}

/* The training part of a result: the loss at each step, both ways, and
 * what else was compared. */
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

int tps_cli_explain(int argc, char **argv, FILE *out, FILE *err)
{
	cJSON *trace = NULL;
	const cJSON *ev, *result, *comm, *op, *mesh;
	struct tps_error e = {0};
	const char *phase = NULL, *path = NULL;
	struct explain_filter filter = {-1, NULL, NULL, 16};
	int step = -2, shown = 0;
	int rc = explain_options(argc, argv, &filter, &path, err);

	if (rc != TPS_EXIT_OK) {
		return rc;
	}
	if (tps_json_load(path, TPS_JSON_MAX_TRACE_BYTES, &trace, &e) !=
		    TPS_OK ||
	    tps_check_is_trace(trace, path, &e) != TPS_OK) {
		cJSON_Delete(trace);
		return tps_cli_trouble(err, &e);
	}
	mesh = cJSON_GetObjectItemCaseSensitive(trace, "mesh");
	fprintf(out, "%s trace of a mesh ", str_of(trace, "generator"));
	print_shape(out, cJSON_GetObjectItemCaseSensitive(mesh, "shape"));
	fputs(" named", out);
	print_short_json(
		out, cJSON_GetObjectItemCaseSensitive(mesh, "dim_names"), 4096);
	fputc('\n', out);
	cJSON_ArrayForEach(ev,
			   cJSON_GetObjectItemCaseSensitive(trace, "warnings"))
	{
		fprintf(out, "warning: %s\n",
			cJSON_IsString(ev) ? ev->valuestring : "?");
	}
	cJSON_ArrayForEach(ev,
			   cJSON_GetObjectItemCaseSensitive(trace, "events"))
	{
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(ev, "step");
		int this_step = cJSON_IsNumber(s) ? s->valueint : -1;
		const char *this_phase = str_of(ev, "phase");
		if (!explain_wants(&filter, ev)) {
			continue;
		}
		shown++;
		if (!phase || strcmp(phase, this_phase) != 0 ||
		    this_step != step) {
			if (this_step >= 0) {
				fprintf(out, "%s, step %d:\n", this_phase,
					this_step);
			} else {
				fprintf(out, "%s:\n", this_phase);
			}
			phase = this_phase;
			step = this_step;
		}
		explain_event(out, ev, filter.max_values);
	}
	if (shown == 0) {
		fputs("(no event matches --step, --module and --phase)\n", out);
	}
	result = cJSON_GetObjectItemCaseSensitive(trace, "result");
	if (result) {
		const cJSON *o =
			cJSON_GetObjectItemCaseSensitive(result, "output");
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(
			result, "max_abs_diff");
		fputs("result: output ", out);
		print_shape(out, cJSON_GetObjectItemCaseSensitive(o, "shape"));
		print_values(out, o, filter.max_values);
		fprintf(out, " %s the single-device reference (max_abs_diff ",
			cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result,
								      "match"))
				? "matches"
				: "DIFFERS from");
		print_number(out, d);
		fputs(")\n", out);
		explain_training(out, result);
	}
	comm = cJSON_GetObjectItemCaseSensitive(trace, "comm");
	if (comm) {
		const cJSON *n =
			cJSON_GetObjectItemCaseSensitive(comm, "collectives");
		const cJSON *b = cJSON_GetObjectItemCaseSensitive(
			comm, "bytes_per_rank");
		fputs("comm: ", out);
		print_number(out, n);
		fprintf(out, " collective%s, ",
			cJSON_IsNumber(n) && n->valuedouble == 1 ? "" : "s");
		print_number(out, b);
		fputs(" bytes per rank", out);
		cJSON_ArrayForEach(
			op, cJSON_GetObjectItemCaseSensitive(comm, "by_op"))
		{
			fprintf(out, "; %s x", op->string);
			print_number(out, cJSON_GetObjectItemCaseSensitive(
						  op, "count"));
		}
		fputc('\n', out);
	}
	cJSON_Delete(trace);
	return TPS_EXIT_OK;
}
