#include "run.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>

#include "costs.h"
#include "jsonio.h"
#include "numfmt.h"
#include "optim.h"
#include "outfile.h"
#include "pool.h"
#include "trace.h"
#include "run_internal.h"

void tps_run_compare(const struct tps_tensor *a, const struct tps_tensor *b,
		     double atol, double rtol, float *max_abs_diff, bool *match)
{
	int64_t n = tps_tensor_numel(b);
	float diff = 0.0f, scale = 0.0f;
	if (!tps_shape_equal(&a->shape, &b->shape)) {
		*max_abs_diff = INFINITY;
		*match = false;
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		float d = fabsf(a->data[i] - b->data[i]);
		diff = d > diff ? d : diff;
		scale = fabsf(b->data[i]) > scale ? fabsf(b->data[i]) : scale;
	}
	*max_abs_diff = diff;
	*match = (double)diff <= atol + rtol * (double)scale;
}

static void describe_mesh(const struct tps_mesh *m, char *buf, size_t size)
{
	size_t used = 0;
	for (int i = 0; i < m->ndim && used < size; i++) {
		int n = snprintf(buf + used, size - used, "%s%s=%d",
				 i ? " x " : "", m->dim_names[i], m->shape[i]);
		used += n > 0 ? (size_t)n : 0;
	}
}

/* Whether a mesh dim's name reads as data parallelism ("dp",
 * "dp_shard", "data", "batch", any case): then the warning about an
 * unused dim says that dp_dim would split the batch over it. */
static bool looks_data_parallel(const char *name)
{
	static const char *const words[] = {"dp", "data", "batch"};
	for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
		size_t n = strlen(words[w]);
		for (const char *c = name; *c; c++) {
			if (strncasecmp(c, words[w], n) == 0) {
				return true;
			}
		}
	}
	return false;
}

/* Appends a warning, if there is room (there always is: see run.h). */
static void add_warning(struct tps_run_summary *summary, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void add_warning(struct tps_run_summary *summary, const char *fmt, ...)
{
	va_list ap;
	if (summary->n_warnings == TPS_RUN_MAX_WARNINGS) {
		return;
	}
	va_start(ap, fmt);
	vsnprintf(summary->warnings[summary->n_warnings++],
		  sizeof summary->warnings[0], fmt, ap);
	va_end(ap);
}

void tps_run_warnings(const struct tps_model_spec *spec,
		      const int64_t *dp_counts, int dp,
		      struct tps_run_summary *summary)
{
	const struct tps_mesh *mesh = &spec->mesh;
	bool mean_loss =
		spec->mode == TPS_MODE_TRAINING && spec->loss != TPS_LOSS_SUM;
	int64_t most = 0, least = 0;
	char esc[TPS_NAME_MAX * 4];

	summary->n_warnings = 0;
	if (spec->tp_dim != mesh->ndim - 1) {
		add_warning(summary,
			    "TP runs over mesh dim \"%s\" (dim %d of %d), not "
			    "the innermost: on a cluster the innermost dim is "
			    "the one inside a node, so every TP collective "
			    "here would cross the slower links between nodes. "
			    "PyTorch refuses this (TP needs to be the "
			    "innermost dimension on its parent mesh); "
			    "\"strict_tp_innermost\": true makes it an error "
			    "here too",
			    mesh->dim_names[spec->tp_dim], spec->tp_dim,
			    mesh->ndim);
	}
	/* A dim of size 1 holds one rank: it repeats nothing. */
	for (int i = 0; i < mesh->ndim; i++) {
		char hint[TPS_NAME_MAX * 4 + 96] = "";
		if (i == spec->tp_dim || (spec->dp_mask & (1u << i)) ||
		    mesh->shape[i] == 1) {
			continue;
		}
		tps_json_escape_for_message(mesh->dim_names[i], esc,
					    sizeof esc);
		if (looks_data_parallel(mesh->dim_names[i])) {
			snprintf(hint, sizeof hint,
				 "; naming it in \"dp_dim\" would split the "
				 "batch over it%s%s%s",
				 spec->dp_mask ? " too" : " (\"dp_dim\": \"",
				 spec->dp_mask ? "" : esc,
				 spec->dp_mask ? "" : "\")");
		}
		add_warning(summary,
			    "mesh dim \"%s\" (size %d) is neither tp_dim nor "
			    "dp_dim, so it does nothing: its %d ranks repeat "
			    "each other, each holding the same parameters and "
			    "computing %s%s",
			    esc, mesh->shape[i], mesh->shape[i],
			    spec->dp_mask ? "the same part of the batch"
					  : "the whole batch",
			    hint);
	}
	for (int r = 0; r < dp; r++) {
		most = r == 0 || dp_counts[r] > most ? dp_counts[r] : most;
		least = r == 0 || dp_counts[r] < least ? dp_counts[r] : least;
	}
	if (mean_loss && dp > 1 && most != least) {
		if (spec->dp_grad == TPS_DP_GRAD_GLOBAL) {
			add_warning(
				summary,
				"the dp ranks hold unequal parts of the batch "
				"(%lld to %lld samples): DDP's plain average "
				"of their local means would weight samples "
				"unequally; with dp_grad global each rank's "
				"loss is scaled by its share, so the step is "
				"the global-batch gradient",
				(long long)most, (long long)least);
		} else {
			add_warning(
				summary,
				"the dp ranks hold unequal parts of the batch "
				"(%lld to %lld samples): with dp_grad ddp the "
				"step is the plain average of the ranks' "
				"local means, as DDP's, so a sample on a rank "
				"with fewer weighs more than one on a rank "
				"with more, and the step is not the gradient "
				"of the global-batch mean (dp_grad global "
				"scales each rank's loss by its share)",
				(long long)most, (long long)least);
		}
	}
}

/* A symbolic run whose /trace/values asked for values: one rule, whether
 * the config or --symbolic made it symbolic (config.h). */
static void values_warning(const struct tps_run_spec *spec,
			   struct tps_run_summary *summary)
{
	if (spec->values_ignored == TPS_TRACE_VALUES_NONE) {
		return;
	}
	add_warning(summary,
		    "/trace/values: \"%s\" is not written: a symbolic run has "
		    "no values, so the trace holds shapes and placements only "
		    "(\"values\": \"none\")",
		    tps_trace_values_names[spec->values_ignored]);
}

enum tps_status tps_run_collect_warnings(const struct tps_run_spec *spec,
					 const struct tps_model *model,
					 struct tps_run_summary *summary,
					 struct tps_error *err)
{
	char plan_warning[TPS_COST_WARNING_MAX];
	enum tps_status st;

	tps_run_warnings(&spec->model, model->dp_counts, model->dp, summary);
	values_warning(spec, summary);
	/* Redistributions that the next one undoes: a meta pass of one
	 * step, since the warnings head the trace. */
	st = tps_cost_plan_warning(&spec->model, plan_warning, err);
	if (st == TPS_OK && plan_warning[0]) {
		add_warning(summary, "%s", plan_warning);
	}
	return st;
}

/* Folds one comparison into the running max and match: exactly (every
 * element equal) or within the tolerance. */
static void compare_into(const struct tps_tensor *a, const struct tps_tensor *b,
			 bool exact, double atol, double rtol,
			 float *max_abs_diff, bool *all_match)
{
	float diff;
	bool match;
	tps_run_compare(a, b, atol, rtol, &diff, &match);
	if (exact) {
		match = diff == 0.0f;
	}
	*max_abs_diff = diff > *max_abs_diff ? diff : *max_abs_diff;
	*all_match = *all_match && match;
}

void tps_run_compare_outcomes(const struct tps_model_outcome *a,
			      const struct tps_model_outcome *b, double atol,
			      double rtol, float *max_abs_diff, bool *match)
{
	const struct tps_model_exactness *x = &b->exact;
	*max_abs_diff = 0.0f;
	*match = a->steps == b->steps && a->n_grads == b->n_grads &&
		 a->n_params == b->n_params;
	if (!*match) {
		*max_abs_diff = INFINITY;
		return;
	}
	compare_into(&a->output, &b->output, x->output, atol, rtol,
		     max_abs_diff, match);
	for (int i = 0; i < a->steps; i++) {
		int64_t one = 1;
		struct tps_shape s = tps_shape_make(1, &one);
		struct tps_tensor la = {s, &a->loss[i], false};
		struct tps_tensor lb = {s, &b->loss[i], false};
		compare_into(&la, &lb, x->loss[i], atol, rtol, max_abs_diff,
			     match);
	}
	for (int i = 0; i < a->n_grads; i++) {
		compare_into(&a->grads[i], &b->grads[i], x->grads[i], atol,
			     rtol, max_abs_diff, match);
	}
	for (int i = 0; i < a->n_params; i++) {
		compare_into(&a->params_after[i], &b->params_after[i],
			     x->params_after[i], atol, rtol, max_abs_diff,
			     match);
	}
}

void tps_run_count_exact(const struct tps_model_outcome *ref, int *exact,
			 int *compared)
{
	const struct tps_model_exactness *x = &ref->exact;
	*compared = 1 + ref->steps + ref->n_grads + ref->n_params;
	*exact = x->output ? 1 : 0;
	for (int i = 0; i < ref->steps; i++) {
		*exact += x->loss[i] ? 1 : 0;
	}
	for (int i = 0; i < ref->n_grads; i++) {
		*exact += x->grads[i] ? 1 : 0;
	}
	for (int i = 0; i < ref->n_params; i++) {
		*exact += x->params_after[i] ? 1 : 0;
	}
}

static bool outcome_finite(const struct tps_model_outcome *o)
{
	bool ok = tps_tensor_all_finite(&o->output, NULL);
	for (int i = 0; i < o->steps; i++) {
		ok = ok && isfinite(o->loss[i]);
	}
	for (int i = 0; i < o->n_grads; i++) {
		ok = ok && tps_tensor_all_finite(&o->grads[i], NULL);
	}
	for (int i = 0; i < o->n_params; i++) {
		ok = ok && tps_tensor_all_finite(&o->params_after[i], NULL);
	}
	return ok;
}

/* The process's peak resident set, from getrusage (Linux: KiB). */
static int64_t peak_rss_bytes(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0) {
		return 0;
	}
	return (int64_t)ru.ru_maxrss * 1024;
}

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The trace's sink, timed: the seconds spent writing events are taken
 * out of the phase that emitted them. */
struct timed_sink {
	struct tps_event_sink inner;
	double *seconds;
};

static enum tps_status timed_emit(void *ctx, const struct tps_event *ev,
				  struct tps_error *err)
{
	struct timed_sink *ts = ctx;
	double t0 = now_seconds();
	enum tps_status st = tps_event_emit(ts->inner, ev, err);
	*ts->seconds += now_seconds() - t0;
	return st;
}

/* Adds the seconds since *t0 to *total and restarts *t0. */
static void lap(double *t0, double *total)
{
	double t = now_seconds();
	*total += t - *t0;
	*t0 = t;
}

/* The module mistake m was injected in. */
static const struct tps_module *mistaken_module(const struct tps_model *model,
						enum tps_mistake m)
{
	return &model->modules[tps_mistake_site(model->spec, m)];
}

/* Whether got is want within float32 rounding of the sums involved. */
static bool about(float got, float want)
{
	return fabsf(got - want) <= 1e-5f + 1e-5f * fabsf(want);
}

/*
 * bias_every_rank: every rank added the rowwise bias b before the
 * all_reduce, so a model that ends in that linear outputs exactly
 * (tp - 1) b more than the reference in every row.
 */
static void diagnose_bias_every_rank(const struct tps_model *model,
				     const struct tps_model_outcome *sim,
				     const struct tps_model_outcome *ref,
				     const char *diff, char *buf, size_t size)
{
	const struct tps_model_spec *spec = model->spec;
	const struct tps_module *m =
		mistaken_module(model, TPS_MISTAKE_BIAS_EVERY_RANK);
	int tp = spec->mesh.shape[spec->tp_dim];
	int64_t cols = m->spec->out_features;
	int64_t n = tps_tensor_numel(&sim->output);
	bool exact = m == &model->modules[spec->n_modules - 1];

	for (int64_t e = 0; exact && e < n; e++) {
		float b = m->params[1].global.data[e % cols];
		exact = about(sim->output.data[e],
			      ref->output.data[e] + (float)(tp - 1) * b);
	}
	if (exact) {
		snprintf(buf, size,
			 "output is larger than the reference by exactly "
			 "(tp - 1) x bias = %d x %s.bias in every row: the "
			 "bias was added on every rank before the all_reduce "
			 "(inject bias_every_rank)",
			 tp - 1, m->spec->name);
	} else {
		snprintf(buf, size,
			 "output differs from the reference (max_abs_diff "
			 "%s): %s added its whole bias on every rank before "
			 "the all_reduce, (tp - 1) x bias = %d x %s.bias too "
			 "much in its output (inject bias_every_rank)",
			 diff, m->spec->name, tp - 1, m->spec->name);
	}
}

/*
 * skip_all_reduce: each rank kept its partial sum x_i W_i^T, and the
 * output (replicated, so rank 0's) is x_0 W_0^T alone, plus rank 0's part
 * of the bias. Checked when that linear is the whole model, so that x is
 * the input.
 */
static void diagnose_skip_all_reduce(const struct tps_model *model,
				     const struct tps_tensor *input,
				     const struct tps_model_outcome *sim,
				     const char *diff, char *buf, size_t size)
{
	const struct tps_model_spec *spec = model->spec;
	const struct tps_module *m =
		mistaken_module(model, TPS_MISTAKE_SKIP_ALL_REDUCE);
	int tp = spec->mesh.shape[spec->tp_dim];
	int64_t k = m->spec->in_features, cols = m->spec->out_features;
	int64_t rows = cols ? tps_tensor_numel(&sim->output) / cols : 0;
	int64_t start, len;
	bool exact = spec->n_modules == 1;
	float share = m->spec->bias_mode == TPS_BIAS_PARTIAL_SPLIT
			      ? 1.0f / (float)tp
			      : 1.0f;

	tps_chunk_range(k, tp, 0, &start, &len);
	for (int64_t r = 0; exact && r < rows; r++) {
		for (int64_t j = 0; exact && j < cols; j++) {
			const float *x = input->data + r * k;
			const float *w = m->params[0].global.data + j * k;
			float y = 0.0f;
			for (int64_t p = start; p < start + len; p++) {
				y += x[p] * w[p];
			}
			if (m->spec->bias) {
				y += m->params[1].global.data[j] * share;
			}
			exact = about(sim->output.data[r * cols + j], y);
		}
	}
	if (exact) {
		snprintf(buf, size,
			 "output is rank 0's partial sum alone, x_0 W_0^T over "
			 "%lld of the %lld input features: the all_reduce "
			 "that adds the %d ranks' partial sums was skipped "
			 "(inject skip_all_reduce)",
			 (long long)len, (long long)k, tp);
	} else {
		snprintf(buf, size,
			 "output differs from the reference (max_abs_diff "
			 "%s): %s's ranks each kept their partial sum, and the "
			 "all_reduce that adds the %d of them was skipped "
			 "(inject skip_all_reduce)",
			 diff, m->spec->name, tp);
	}
}

/*
 * skip_gather: each rank returned its local shard of the colwise linear's
 * output features. When the model ends there, the output is rank 0's
 * shard: the reference's first columns, and narrower than it.
 */
static void diagnose_skip_gather(const struct tps_model *model,
				 const struct tps_model_outcome *sim,
				 const struct tps_model_outcome *ref,
				 const char *stopped, char *buf, size_t size)
{
	const struct tps_model_spec *spec = model->spec;
	const struct tps_module *m =
		mistaken_module(model, TPS_MISTAKE_SKIP_GATHER);
	int tp = spec->mesh.shape[spec->tp_dim];
	int64_t out = m->spec->out_features, start, len;
	const struct tps_shape *got = &sim->output.shape;
	const struct tps_shape *want = &ref->output.shape;
	char a[128], b[128];
	bool exact = !stopped && got->ndim == want->ndim && got->ndim > 0 &&
		     want->dim[want->ndim - 1] == out;

	tps_chunk_range(out, tp, 0, &start, &len);
	exact = exact && got->dim[got->ndim - 1] == len;
	for (int d = 0; exact && d + 1 < got->ndim; d++) {
		exact = got->dim[d] == want->dim[d];
	}
	for (int64_t e = 0; exact && e < tps_tensor_numel(&sim->output); e++) {
		int64_t row = e / len, col = e % len;
		exact = sim->output.data[e] ==
			ref->output.data[row * out + col];
	}
	if (stopped) {
		snprintf(buf, size,
			 "the simulation stopped at a shape error (%s): %s "
			 "returned each rank's local shard of its %lld output "
			 "features instead of all-gathering them (inject "
			 "skip_gather)",
			 stopped, m->spec->name, (long long)out);
	} else if (exact) {
		char cols[64];
		if (len == 1) {
			snprintf(cols, sizeof cols, "column 0");
		} else {
			snprintf(cols, sizeof cols, "columns 0-%lld",
				 (long long)len - 1);
		}
		snprintf(buf, size,
			 "output has shape %s where the reference has %s: it "
			 "is rank 0's local shard, the reference's %s; %s "
			 "returned its shard of the %lld output features and "
			 "the all_gather was skipped (inject skip_gather)",
			 tps_shape_format(got, a, sizeof a),
			 tps_shape_format(want, b, sizeof b), cols,
			 m->spec->name, (long long)out);
	} else {
		snprintf(buf, size,
			 "output has shape %s where the reference has %s: %s "
			 "returned each rank's local shard of its %lld output "
			 "features and the all_gather was skipped (inject "
			 "skip_gather)",
			 tps_shape_format(got, a, sizeof a),
			 tps_shape_format(want, b, sizeof b), m->spec->name,
			 (long long)out);
	}
}

/* wrong_shard_dim: the weight split on the other dim; the local matmul's
 * shapes cannot fit (at any tp of 2 or more, some rank's cannot). */
static void diagnose_wrong_shard_dim(const struct tps_model *model,
				     const char *stopped, const char *diff,
				     char *buf, size_t size)
{
	const struct tps_module *m =
		mistaken_module(model, TPS_MISTAKE_WRONG_SHARD_DIM);
	bool colwise = m->spec->style == TPS_STYLE_COLWISE;
	char what[512];
	snprintf(what, sizeof what,
		 "%s.weight [out, in] was split over tp by dim %d, its %s "
		 "features, where %s splits dim %d, its %s features (inject "
		 "wrong_shard_dim)",
		 m->spec->name, colwise ? 1 : 0, colwise ? "input" : "output",
		 colwise ? "colwise" : "rowwise", colwise ? 0 : 1,
		 colwise ? "output" : "input");
	if (stopped) {
		snprintf(buf, size, "shape mismatch in the matmul (%s): %s",
			 stopped, what);
	} else {
		snprintf(buf, size,
			 "output differs from the reference (max_abs_diff "
			 "%s): %s",
			 diff, what);
	}
}

/*
 * Whether every tp-sharded parameter gradient in sim is, block by block,
 * the sum of the reference's blocks: what all-reducing them over tp makes.
 * Meaningful after one step only (later steps start from other weights).
 */
static bool grads_are_block_sums(const struct tps_model *model,
				 const struct tps_model_outcome *sim,
				 const struct tps_model_outcome *ref)
{
	const struct tps_model_spec *spec = model->spec;
	int tp = spec->mesh.shape[spec->tp_dim];
	for (int i = 0; i < model->n_params; i++) {
		const struct tps_param *p = &model->params[i];
		struct tps_placement pl = p->value.placements[spec->tp_dim];
		const struct tps_shape *sh = &ref->grads[i].shape;
		int64_t outer = 1, n, inner = 1, start, len;
		if (pl.kind != TPS_PLACEMENT_SHARD) {
			continue;
		}
		/* View the gradient as [outer, n, inner] around the shard
		 * dim; rank r's block is [:, start_r : start_r + len, :]. */
		for (int d = 0; d < pl.dim; d++) {
			outer *= sh->dim[d];
		}
		n = sh->dim[pl.dim];
		for (int d = pl.dim + 1; d < sh->ndim; d++) {
			inner *= sh->dim[d];
		}
		tps_chunk_range(n, tp, 0, &start, &len);
		for (int64_t o = 0; o < outer; o++) {
			for (int64_t j = 0; j < len; j++) {
				for (int64_t k = 0; k < inner; k++) {
					float want = 0.0f;
					for (int r = 0; r < tp; r++) {
						want += ref->grads[i].data
								[(o * n +
								  r * len + j) *
									 inner +
								 k];
					}
					for (int r = 0; r < tp; r++) {
						float got =
							sim->grads[i].data
								[(o * n +
								  r * len + j) *
									 inner +
								 k];
						if (!about(got, want)) {
							return false;
						}
					}
				}
			}
		}
	}
	return true;
}

/* tp_allreduce_weight_grad (seed 003's claim): every tp-sharded gradient
 * all-reduced over tp. */
static void diagnose_tp_allreduce_weight_grad(
	const struct tps_model *model, const struct tps_model_outcome *sim,
	const struct tps_model_outcome *ref, const char *stopped,
	const char *diff, char *buf, size_t size)
{
	const struct tps_model_spec *spec = model->spec;
	int tp = spec->mesh.shape[spec->tp_dim];
	static const char why[] =
		"gradients of tp-sharded weights are not all-reduced over tp, "
		"only activation gradients are, and weight gradients only "
		"over dp (inject tp_allreduce_weight_grad, seed 003's claim)";
	if (stopped) {
		snprintf(buf, size,
			 "the simulation stopped (%s): uneven shards of a "
			 "weight gradient cannot even be all-reduced; %s",
			 stopped, why);
	} else if (sim->steps == 1 && sim->loss[0] == ref->loss[0] &&
		   grads_are_block_sums(model, sim, ref)) {
		snprintf(buf, size,
			 "the loss matches but the weight gradients do not: "
			 "every rank's block of each tp-sharded weight "
			 "gradient is the sum of all %d ranks' blocks, sum_s "
			 "dW_s instead of dW_r; %s",
			 tp, why);
	} else {
		snprintf(buf, size,
			 "gradients and parameters differ from the reference "
			 "(max_abs_diff %s): every rank's block of each "
			 "tp-sharded weight gradient was summed with the other "
			 "ranks' blocks; %s",
			 diff, why);
	}
}

/* What an injected mistake did, read from its symptom, into buf. stopped:
 * NULL, or the shape error the simulation stopped at. */
static void diagnose(const struct tps_model *model,
		     const struct tps_tensor *input,
		     const struct tps_model_outcome *sim,
		     const struct tps_model_outcome *ref, float max_abs_diff,
		     const char *stopped, char *buf, size_t size)
{
	char diff[TPS_NUMFMT_MAX];
	unsigned inject = model->spec->inject;
	if (isfinite(max_abs_diff)) {
		tps_format_float(max_abs_diff, diff);
	} else {
		snprintf(diff, sizeof diff, "none: shapes differ");
	}
	if (inject & TPS_MISTAKE_BIT(TPS_MISTAKE_BIAS_EVERY_RANK)) {
		diagnose_bias_every_rank(model, sim, ref, diff, buf, size);
	} else if (inject & TPS_MISTAKE_BIT(TPS_MISTAKE_SKIP_ALL_REDUCE)) {
		diagnose_skip_all_reduce(model, input, sim, diff, buf, size);
	} else if (inject & TPS_MISTAKE_BIT(TPS_MISTAKE_SKIP_GATHER)) {
		diagnose_skip_gather(model, sim, ref, stopped, buf, size);
	} else if (inject & TPS_MISTAKE_BIT(TPS_MISTAKE_WRONG_SHARD_DIM)) {
		diagnose_wrong_shard_dim(model, stopped, diff, buf, size);
	} else {
		diagnose_tp_allreduce_weight_grad(model, sim, ref, stopped,
						  diff, buf, size);
	}
}

enum tps_status tps_run_meta_inputs(const struct tps_model_spec *ms,
				    bool with_target, struct tps_tensor *input,
				    struct tps_tensor *target,
				    struct tps_error *err)
{
	struct tps_shape oshape = tps_model_output_shape(ms);
	enum tps_status st = tps_tensor_init_meta(input, &ms->input_shape, err);
	if (ms->loss == TPS_LOSS_CROSS_ENTROPY) {
		oshape.ndim--; /* a class id per row */
	}
	if (st == TPS_OK && with_target) {
		st = tps_tensor_init_meta(target, &oshape, err);
	}
	return st;
}

/* The simulation proper, writing into an open trace. */
static enum tps_status simulate(const struct tps_run_spec *spec,
				struct tps_trace *trace, bool keep_losses,
				struct tps_run_summary *summary,
				struct tps_error *err)
{
	struct tps_run_stats *stats = &summary->stats;
	double t0 = now_seconds(), events_s = 0.0;
	struct timed_sink timed = {tps_trace_sink(trace), &events_s};
	struct tps_event_sink sink = {timed_emit, &timed};
	const struct tps_model_spec *ms = &spec->model;
	struct tps_model model = {0};
	struct tps_tensor input = {0}, target = {0};
	struct tps_model_outcome sim = {0}, ref = {0};
	bool symbolic = spec->compute == TPS_COMPUTE_SYMBOLIC;
	struct tps_trace_result result = {
		&model, &sim,	 symbolic ? NULL : &ref, 0.0f, false, NULL,
		NULL,	symbolic};
	const char *warnings[TPS_RUN_MAX_WARNINGS];
	bool with_target =
		ms->mode == TPS_MODE_TRAINING && ms->loss != TPS_LOSS_SUM;
	enum tps_status st = symbolic ? tps_model_init_meta(&model, ms, err)
				      : tps_model_init(&model, ms, err);
	if (st != TPS_OK) {
		return st;
	}
	st = tps_run_collect_warnings(spec, &model, summary, err);
	if (st != TPS_OK) {
		tps_model_free(&model);
		return st;
	}
	for (int i = 0; i < summary->n_warnings; i++) {
		warnings[i] = summary->warnings[i];
	}
	if (symbolic) {
		st = tps_run_meta_inputs(ms, with_target, &input, &target, err);
	} else {
		st = tps_model_make_input(ms, &input, err);
	}
	if (st == TPS_OK && !symbolic && with_target) {
		st = tps_model_make_target(ms, &target, err);
	}
	lap(&t0, &stats->init_s);
	if (st == TPS_OK) {
		st = tps_trace_begin(trace, spec->normalized, err);
	}
	if (st == TPS_OK) {
		st = tps_trace_write_warnings(trace, warnings,
					      summary->n_warnings, err);
	}
	if (st == TPS_OK) {
		st = tps_trace_write_params(trace, &model, err);
	}
	if (st == TPS_OK) {
		st = tps_trace_write_inputs(trace, &input,
					    with_target ? &target : NULL, err);
	}
	if (st == TPS_OK) {
		st = tps_trace_begin_events(trace, err);
	}
	lap(&t0, &stats->trace_s);
	if (st == TPS_OK) {
		st = tps_model_emit_setup(&model, sink, err);
	}
	lap(&t0, &stats->trace_s);
	events_s = 0.0;
	if (st == TPS_OK) {
		st = tps_model_run(&model, &input, with_target ? &target : NULL,
				   sink, &sim, err);
	}
	if (st == TPS_ERR_SHAPE && ms->inject) {
		/* A mistake that breaks the shapes stops the simulation: the
		 * symptom is recorded, the trace completed without output. */
		snprintf(summary->stopped, sizeof summary->stopped, "%s",
			 err->message);
		result.stopped = summary->stopped;
		st = TPS_OK;
	}
	lap(&t0, &stats->tp_s);
	stats->tp_s -= events_s;
	stats->trace_s += events_s;
	if (st == TPS_OK) {
		st = tps_trace_end_events(trace, err);
	}
	lap(&t0, &stats->trace_s);
	if (st == TPS_OK && symbolic) {
		/* No values: nothing to compare, no reference to run. */
		result.match = true;
		st = tps_trace_write_result(trace, &result, err);
		if (st == TPS_OK) {
			summary->symbolic = true;
			summary->optimizer_states =
				ms->mode == TPS_MODE_TRAINING
					? tps_optim_state_count(&ms->optimizer)
					: 0;
			st = tps_model_footprint(&model, &summary->footprint,
						 err);
			for (int p = 0; p < TPS_PHASE_COUNT; p++) {
				summary->phase_bytes[p] = tps_trace_phase_bytes(
					trace, (enum tps_phase)p);
			}
		}
		goto finish;
	}
	if (st == TPS_OK) {
		st = tps_model_run_reference(&model, &input,
					     with_target ? &target : NULL, &ref,
					     err);
	}
	lap(&t0, &stats->reference_s);
	if (st == TPS_OK && !outcome_finite(&ref)) {
		st = tps_error_set(err, TPS_ERR_NUMERIC,
				   "the reference model's results hold a NaN "
				   "or Inf");
	}
	if (st == TPS_OK && !result.stopped && !outcome_finite(&sim)) {
		st = tps_error_set(err, TPS_ERR_NUMERIC,
				   "the simulation's results hold a NaN or "
				   "Inf");
	}
	if (st == TPS_OK) {
		if (result.stopped) {
			result.max_abs_diff = INFINITY;
		} else {
			tps_run_compare_outcomes(
				&sim, &ref, spec->atol, spec->rtol,
				&result.max_abs_diff, &result.match);
			tps_run_count_exact(&ref, &summary->exact,
					    &summary->compared);
		}
		/* A mistake the run carried out is never a match, whatever
		 * the numbers say (a tolerance can hide it). */
		if (trace->first_mistake) {
			summary->mistake_hidden = result.match;
			result.match = false;
			snprintf(summary->mistake, sizeof summary->mistake,
				 "%s", trace->first_mistake);
		}
		if (ms->inject) {
			diagnose(&model, &input, &sim, &ref,
				 result.max_abs_diff, result.stopped,
				 summary->diagnosis, sizeof summary->diagnosis);
			result.diagnosis = summary->diagnosis;
		}
		st = tps_trace_write_result(trace, &result, err);
	}
finish:
	if (st == TPS_OK) {
		st = tps_trace_finish(trace, err);
	}
	lap(&t0, &stats->trace_s);
	if (st == TPS_OK) {
		summary->events = trace->next_seq;
		summary->collectives = trace->collectives;
		summary->bytes_per_rank = trace->bytes_per_rank;
		summary->max_abs_diff = result.max_abs_diff;
		summary->match = result.match;
		summary->steps = sim.steps;
		if (sim.steps > 0 && !result.stopped && !symbolic) {
			summary->loss = sim.loss[sim.steps - 1];
			summary->reference_loss = ref.loss[ref.steps - 1];
			if (keep_losses) {
				summary->losses = sim.loss;
				summary->reference_losses = ref.loss;
				sim.loss = NULL;
				ref.loss = NULL;
			}
		}
	}
	tps_model_outcome_free(&sim);
	tps_model_outcome_free(&ref);
	tps_tensor_free(&input);
	tps_tensor_free(&target);
	tps_model_free(&model);
	return st;
}

/* need and budget for a refusal, in binary units with as many digits as it
 * takes for them not to read the same ("8.01 GiB" over "8 GiB"). */
static void format_over(int64_t need, int64_t budget, char *a, char *b,
			size_t size)
{
	for (int digits = 3; digits <= 15; digits++) {
		tps_format_bytes_digits(need, digits, a);
		tps_format_bytes_digits(budget, digits, b);
		if (strcmp(a, b) != 0) {
			return;
		}
	}
}

/* The values modes that write less than this one, for a message. */
static const char *smaller_values(enum tps_trace_values values)
{
	switch (values) {
	case TPS_TRACE_VALUES_FULL:
		return "trace values \"summary\" or \"none\", ";
	case TPS_TRACE_VALUES_SUMMARY: return "trace values \"none\", ";
	case TPS_TRACE_VALUES_NONE: break;
	}
	return "";
}

/* The trace-budget refusal, with what would make the trace smaller. */
static enum tps_status trace_over_budget(const struct tps_run_spec *spec,
					 const struct tps_run_estimate *e,
					 int64_t budget, struct tps_error *err)
{
	const char *values = smaller_values(spec->values);
	const char *steps = e->steps > 1 ? "fewer steps, " : "";
	char a[64], b[64];
	format_over(e->trace_bytes, budget, a, b, sizeof a);
	return tps_error_set(
		err, TPS_ERR_LIMIT,
		"the trace would take up to %s (%lld events over %d step%s), "
		"over the trace budget of %s (--max-trace); %s%s%s",
		a, (long long)e->events, e->steps, e->steps == 1 ? "" : "s", b,
		values, steps,
		values[0] || steps[0] ? "or a larger --max-trace"
				      : "a larger --max-trace allows it");
}

/*
 * The sizes a values run refuses before allocating, each naming the
 * config key it grows with (`file` is the config's name, escaped): an
 * output over 2^31 elements (a symbolic run's meta tensors take up to
 * 2^48, which the config checks), then the memory budget.
 */
static enum tps_status check_sizes(const struct tps_run_spec *spec,
				   const char *file, int64_t max_memory,
				   struct tps_error *err)
{
	const struct tps_model_spec *ms = &spec->model;
	struct tps_memory_part part;
	struct tps_shape shape;
	char buf[128], what[TPS_NAME_MAX + 64], a[64], b[64];
	char largest[TPS_NUMFMT_MAX];
	int64_t need;
	int i;

	/* A symbolic run's tensors are meta: they take no bytes. */
	if (spec->compute == TPS_COMPUTE_SYMBOLIC) {
		return TPS_OK;
	}
	i = tps_model_spec_output_over(ms, TPS_MAX_ELEMENTS, &shape);
	if (i >= 0) {
		return tps_error_set(
			err, TPS_ERR_LIMIT,
			"%s: %s: the output of %s, %s, has more than 2^31 "
			"elements, the most a tensor with values may have (its "
			"rows come from /input/shape; a symbolic run, "
			"--symbolic, takes up to 2^48)",
			file, ms->modules[i].width_pointer, ms->modules[i].name,
			tps_shape_format(&shape, buf, sizeof buf));
	}
	need = tps_model_estimate_largest(ms, &part);
	if (need <= max_memory) {
		return TPS_OK;
	}
	if (part.module) {
		snprintf(what, sizeof what,
			 "%s's parameters, every rank's copy or shard%s",
			 part.module,
			 ms->mode == TPS_MODE_TRAINING
				 ? ", their gradients and optimizer state"
				 : "");
	} else {
		snprintf(what, sizeof what,
			 "the activations, the input's rows (/input/shape) by "
			 "the widest output");
	}
	format_over(need, max_memory, a, b, sizeof a);
	tps_format_bytes(part.bytes, largest);
	return tps_error_set(
		err, TPS_ERR_LIMIT,
		"%s: %s: the run needs about %s, over the memory budget of %s "
		"(--max-memory); the largest part, about %s, is %s; without "
		"values, tpsim run --symbolic reports what each rank holds "
		"and tpsim comm what it sends, at any size",
		file, part.pointer, a, b, largest, what);
}

/* The config of a run: its text when given, else its file. */
static enum tps_status load_config(const struct tps_run_options *opts,
				   struct tps_run_spec *spec,
				   struct tps_error *err)
{
	cJSON *root = NULL;
	enum tps_status st;

	if (!opts->config_text) {
		return tps_config_load_with(opts->config_path, opts->overrides,
					    opts->n_overrides, spec, err);
	}
	st = tps_json_parse_strict(opts->config_path, opts->config_text,
				   opts->config_len, &root, err);
	if (st == TPS_OK) {
		st = tps_config_parse_with(root, opts->config_path,
					   opts->overrides, opts->n_overrides,
					   spec, err);
	}
	cJSON_Delete(root);
	return st;
}

void tps_run_summary_free(struct tps_run_summary *summary)
{
	if (!summary) {
		return;
	}
	free(summary->losses);
	free(summary->reference_losses);
	summary->losses = NULL;
	summary->reference_losses = NULL;
}

enum tps_status tps_run(const struct tps_run_options *opts, FILE *stream,
			struct tps_run_summary *summary, struct tps_error *err)
{
	struct tps_run_spec spec = {0};
	struct tps_run_summary s = {0};
	struct tps_trace trace;
	struct tps_outfile out = {0};
	struct tps_pool *pool = NULL;
	char esc[256];
	int64_t live;
	int steps;
	bool guarded;
	double start = now_seconds();
	enum tps_status st;

	tps_tensor_memory_reset_peak();
	st = load_config(opts, &spec, err);
	if (st != TPS_OK) {
		return st;
	}
	s.stats.init_s = now_seconds() - start;
	tps_json_escape_for_message(opts->config_path, esc, sizeof esc);
	if (opts->symbolic) {
		st = tps_config_make_symbolic(&spec, err);
		if (st != TPS_OK) {
			tps_error_prefix(err, "%s", esc);
			goto out;
		}
	}
	st = check_sizes(&spec, esc, opts->max_memory, err);
	if (st != TPS_OK) {
		goto out;
	}
	/* A symbolic run of one or two steps costs what its estimate
	 * would: it is written under the budget instead (guarded). */
	steps = spec.model.mode == TPS_MODE_TRAINING ? spec.model.steps : 1;
	guarded = spec.compute == TPS_COMPUTE_SYMBOLIC && steps <= 2;
	if (!guarded) {
		double t0 = now_seconds();
		st = tps_run_estimate(&spec, &s.estimate, err);
		s.stats.init_s += now_seconds() - t0;
		if (st == TPS_OK && s.estimate.trace_bytes > opts->max_trace) {
			st = trace_over_budget(&spec, &s.estimate,
					       opts->max_trace, err);
		}
		if (st != TPS_OK) {
			tps_error_prefix(err, "%s", esc);
			goto out;
		}
	}
	s.stats.threads =
		opts->threads > 0 ? opts->threads : tps_pool_default_threads();
	if (spec.compute == TPS_COMPUTE_SYMBOLIC) {
		/* Meta ranks do no arithmetic: handing hundreds of empty
		 * items to threads costs more than it saves. */
		s.stats.threads = 1;
	}
	st = tps_pool_new(&pool, s.stats.threads, err);
	if (st != TPS_OK) {
		goto out;
	}
	spec.model.mesh.pool = pool;
	st = tps_outfile_open(&out, opts->output_path, stream, "trace",
			      &opts->config_path,
			      !opts->config_text || opts->config_read_from_path
				      ? 1
				      : 0,
			      opts->pending, err);
	if (st != TPS_OK) {
		goto out;
	}
	tps_trace_init(&trace, out.f, spec.values, &spec.model.mesh);
	if (guarded) {
		tps_trace_set_budget(&trace, opts->max_trace, false);
	}
	st = simulate(&spec, &trace, opts->keep_losses, &s, err);
	s.stats.trace_bytes = ftell(out.f);
	if (st == TPS_OK && guarded) {
		/* Its estimate is what it wrote and counted. */
		s.estimate.trace_bytes = tps_trace_size(&trace);
		s.estimate.events = trace.next_seq;
		s.estimate.steps = steps;
		s.estimate.flops = trace.flops;
		if (s.estimate.trace_bytes > opts->max_trace) {
			st = trace_over_budget(&spec, &s.estimate,
					       opts->max_trace, err);
		}
	}
	tps_trace_free(&trace);
	if (st == TPS_ERR_IO) {
		/* Only writing the trace fails so (a full disk, a file-size
		 * limit): name the file it went to. */
		char name[256];
		tps_error_prefix(err, "%s",
				 tps_outfile_name(&out, name, sizeof name));
	} else if (st != TPS_OK) {
		/* Model messages about the plan start with the config's JSON
		 * Pointer; every run message names the config file. */
		tps_error_prefix(err, "%s", esc);
	}
	if (st == TPS_OK) {
		/* Publishing (a rename, or a copy to stdout or a device) is
		 * trace writing too. */
		double t0 = now_seconds();
		st = tps_outfile_commit(&out, err);
		lap(&t0, &s.stats.trace_s);
	} else {
		tps_outfile_discard(&out);
	}
	if (st == TPS_OK) {
		describe_mesh(&spec.model.mesh, s.mesh, sizeof s.mesh);
		s.world_size = spec.model.mesh.world_size;
		s.n_modules = spec.model.n_modules;
		s.stats.total_s = now_seconds() - start;
		tps_tensor_memory(&live, &s.stats.tensor_peak_bytes);
		s.stats.peak_rss_bytes = peak_rss_bytes();
		*summary = s;
	}
out:
	if (st != TPS_OK) {
		tps_run_summary_free(&s);
	}
	tps_pool_free(pool);
	tps_run_spec_free(&spec);
	return st;
}
