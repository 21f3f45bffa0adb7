/*
 * The error bounds of a run that already happened (run.h): the trace's
 * embedded normalised config read back into a spec, and the bound pass of
 * docs/numerics.md run for it, the reference alone (no simulation, no
 * trace), each bound reported to a sink under the name the trace's events
 * give the tensor. Traces do not carry per-element bounds (a full trace
 * would double), so `tpsim diff` and `tpsim plot` recompute them here.
 */
#include "run.h"

#include <math.h>
#include <string.h>

#include "jsonio.h"
#include "pool.h"
#include "trace.h"

enum tps_status tps_run_trace_spec(const cJSON *trace, const char *trace_name,
				   bool need_values, struct tps_run_spec *spec,
				   struct tps_error *err)
{
	const cJSON *config = cJSON_GetObjectItemCaseSensitive(trace, "config");
	struct tps_run_spec s = {0};
	char pointer[TPS_ERROR_POINTER_MAX + 16];
	enum tps_status st = tps_config_parse(config, trace_name, &s, err);
	if (st != TPS_OK) {
		/* The config's pointers are the trace's below /config. */
		if (err->at) {
			struct tps_error e = *err;
			snprintf(pointer, sizeof pointer, "/config%s",
				 e.pointer);
			tps_error_set_at(err, st, trace_name, pointer, "%s",
					 e.message + e.what);
		}
		return st;
	}
	if (s.compute == TPS_COMPUTE_SYMBOLIC) {
		tps_run_spec_free(&s);
		return tps_error_set_at(err, TPS_ERR_INPUT, trace_name,
					"/config/compute",
					"expected a trace with values, got a "
					"symbolic one (it has no values to "
					"compare)");
	}
	if (need_values && s.values != TPS_TRACE_VALUES_FULL) {
		tps_run_spec_free(&s);
		return tps_error_set_at(
			err, TPS_ERR_INPUT, trace_name, "/config/trace/values",
			"expected \"full\" (every value, to compare element "
			"by element), got \"%s\"",
			s.values == TPS_TRACE_VALUES_SUMMARY ? "summary"
							     : "none");
	}
	*spec = s;
	return TPS_OK;
}

/*
 * The bound of a given value (a parameter's initial value, the input, the
 * target) as a run stores it: 0 in float32, which holds the config's
 * values as they are; else the rounding to the storage dtype d, within
 * u |x| of the given float32 x, and |x| <= |fl(x)| / (1 - u), so u / (1 -
 * u) |fl(x)|, rounded up. A run of another dtype starts from other bits:
 * this is how far apart their given values may be.
 */
static enum tps_status given_bound(struct tps_bound *b,
				   const struct tps_tensor *v, enum tps_dtype d,
				   struct tps_error *err)
{
	double u = tps_dtype_unit_roundoff(d);
	enum tps_status st = tps_bound_zero(b, &v->shape, err);
	if (st != TPS_OK || d == TPS_DTYPE_F32) {
		return st;
	}
	for (int64_t i = 0; i < tps_tensor_numel(v); i++) {
		b->e.data[i] =
			tps_bound_up(u / (1.0 - u) * fabs((double)v->data[i]));
	}
	return TPS_OK;
}

/* Reports every parameter's initial value, given by the config (phase
 * setup, step -1), with the bound of its storage. */
static enum tps_status emit_setup(const struct tps_model *model,
				  struct tps_bound_sink sink,
				  struct tps_error *err)
{
	enum tps_dtype d = model->spec->dtypes.of[TPS_ROLE_PARAMS];
	enum tps_status st = TPS_OK;
	for (int i = 0; i < model->n_params && st == TPS_OK; i++) {
		const struct tps_param *p = &model->params[i];
		struct tps_bound given = {0};
		struct tps_bound_event ev = {-1, TPS_PHASE_SETUP, p->name,
					     &p->global, &given};
		st = given_bound(&given, &p->global, d, err);
		if (st == TPS_OK) {
			st = sink.emit(sink.ctx, &ev, err);
		}
		tps_bound_free(&given);
	}
	return st;
}

/* Reports the input and the target, given, with the bound of their
 * storage under each step's forward: a dp run's trace splits them at
 * every step. */
static enum tps_status emit_inputs(const struct tps_model_spec *ms,
				   const struct tps_tensor *input,
				   const struct tps_tensor *target,
				   struct tps_bound_sink sink,
				   struct tps_error *err)
{
	int steps = ms->mode == TPS_MODE_TRAINING ? ms->steps : 1;
	struct tps_bound zi = {0}, zt = {0};
	enum tps_status st =
		given_bound(&zi, input, tps_model_input_dtype(ms), err);
	if (st == TPS_OK && target) {
		st = given_bound(&zt, target, tps_model_target_dtype(ms), err);
	}
	for (int s = 0; s < steps && st == TPS_OK; s++) {
		struct tps_bound_event ev = {s, TPS_PHASE_FORWARD, "input",
					     input, &zi};
		st = sink.emit(sink.ctx, &ev, err);
		if (st == TPS_OK && target) {
			ev.tensor = "target";
			ev.value = target;
			ev.bound = &zt;
			st = sink.emit(sink.ctx, &ev, err);
		}
	}
	tps_bound_free(&zi);
	tps_bound_free(&zt);
	return st;
}

enum tps_status tps_run_bound_pass(struct tps_run_spec *spec, int threads,
				   struct tps_bound_sink sink, int *dp,
				   struct tps_error *err)
{
	struct tps_model_spec *ms = &spec->model;
	struct tps_model model = {0};
	struct tps_tensor input = {0}, target = {0};
	struct tps_model_outcome ref = {0};
	struct tps_pool *pool = NULL;
	bool with_target =
		ms->mode == TPS_MODE_TRAINING && ms->loss != TPS_LOSS_SUM;
	bool model_made = false;
	enum tps_status st = tps_pool_new(
		&pool, threads > 0 ? threads : tps_pool_default_threads(), err);

	if (st == TPS_OK) {
		ms->mesh.pool = pool;
		st = tps_model_init(&model, ms, err);
		model_made = st == TPS_OK;
	}
	if (st == TPS_OK) {
		st = tps_model_make_input(ms, &input, err);
	}
	if (st == TPS_OK && with_target) {
		st = tps_model_make_target(ms, &target, err);
	}
	if (st == TPS_OK && sink.emit) {
		st = emit_setup(&model, sink, err);
	}
	if (st == TPS_OK && sink.emit) {
		st = emit_inputs(ms, &input, with_target ? &target : NULL, sink,
				 err);
	}
	if (st == TPS_OK) {
		st = tps_model_run_reference(&model, &input,
					     with_target ? &target : NULL, sink,
					     &ref, err);
	}
	if (st == TPS_OK && dp) {
		*dp = model.dp;
	}
	tps_model_outcome_free(&ref);
	tps_tensor_free(&input);
	tps_tensor_free(&target);
	if (model_made) {
		tps_model_free(&model);
	}
	ms->mesh.pool = NULL;
	tps_pool_free(pool);
	return st;
}
