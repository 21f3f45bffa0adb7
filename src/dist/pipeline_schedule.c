/* Pipeline schedules: Megatron's orders and their timeline in unit slots
 * (docs/pipeline.md). */
#include "pipeline_schedule.h"

#include <assert.h>
#include <stdlib.h>

const char *const tps_pp_schedule_names[] = {
	[TPS_PP_GPIPE] = "gpipe",
	[TPS_PP_1F1B] = "1f1b",
	[TPS_PP_INTERLEAVED_1F1B] = "interleaved_1f1b",
	[TPS_PP_SCHEDULE_COUNT] = NULL,
};
static_assert(sizeof tps_pp_schedule_names / sizeof tps_pp_schedule_names[0] ==
		      TPS_PP_SCHEDULE_COUNT + 1,
	      "one name per schedule, then NULL");

const char *tps_pp_schedule_name(enum tps_pp_schedule schedule)
{
	assert(schedule >= 0 && schedule < TPS_PP_SCHEDULE_COUNT);
	return tps_pp_schedule_names[schedule];
}

static enum tps_status check_input(enum tps_pp_schedule schedule, int p, int m,
				   int v, struct tps_error *err)
{
	const char *name = tps_pp_schedule_name(schedule);
	int64_t mv = (int64_t)m * v;
	if (p < 1) {
		return tps_error_set(err, TPS_ERR_INPUT,
				     "pipeline: stages (p) must be at least 1, "
				     "got %d",
				     p);
	}
	if (m < 1) {
		return tps_error_set(err, TPS_ERR_INPUT,
				     "pipeline: microbatches (m) must be at "
				     "least 1, got %d",
				     m);
	}
	if (v < 1) {
		return tps_error_set(err, TPS_ERR_INPUT,
				     "pipeline: virtual_stages (v) must be at "
				     "least 1, got %d",
				     v);
	}
	if (schedule != TPS_PP_INTERLEAVED_1F1B && v != 1) {
		return tps_error_set(
			err, TPS_ERR_INPUT,
			"pipeline: virtual_stages %d with schedule "
			"%s (expected 1: only interleaved_1f1b has "
			"virtual stages)",
			v, name);
	}
	if (schedule == TPS_PP_INTERLEAVED_1F1B && v < 2) {
		return tps_error_set(err, TPS_ERR_INPUT,
				     "pipeline: interleaved_1f1b needs "
				     "virtual_stages >= 2, got %d (with 1 "
				     "chunk, use 1f1b)",
				     v);
	}
	if (schedule == TPS_PP_INTERLEAVED_1F1B && m % p != 0) {
		return tps_error_set(
			err, TPS_ERR_INPUT,
			"pipeline: microbatches %d not a multiple "
			"of stages %d (expected a multiple: %s, as "
			"Megatron requires)",
			m, p, name);
	}
	if (p > TPS_PP_MAX_STAGES) {
		return tps_error_set(err, TPS_ERR_LIMIT,
				     "pipeline: stages %d past the limit %d", p,
				     TPS_PP_MAX_STAGES);
	}
	if (mv > TPS_PP_MAX_CHUNK_MICROBATCHES) {
		return tps_error_set(err, TPS_ERR_LIMIT,
				     "pipeline: microbatches x virtual_stages "
				     "%lld past the limit %d",
				     (long long)mv,
				     TPS_PP_MAX_CHUNK_MICROBATCHES);
	}
	if (mv * p > TPS_PP_MAX_OPS_HALF) {
		return tps_error_set(err, TPS_ERR_LIMIT,
				     "pipeline: stages x microbatches x "
				     "virtual_stages %lld past the limit %d",
				     (long long)(mv * p), TPS_PP_MAX_OPS_HALF);
	}
	return TPS_OK;
}

static int min_int(int a, int b)
{
	return a < b ? a : b;
}

/* Megatron's interleaved numbering (get_model_chunk_id and the microbatch
 * of a virtual microbatch id): chunk forwards go in groups of p
 * microbatches, chunk by chunk; backwards visit the chunks in reverse. */
static int interleaved_chunk(int k, int p, int v, enum tps_pp_op_kind kind)
{
	int c = (k % (p * v)) / p;
	return kind == TPS_PP_FORWARD ? c : v - 1 - c;
}

static int interleaved_microbatch(int k, int p, int v)
{
	return (k / (p * v)) * p + k % p;
}

/* Appends the next forward (or backward) of the stage's order: number k of
 * its kind. */
static void append(struct tps_pp_stage *st, enum tps_pp_schedule schedule,
		   int p, int v, enum tps_pp_op_kind kind, int k)
{
	struct tps_pp_op *op = &st->ops[st->n_ops++];
	op->kind = kind;
	if (schedule == TPS_PP_INTERLEAVED_1F1B) {
		op->microbatch = interleaved_microbatch(k, p, v);
		op->chunk = interleaved_chunk(k, p, v, kind);
	} else {
		op->microbatch = k;
		op->chunk = 0;
	}
}

/* Stage s's order: GPipe's all forwards then all backwards; 1F1B's and
 * interleaved 1F1B's warm-up forwards, forward-backward pairs, cool-down
 * backwards (megatron/core/pipeline_parallel/schedules.py). */
static void order_stage(struct tps_pp_stage *st, enum tps_pp_schedule schedule,
			int p, int m, int v, int s)
{
	int total = m * v, warmup, f = 0, b = 0;
	switch (schedule) {
	case TPS_PP_GPIPE: warmup = total; break;
	case TPS_PP_1F1B: warmup = min_int(p - s - 1, total); break;
	case TPS_PP_INTERLEAVED_1F1B:
		warmup = m == p ? total
				: min_int((p - s - 1) * 2 + (v - 1) * p, total);
		break;
	default: assert(!"schedule outside the enum"); return;
	}
	while (f < warmup) {
		append(st, schedule, p, v, TPS_PP_FORWARD, f++);
	}
	while (f < total) {
		append(st, schedule, p, v, TPS_PP_FORWARD, f++);
		append(st, schedule, p, v, TPS_PP_BACKWARD, b++);
	}
	while (b < total) {
		append(st, schedule, p, v, TPS_PP_BACKWARD, b++);
	}
}

/* Index of (kind, virtual stage, microbatch) in the table of ends. */
static size_t end_index(int p, int m, int v, enum tps_pp_op_kind kind, int vs,
			int mb)
{
	return ((size_t)kind * (size_t)(p * v) + (size_t)vs) * (size_t)m +
	       (size_t)mb;
}

/* Times every stage's ops: each starts at max(its stage's last end, its
 * dependency's end), sweeping the stages until none can run another op.
 * The orders above never wait on each other in a cycle, so every op runs
 * (an assert). ends: 2 p v m entries, -1 each; next and free_at: p
 * zeros each, the next op of each stage and when the stage is free. */
static void time_plan(struct tps_pp_plan *plan, int64_t *ends, int *next,
		      int64_t *free_at)
{
	int p = plan->p, m = plan->m, v = plan->v, last = p * v - 1;
	int ran = 1;
	while (ran) {
		ran = 0;
		for (int s = 0; s < p; s++) {
			struct tps_pp_stage *st = &plan->stages[s];
			for (; next[s] < st->n_ops; next[s]++) {
				struct tps_pp_op *op = &st->ops[next[s]];
				int vs = op->chunk * p + s;
				int64_t dep = 0;
				if (op->kind == TPS_PP_FORWARD && vs > 0) {
					dep = ends[end_index(
						p, m, v, TPS_PP_FORWARD, vs - 1,
						op->microbatch)];
				} else if (op->kind == TPS_PP_BACKWARD) {
					dep = ends[end_index(
						p, m, v,
						vs == last ? TPS_PP_FORWARD
							   : TPS_PP_BACKWARD,
						vs == last ? vs : vs + 1,
						op->microbatch)];
				}
				if (dep < 0) {
					break;
				}
				op->start = dep > free_at[s] ? dep : free_at[s];
				op->end = op->start +
					  (op->kind == TPS_PP_FORWARD
						   ? TPS_PP_FORWARD_SLOTS
						   : TPS_PP_BACKWARD_SLOTS);
				ends[end_index(p, m, v, op->kind, vs,
					       op->microbatch)] = op->end;
				free_at[s] = op->end;
				st->busy += op->end - op->start;
				ran = 1;
			}
		}
	}
	for (int s = 0; s < p; s++) {
		assert(next[s] == plan->stages[s].n_ops);
		if (free_at[s] > plan->span) {
			plan->span = free_at[s];
		}
	}
}

static int peak_in_flight(const struct tps_pp_stage *st)
{
	int now = 0, peak = 0;
	for (int i = 0; i < st->n_ops; i++) {
		now += st->ops[i].kind == TPS_PP_FORWARD ? 1 : -1;
		if (now > peak) {
			peak = now;
		}
	}
	return peak;
}

enum tps_status tps_pp_plan_init(struct tps_pp_plan *plan,
				 enum tps_pp_schedule schedule, int p, int m,
				 int v, struct tps_error *err)
{
	struct tps_pp_plan out = {.schedule = schedule, .p = p, .m = m, .v = v};
	int64_t *ends = NULL;
	int *next = NULL;
	int64_t *free_at = NULL;
	size_t n_ends;
	enum tps_status st = check_input(schedule, p, m, v, err);
	if (st != TPS_OK) {
		goto out;
	}
	n_ends = 2 * (size_t)p * (size_t)v * (size_t)m;
	out.stages = calloc((size_t)p, sizeof *out.stages);
	ends = malloc(n_ends * sizeof *ends);
	next = calloc((size_t)p, sizeof *next);
	free_at = calloc((size_t)p, sizeof *free_at);
	if (out.stages == NULL || ends == NULL || next == NULL ||
	    free_at == NULL) {
		st = tps_error_set(err, TPS_ERR_NOMEM,
				   "pipeline: out of memory for %d stages of "
				   "%d operations",
				   p, 2 * m * v);
		goto out;
	}
	for (int s = 0; s < p; s++) {
		out.stages[s].ops =
			calloc((size_t)(2 * m * v), sizeof *out.stages[s].ops);
		if (out.stages[s].ops == NULL) {
			st = tps_error_set(err, TPS_ERR_NOMEM,
					   "pipeline: out of memory for %d "
					   "stages of %d operations",
					   p, 2 * m * v);
			goto out;
		}
		order_stage(&out.stages[s], schedule, p, m, v, s);
		assert(out.stages[s].n_ops == 2 * m * v);
	}
	for (size_t i = 0; i < n_ends; i++) {
		ends[i] = -1;
	}
	time_plan(&out, ends, next, free_at);
	for (int s = 0; s < p; s++) {
		out.stages[s].idle = out.span - out.stages[s].busy;
		out.stages[s].peak_in_flight = peak_in_flight(&out.stages[s]);
	}
	*plan = out;
	out.stages = NULL;
out:
	tps_pp_plan_free(&out);
	free(ends);
	free(next);
	free(free_at);
	return st;
}

void tps_pp_plan_free(struct tps_pp_plan *plan)
{
	if (plan == NULL || plan->stages == NULL) {
		return;
	}
	for (int s = 0; s < plan->p; s++) {
		free(plan->stages[s].ops);
	}
	free(plan->stages);
	plan->stages = NULL;
}
