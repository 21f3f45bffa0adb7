/*
 * A run's trace size and work, before it starts (run.h).
 *
 * The trace writer itself does the counting: the engine runs the setup and
 * the first two steps on meta tensors, and the trace, in estimate mode
 * (trace.h), writes everything but values into a stream that only counts
 * bytes, and counts each value at its longest. Step 0 can differ from the
 * rest (the tp-root broadcast happens then), steps 1 and later are alike
 * but for the numbers in them; so a longer run is the counted two steps
 * plus step 1 again for each later step, its seq and step numbers taken at
 * the digits of the last ones, and the comm counts scaled by the steps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_internal.h"
#include "arith.h"
#include "numfmt.h"
#include "trace.h"

/* Decimal digits of n >= 0. */
static int64_t digits(int64_t n)
{
	int64_t d = 1;
	while (n >= 10) {
		n /= 10;
		d++;
	}
	return d;
}

/* What the events of the dry run took, by step. */
struct counting {
	struct tps_trace *trace;
	FILE *f;
	int64_t written;      /* bytes through f */
	int64_t bytes[2];     /* the events of steps 0 and 1 */
	int64_t events[3];    /* setup, steps 0 and 1 */
	int64_t flops[3];     /* likewise, every rank */
	int64_t seq_digits_1; /* of step 1's seqs as written */
};

/* Bytes so far: written and counted. */
static int64_t position(struct counting *c)
{
	fflush(c->f);
	return tps_sat_add(c->written, c->trace->bound_bytes);
}

static enum tps_status count_event(void *ctx, const struct tps_event *ev,
				   struct tps_error *err)
{
	struct counting *c = ctx;
	int64_t before = position(c), seq = c->trace->next_seq;
	/* setup, then the dry run's steps 0 and 1 */
	int k = ev->step < 0 ? 0 : ev->step < 1 ? 1 : 2;
	enum tps_status st = tps_event_emit(tps_trace_sink(c->trace), ev, err);
	if (st != TPS_OK) {
		return st;
	}
	c->events[k]++;
	c->flops[k] =
		tps_sat_add(c->flops[k],
			    tps_sat_mul(ev->flops, c->trace->mesh->world_size));
	if (k > 0) {
		c->bytes[k - 1] =
			tps_sat_add(c->bytes[k - 1], position(c) - before);
	}
	if (k == 2) {
		c->seq_digits_1 += digits(seq);
	}
	return TPS_OK;
}

/* The comm counts of a run `factor` times as long (each is at most that:
 * digits only). */
static void scale_comm(struct tps_trace *t, int64_t factor)
{
	t->collectives = tps_sat_mul(t->collectives, factor);
	t->bytes_per_rank = tps_sat_mul(t->bytes_per_rank, factor);
	for (size_t i = 0; i < t->n_tallies; i++) {
		t->tallies[i].count = tps_sat_mul(t->tallies[i].count, factor);
		t->tallies[i].bytes_per_rank =
			tps_sat_mul(t->tallies[i].bytes_per_rank, factor);
	}
}

/* The text of a later step's loss in result.comparison and
 * result.bounds, but for its reason and its four numbers. */
#define LATER_LOSS_TEXT                                                       \
	",\"tolerance\",{\"rule\":\"tolerance\",\"bound\":\"none\","         \
	"\"reason\":\"\",\"max_abs_diff\":,\"tolerance\":,\"ratio\":,"       \
	"\"at\":[0],\"diff_at\":,\"outside\":1}"

/* One compared tensor at its longest in the trace: its last element the
 * worst, every element outside, no bound for the longest reason. */
static void longest_figures(struct tps_compare_tensor *c, const char *section,
			    int index, const struct tps_shape *shape,
			    size_t reason)
{
	int64_t n = 1;
	for (int d = 0; d < shape->ndim; d++) {
		n *= shape->dim[d];
	}
	c->section = section;
	c->index = index;
	c->shape = *shape;
	c->rule = TPS_COMPARE_TOLERANCE;
	memset(c->none, 'x', reason);
	c->none[reason] = '\0';
	c->ratio = 1.0;
	c->at = n > 0 ? n - 1 : -1;
	c->outside = n;
}

/* The comparison a values run writes, each tensor at its longest (the
 * estimate's values are counted at their longest, names exactly). */
static enum tps_status estimate_comparison(const struct tps_model *model,
					   const struct tps_model_outcome *sim,
					   const struct tps_shape *oshape,
					   struct tps_comparison *out,
					   struct tps_error *err)
{
	struct tps_comparison c = {0};
	int64_t one = 1;
	struct tps_shape scalar = tps_shape_make(1, &one);
	size_t reason = tps_model_bound_reason_max(model->spec);
	int k = 0;
	c.n = 1 + sim->steps + sim->n_grads + sim->n_params;
	c.t = calloc((size_t)c.n, sizeof *c.t);
	if (!c.t) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	tps_run_output_name(model, c.t[k].name, sizeof c.t[k].name);
	longest_figures(&c.t[k++], "output", 0, oshape, reason);
	for (int i = 0; i < sim->steps; i++) {
		longest_figures(&c.t[k++], "loss", i, &scalar, reason);
	}
	for (int i = 0; i < sim->n_grads; i++) {
		snprintf(c.t[k].name, sizeof c.t[k].name, "%s.grad",
			 i < model->n_params ? model->params[i].name
					     : "input");
		longest_figures(&c.t[k++], "grads", i,
				i < model->n_params
					? &model->params[i].global.shape
					: &model->spec->input_shape,
				reason);
	}
	for (int i = 0; i < sim->n_params; i++) {
		snprintf(c.t[k].name, sizeof c.t[k].name, "%s",
			 model->params[i].name);
		longest_figures(&c.t[k++], "params_after", i,
				&model->params[i].global.shape, reason);
	}
	*out = c;
	return TPS_OK;
}

/* The result a values run writes: the simulation's outcome beside the
 * reference's (shaped as the model's output), numbers at their longest. */
static enum tps_status write_values_result(struct tps_trace *t,
					   const struct tps_model *model,
					   const struct tps_model_outcome *sim,
					   const char *stopped,
					   struct tps_error *err)
{
	struct tps_model_outcome ref = *sim;
	struct tps_shape oshape = tps_model_output_shape(model->spec);
	struct tps_trace_result result = {.model = model,
					  .sim = sim,
					  .ref = &ref,
					  .stopped = stopped};
	struct tps_comparison c = {0};
	char verdict[sizeof ((struct tps_run_summary *)0)->words];
	enum tps_status st = tps_tensor_init_meta(&ref.output, &oshape, err);
	if (st == TPS_OK && !stopped) {
		st = estimate_comparison(model, sim, &oshape, &c, err);
	}
	if (st == TPS_OK && !stopped) {
		/* run_verdict.c's longest sentence: 200 bytes of words and
		 * numbers, an element and a reason. */
		size_t n = 200 + tps_model_bound_reason_max(model->spec);
		size_t name = 0;
		for (int i = 0; i < c.n; i++) {
			size_t len = strlen(c.t[i].name) + 24;
			for (int d = 0; d < c.t[i].shape.ndim; d++) {
				len += 2 + (size_t)digits(c.t[i].shape.dim[d]);
			}
			name = len > name ? len : name;
		}
		n += name;
		n = n < sizeof verdict ? n : sizeof verdict - 1;
		memset(verdict, 'x', n);
		verdict[n] = '\0';
		result.comparison = &c;
		result.verdict = verdict;
	}
	if (st == TPS_OK) {
		st = tps_trace_write_result(t, &result, err);
	}
	tps_run_comparison_free(&c);
	tps_tensor_free(&ref.output);
	return st;
}

enum tps_status tps_run_estimate(const struct tps_run_spec *spec,
				 struct tps_run_estimate *out,
				 struct tps_error *err)
{
	/* The dry run's spec: at most two steps, no threads (meta ranks do
	 * no arithmetic); it shares the spec's arrays. */
	struct tps_model_spec ms = spec->model;
	bool training = ms.mode == TPS_MODE_TRAINING;
	bool symbolic = spec->compute == TPS_COMPUTE_SYMBOLIC;
	bool with_target = training && ms.loss != TPS_LOSS_SUM;
	int steps = training ? ms.steps : 1;
	struct counting c = {0};
	struct tps_trace trace;
	struct tps_model model = {0};
	struct tps_tensor input = {0}, target = {0};
	struct tps_model_outcome sim = {0};
	struct tps_run_summary *summary = NULL;
	const char *warnings[TPS_RUN_MAX_WARNINGS];
	char stopped[TPS_ERROR_MESSAGE_MAX] = "";
	struct tps_event_sink sink = {count_event, &c};
	struct tps_run_estimate e = {0};
	int64_t later = 0, per_step;
	enum tps_status st;

	ms.steps = steps < 2 ? steps : 2;
	ms.mesh.pool = NULL;
	ms.mesh.backend = NULL;
	c.f = tps_trace_counter_open(&c.written);
	summary = calloc(1, sizeof *summary);
	if (!c.f || !summary) {
		if (c.f) {
			fclose(c.f);
		}
		free(summary);
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	tps_trace_init_estimate(&trace, c.f, spec->values, &ms.mesh, !symbolic);
	c.trace = &trace;
	st = tps_model_init_meta(&model, &ms, err);
	if (st == TPS_OK) {
		st = tps_run_meta_inputs(&ms, with_target, &input, &target,
					 err);
	}
	if (st == TPS_OK) {
		st = tps_run_collect_warnings(spec, &model, summary, err);
	}
	if (st == TPS_OK) {
		for (int i = 0; i < summary->n_warnings; i++) {
			warnings[i] = summary->warnings[i];
		}
		st = tps_trace_begin(&trace, spec->normalized, err);
	}
	if (st == TPS_OK) {
		st = tps_trace_write_warnings(&trace, warnings,
					      summary->n_warnings, err);
	}
	if (st == TPS_OK) {
		st = tps_trace_write_params(&trace, &model, err);
	}
	if (st == TPS_OK) {
		st = tps_trace_write_inputs(&trace, &spec->model, &input,
					    with_target ? &target : NULL, err);
	}
	if (st == TPS_OK) {
		st = tps_trace_begin_events(&trace, err);
	}
	if (st == TPS_OK) {
		st = tps_model_emit_setup(&model, sink, err);
	}
	if (st == TPS_OK) {
		st = tps_model_run(&model, &input, with_target ? &target : NULL,
				   sink, &sim, err);
	}
	if (st == TPS_ERR_SHAPE && ms.inject && !symbolic) {
		/* As the run will: the mistake stops it here (run.c). */
		snprintf(stopped, sizeof stopped, "%s", err->message);
		st = TPS_OK;
		steps = 1;
	}
	if (st == TPS_OK) {
		st = tps_trace_end_events(&trace, err);
	}
	if (st == TPS_OK && steps > 2) {
		/* Step 1 again for each later step: its seqs and step numbers
		 * at the digits of the last ones. */
		int64_t events = c.events[0] + c.events[1] +
				 (int64_t)(steps - 1) * c.events[2];
		later = steps - 2;
		per_step =
			c.bytes[1] - c.seq_digits_1 - c.events[2] +
			c.events[2] * (digits(events - 1) + digits(steps - 1));
		e.events = events;
		scale_comm(&trace, steps);
	} else {
		e.events = c.events[0] + c.events[1] + c.events[2];
		per_step = 0;
	}
	if (st == TPS_OK && symbolic) {
		struct tps_trace_result result = {.model = &model,
						  .sim = &sim,
						  .match = true,
						  .symbolic = true};
		st = tps_trace_write_result(&trace, &result, err);
	} else if (st == TPS_OK) {
		st = write_values_result(&trace, &model, &sim,
					 stopped[0] ? stopped : NULL, err);
	}
	if (st == TPS_OK) {
		st = tps_trace_finish(&trace, err);
	}
	if (st == TPS_OK) {
		e.steps = steps;
		e.trace_bytes =
			tps_sat_add(position(&c), tps_sat_mul(later, per_step));
		if (training && !symbolic) {
			/* "loss" and "reference_loss": a number and a comma
			 * each per later step. */
			e.trace_bytes = tps_sat_add(
				e.trace_bytes,
				tps_sat_mul(2 * later,
					    TPS_NUMFMT_FLOAT_LEN_MAX + 1));
			/* And each one's comparison (,"tolerance") and
			 * figures at their longest. */
			e.trace_bytes = tps_sat_add(
				e.trace_bytes,
				tps_sat_mul(later,
					    (int64_t)strlen(LATER_LOSS_TEXT) +
						    (int64_t)tps_model_bound_reason_max(
							    &ms) +
						    4 * TPS_NUMFMT_FLOAT_LEN_MAX));
		}
		if (ms.inject && !symbolic) {
			/* ,"diagnosis":"..." of at most 1023 characters,
			 * each escaped to at most 6. */
			e.trace_bytes = tps_sat_add(
				e.trace_bytes,
				15 + 6 * (int64_t)(sizeof summary->diagnosis -
						   1));
		}
		e.flops = tps_sat_add(
			tps_sat_add(c.flops[0], c.flops[1]),
			tps_sat_mul(steps > 1 ? steps - 1 : 0, c.flops[2]));
		*out = e;
	}
	tps_model_outcome_free(&sim);
	tps_tensor_free(&input);
	tps_tensor_free(&target);
	tps_model_free(&model);
	tps_trace_free(&trace);
	fclose(c.f);
	free(summary);
	return st;
}
