/*
 * The public API's verbs that write a trace (or configs) for people and
 * tools (include/tpsim.h): explain, picture, timeline, view, comm. Each is
 * the library function the verb calls, made whole in memory and then
 * handed to the caller's write callback (tps_api_write_rendered).
 */
#include "api_internal.h"

#include <stdlib.h>
#include <string.h>

#include "explain.h"
#include "jsonio.h"
#include "nn_event.h"
#include "picture.h"
#include "run_comm.h"
#include "spec.h"
#include "timeline.h"
#include "view.h"

/* ---- explain ---------------------------------------------------------- */

void tpsim_explain_options_init(struct tpsim_explain_options *options)
{
	if (!options) {
		return;
	}
	memset(options, 0, sizeof *options);
	options->step = -1;
	options->max_values = 16;
	options->heading_level = 1;
}

struct explain_arg {
	const struct tpsim_trace *trace;
	struct tps_explain_options opts;
};

static enum tps_status render_explain(FILE *out, const void *arg,
				      struct tps_error *err)
{
	const struct explain_arg *a = arg;
	enum tps_status st =
		tps_explain(out, a->trace->tree, a->trace->name, &a->opts, err);
	/* tpsim_explain checked the options' ranges already: the one usage
	 * error left is a module the trace lacks, which the API calls bad
	 * input (tpsim.h), as the CLI calls it a usage error. */
	if (st == TPS_ERR_USAGE) {
		err->status = TPS_ERR_INPUT;
		st = TPS_ERR_INPUT;
	}
	return st;
}

enum tpsim_status tpsim_explain(const struct tpsim_trace *trace,
				const struct tpsim_explain_options *options,
				tpsim_write_fn write, void *ctx,
				struct tpsim_error **error)
{
	struct tpsim_explain_options defaults;
	struct explain_arg a;
	struct tps_error err = {0};

	if (!trace || !write) {
		return tps_api_misuse(error, "tpsim_explain",
				      !trace ? "trace" : "write");
	}
	if (!options) {
		tpsim_explain_options_init(&defaults);
		options = &defaults;
	}
	/* The CLI's limits: --step and --max-values up to 10^9. */
	if (options->step < -1 || options->step > 1000000000L ||
	    options->max_values > 1000000000UL) {
		tps_error_set(&err, TPS_ERR_USAGE,
			      "explain: step %lld (expected -1 for every step, "
			      "or 0 to 10^9), max_values %zu (expected 0 to "
			      "10^9)",
			      (long long)options->step, options->max_values);
		return tps_api_fail(error, &err);
	}
	if (options->heading_level < 1 || options->heading_level > 4 ||
	    (options->heading_level != 1 && !options->markdown)) {
		tps_error_set(&err, TPS_ERR_USAGE,
			      "explain: heading_level %d (expected 1 to 4, and "
			      "other than 1 only with markdown)",
			      options->heading_level);
		return tps_api_fail(error, &err);
	}
	if (options->phase &&
	    tps_name_index(tps_phase_names, options->phase) < 0) {
		char esc[64];
		tps_error_set(&err, TPS_ERR_USAGE,
			      "explain: phase '%s' (expected setup, forward, "
			      "backward or optimizer)",
			      tps_json_escape_for_message(options->phase, esc,
							  sizeof esc));
		return tps_api_fail(error, &err);
	}
	a.trace = trace;
	a.opts = (struct tps_explain_options)TPS_EXPLAIN_OPTIONS_DEFAULT;
	a.opts.format = options->markdown ? TPS_EXPLAIN_MARKDOWN
					  : TPS_EXPLAIN_TEXT;
	a.opts.step = (long)options->step;
	a.opts.module = options->module;
	a.opts.phase = options->phase;
	a.opts.max_values = options->max_values;
	a.opts.heading_level = options->heading_level;
	a.opts.pictures = options->pictures != 0;
	a.opts.color = options->color != 0 && !options->markdown;
	return tps_api_write_rendered(render_explain, &a, write, ctx, error);
}

/* ---- picture ---------------------------------------------------------- */

struct picture_arg {
	const struct tpsim_trace *trace;
	const char *tensor;
	long long seq;
};

static enum tps_status render_picture(FILE *out, const void *arg,
				      struct tps_error *err)
{
	const struct picture_arg *a = arg;
	struct tps_picture pic = {0};
	int index = -1;
	enum tps_status st = tps_picture_select(a->trace->tree, a->trace->name,
						a->tensor, a->seq, &index, err);
	if (st == TPS_OK) {
		st = tps_picture_from_event(&pic, a->trace->tree,
					    a->trace->name, index, err);
	}
	if (st == TPS_OK) {
		tps_picture_write_svg(out, &pic);
	}
	tps_picture_free(&pic);
	return st;
}

enum tpsim_status tpsim_picture_svg(const struct tpsim_trace *trace,
				    const char *tensor, int64_t seq,
				    tpsim_write_fn write, void *ctx,
				    struct tpsim_error **error)
{
	struct picture_arg a = {trace, tensor, seq < 0 ? -1 : (long long)seq};

	if (!trace || !tensor || !write) {
		return tps_api_misuse(error, "tpsim_picture_svg",
				      !trace	? "trace"
				      : !tensor ? "tensor"
						: "write");
	}
	return tps_api_write_rendered(render_picture, &a, write, ctx, error);
}

/* ---- timeline, view --------------------------------------------------- */

static enum tps_status render_timeline(FILE *out, const void *arg,
				       struct tps_error *err)
{
	const struct tpsim_trace *trace = arg;
	/* On error tps_api_write_rendered hands over nothing. */
	return tps_timeline_stream_json(out, trace->tree, trace->name, err);
}

enum tpsim_status tpsim_timeline(const struct tpsim_trace *trace,
				 tpsim_write_fn write, void *ctx,
				 struct tpsim_error **error)
{
	if (!trace || !write) {
		return tps_api_misuse(error, "tpsim_timeline",
				      !trace ? "trace" : "write");
	}
	return tps_api_write_rendered(render_timeline, trace, write, ctx,
				      error);
}

static enum tps_status render_view(FILE *out, const void *arg,
				   struct tps_error *err)
{
	const struct tpsim_trace *trace = arg;
	tps_view_write(out, trace->text, trace->len);
	return TPS_OK;
}

enum tpsim_status tpsim_view(const struct tpsim_trace *trace,
			     tpsim_write_fn write, void *ctx,
			     struct tpsim_error **error)
{
	if (!trace || !write) {
		return tps_api_misuse(error, "tpsim_view",
				      !trace ? "trace" : "write");
	}
	return tps_api_write_rendered(render_view, trace, write, ctx, error);
}

/* ---- comm ------------------------------------------------------------- */

struct comm_arg {
	const struct tpsim_config *const *configs;
	int n;
	enum tps_comm_format format;
};

static enum tps_status render_comm(FILE *out, const void *arg,
				   struct tps_error *err)
{
	const struct comm_arg *a = arg;
	struct tps_comm_point *points = calloc((size_t)a->n, sizeof *points);
	enum tps_status st = TPS_OK;
	int made = 0;

	if (!points) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	for (; made < a->n && st == TPS_OK; made++) {
		st = tps_comm_point_make(&a->configs[made]->spec,
					 a->configs[made]->name, &points[made],
					 err);
	}
	if (st != TPS_OK) {
		made--; /* the one that failed holds nothing */
	} else {
		st = tps_comm_write(out, points, a->n, a->format, err);
	}
	tps_comm_points_free(points, made);
	return st;
}

enum tpsim_status tpsim_comm(const struct tpsim_config *const *configs,
			     size_t n, enum tpsim_comm_format format,
			     tpsim_write_fn write, void *ctx,
			     struct tpsim_error **error)
{
	struct tps_error err = {0};
	struct comm_arg a;

	if (!configs || !write) {
		return tps_api_misuse(error, "tpsim_comm",
				      !configs ? "configs" : "write");
	}
	for (size_t i = 0; i < n; i++) {
		if (!configs[i]) {
			return tps_api_misuse(error, "tpsim_comm",
					      "configs[i]");
		}
	}
	if (n < 1 || n > 4096 ||
	    (format != TPSIM_COMM_TABLES && format != TPSIM_COMM_SUMMARY &&
	     format != TPSIM_COMM_JSON)) {
		tps_error_set(&err, TPS_ERR_USAGE,
			      "comm: %zu configs (expected 1 to 4096), format "
			      "%d (expected TPSIM_COMM_TABLES, _SUMMARY or "
			      "_JSON)",
			      n, (int)format);
		return tps_api_fail(error, &err);
	}
	a.configs = configs;
	a.n = (int)n;
	a.format = format == TPSIM_COMM_JSON	  ? TPS_COMM_JSON
		   : format == TPSIM_COMM_SUMMARY ? TPS_COMM_SUMMARY
						  : TPS_COMM_TABLES;
	return tps_api_write_rendered(render_comm, &a, write, ctx, error);
}
