/* pipeline_schedule: Megatron's orders, the timeline in unit slots, the
 * bubble fractions of Narayanan et al. 2021 and the in-flight peaks
 * (docs/pipeline.md). */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "testutil.h"
#include "pipeline_schedule.h"

static struct tps_pp_plan make(enum tps_pp_schedule schedule, int p, int m,
			       int v)
{
	struct tps_pp_plan plan;
	struct tps_error err = {0};
	enum tps_status st = tps_pp_plan_init(&plan, schedule, p, m, v, &err);
	ck_assert_msg(st == TPS_OK, "%s p %d m %d v %d: %s",
		      tps_pp_schedule_name(schedule), p, m, v, err.message);
	return plan;
}

static int min_int(int a, int b)
{
	return a < b ? a : b;
}

static int64_t slots(const struct tps_pp_op *op)
{
	return op->kind == TPS_PP_FORWARD ? TPS_PP_FORWARD_SLOTS
					  : TPS_PP_BACKWARD_SLOTS;
}

/* The op of kind on stage s for (microbatch, chunk); fails unless there is
 * exactly one. */
static const struct tps_pp_op *find(const struct tps_pp_plan *plan, int s,
				    enum tps_pp_op_kind kind, int mb, int c)
{
	const struct tps_pp_op *found = NULL;
	const struct tps_pp_stage *st = &plan->stages[s];
	for (int i = 0; i < st->n_ops; i++) {
		const struct tps_pp_op *op = &st->ops[i];
		if (op->kind == kind && op->microbatch == mb &&
		    op->chunk == c) {
			ck_assert_msg(found == NULL,
				      "stage %d: %s of microbatch %d chunk %d "
				      "twice",
				      s, kind == TPS_PP_FORWARD ? "F" : "B", mb,
				      c);
			found = op;
		}
	}
	ck_assert_msg(found != NULL,
		      "stage %d: no %s of microbatch %d chunk %d", s,
		      kind == TPS_PP_FORWARD ? "F" : "B", mb, c);
	return found;
}

/* The end of op's dependency (docs/pipeline.md), or 0 if it has none. */
static int64_t dependency_end(const struct tps_pp_plan *plan, int s,
			      const struct tps_pp_op *op)
{
	int p = plan->p, vs = op->chunk * p + s, last = p * plan->v - 1;
	if (op->kind == TPS_PP_FORWARD) {
		if (vs == 0) {
			return 0;
		}
		return find(plan, (vs - 1) % p, TPS_PP_FORWARD, op->microbatch,
			    (vs - 1) / p)
			->end;
	}
	if (vs == last) {
		return find(plan, s, TPS_PP_FORWARD, op->microbatch, op->chunk)
			->end;
	}
	return find(plan, (vs + 1) % p, TPS_PP_BACKWARD, op->microbatch,
		    (vs + 1) / p)
		->end;
}

/* Every property the timeline promises, on every stage: one forward and one
 * backward of each (microbatch, chunk), the forward first; each op starts
 * when its stage is free and its dependency has ended, not later; busy
 * 3 m v, idle span - busy; and idle / busy == (p - 1) / (v m) exactly
 * (v = 1 for gpipe and 1f1b), as a cross product of integers. */
static void check_plan(const struct tps_pp_plan *plan)
{
	int p = plan->p, m = plan->m, v = plan->v;
	int64_t span = 0;
	for (int s = 0; s < p; s++) {
		const struct tps_pp_stage *st = &plan->stages[s];
		int64_t free_at = 0, busy = 0;
		ck_assert_int_eq(st->n_ops, 2 * m * v);
		for (int i = 0; i < st->n_ops; i++) {
			const struct tps_pp_op *op = &st->ops[i];
			int64_t dep = dependency_end(plan, s, op);
			int64_t want = dep > free_at ? dep : free_at;
			ck_assert_msg(op->start == want,
				      "%s p %d m %d v %d stage %d op %d: "
				      "starts at %lld, expected %lld",
				      tps_pp_schedule_name(plan->schedule), p,
				      m, v, s, i, (long long)op->start,
				      (long long)want);
			ck_assert_int_eq(op->end, op->start + slots(op));
			free_at = op->end;
			busy += slots(op);
		}
		for (int mb = 0; mb < m; mb++) {
			for (int c = 0; c < v; c++) {
				const struct tps_pp_op *f =
					find(plan, s, TPS_PP_FORWARD, mb, c);
				const struct tps_pp_op *b =
					find(plan, s, TPS_PP_BACKWARD, mb, c);
				ck_assert(f < b);
				ck_assert_int_le(f->end, b->start);
			}
		}
		ck_assert_int_eq(st->busy, busy);
		ck_assert_int_eq(busy, 3 * (int64_t)m * v);
		if (free_at > span) {
			span = free_at;
		}
	}
	ck_assert_int_eq(plan->span, span);
	for (int s = 0; s < p; s++) {
		const struct tps_pp_stage *st = &plan->stages[s];
		ck_assert_int_eq(st->idle, span - st->busy);
		ck_assert_msg(st->idle * v * m == st->busy * (p - 1),
			      "%s p %d m %d v %d stage %d: bubble %lld/%lld, "
			      "expected (p - 1) / (v m) = %d/%d",
			      tps_pp_schedule_name(plan->schedule), p, m, v, s,
			      (long long)st->idle, (long long)st->busy, p - 1,
			      v * m);
	}
}

START_TEST(pp_gpipe_and_1f1b_bubble_is_p_minus_1_over_m)
{
	const enum tps_pp_schedule scheds[2] = {TPS_PP_GPIPE, TPS_PP_1F1B};
	for (int k = 0; k < 2; k++) {
		for (int p = 1; p <= 4; p++) {
			for (int m = 1; m <= 8; m++) {
				struct tps_pp_plan plan =
					make(scheds[k], p, m, 1);
				check_plan(&plan);
				tps_pp_plan_free(&plan);
			}
		}
	}
}
END_TEST

START_TEST(pp_interleaved_bubble_is_p_minus_1_over_v_m)
{
	for (int v = 2; v <= 3; v++) {
		for (int p = 1; p <= 4; p++) {
			for (int m = p; m <= 8; m += p) {
				struct tps_pp_plan plan =
					make(TPS_PP_INTERLEAVED_1F1B, p, m, v);
				check_plan(&plan);
				tps_pp_plan_free(&plan);
			}
		}
	}
}
END_TEST

START_TEST(pp_1f1b_keeps_min_p_m_in_flight_gpipe_m)
{
	for (int p = 1; p <= 4; p++) {
		for (int m = 1; m <= 8; m++) {
			struct tps_pp_plan g = make(TPS_PP_GPIPE, p, m, 1);
			struct tps_pp_plan o = make(TPS_PP_1F1B, p, m, 1);
			for (int s = 0; s < p; s++) {
				ck_assert_int_eq(g.stages[s].peak_in_flight, m);
				ck_assert_int_eq(o.stages[s].peak_in_flight,
						 min_int(p - s, m));
			}
			ck_assert_int_eq(o.stages[0].peak_in_flight,
					 min_int(p, m));
			tps_pp_plan_free(&g);
			tps_pp_plan_free(&o);
		}
	}
}
END_TEST

struct want_op {
	enum tps_pp_op_kind kind;
	int mb, chunk, start, end;
};

static void assert_ops(const struct tps_pp_stage *st,
		       const struct want_op *want, int n)
{
	ck_assert_int_eq(st->n_ops, n);
	for (int i = 0; i < n; i++) {
		const struct tps_pp_op *op = &st->ops[i];
		ck_assert_msg(op->kind == want[i].kind &&
				      op->microbatch == want[i].mb &&
				      op->chunk == want[i].chunk &&
				      op->start == want[i].start &&
				      op->end == want[i].end,
			      "op %d: %c mb %d chunk %d [%lld, %lld), expected "
			      "%c mb %d chunk %d [%d, %d)",
			      i, op->kind == TPS_PP_FORWARD ? 'F' : 'B',
			      op->microbatch, op->chunk, (long long)op->start,
			      (long long)op->end,
			      want[i].kind == TPS_PP_FORWARD ? 'F' : 'B',
			      want[i].mb, want[i].chunk, want[i].start,
			      want[i].end);
	}
}

START_TEST(pp_1f1b_p2_m2_timeline_by_hand)
{
	/* Stage 0 warms up with min(p - 0 - 1, m) = 1 forward, stage 1 with
	 * none. s0 F0 [0,1); s1 F0 [1,2) after it; s0 F1 [1,2); s1 B0
	 * [2,4); s0 B0 waits for it, [4,6); s1 F1 is free at 4, [4,5); s1
	 * B1 [5,7); s0 B1 [7,9). Span 9 = 3 (m + p - 1); stage 0 idle 3 of
	 * busy 6: 1/2 = (p - 1) / m. */
	const struct want_op s0[4] = {{TPS_PP_FORWARD, 0, 0, 0, 1},
				      {TPS_PP_FORWARD, 1, 0, 1, 2},
				      {TPS_PP_BACKWARD, 0, 0, 4, 6},
				      {TPS_PP_BACKWARD, 1, 0, 7, 9}};
	const struct want_op s1[4] = {{TPS_PP_FORWARD, 0, 0, 1, 2},
				      {TPS_PP_BACKWARD, 0, 0, 2, 4},
				      {TPS_PP_FORWARD, 1, 0, 4, 5},
				      {TPS_PP_BACKWARD, 1, 0, 5, 7}};
	struct tps_pp_plan plan = make(TPS_PP_1F1B, 2, 2, 1);
	assert_ops(&plan.stages[0], s0, 4);
	assert_ops(&plan.stages[1], s1, 4);
	ck_assert_int_eq(plan.span, 9);
	ck_assert_int_eq(plan.stages[0].idle, 3);
	ck_assert_int_eq(plan.stages[1].idle, 3);
	tps_pp_plan_free(&plan);
}
END_TEST

START_TEST(pp_interleaved_p2_m2_v2_order_by_hand)
{
	/* m = p: every forward is warm-up (Megatron). Forward k is
	 * microbatch (k / 4) 2 + k mod 2 on chunk (k mod 4) / 2: F0c0 F1c0
	 * F0c1 F1c1; backward k the same microbatch on chunk 1 - that: B0c1
	 * B1c1 B0c0 B1c0. Virtual stages: chunk 0 of stage 0 is 0, of
	 * stage 1 is 1; chunk 1 of stage 0 is 2, of stage 1 is 3. Stage 0:
	 * F0c0 [0,1), F1c0 [1,2), F0c1 needs F0 on virtual stage 1 (stage 1,
	 * [1,2)) [2,3), F1c1 needs stage 1's F1c0 [2,3): [3,4). Stage 1:
	 * F0c0 [1,2), F1c0 [2,3), F0c1 needs stage 0's F0c1: [3,4), F1c1
	 * [4,5), B0c1 (last virtual stage) [5,7), B1c1 [7,9), B0c0 needs
	 * stage 0's B0c1. Stage 0: B0c1 needs stage 1's B0c1 (7): [7,9),
	 * B1c1 needs 9: [9,11); stage 1 B0c0 needs 9: [9,11), B1c0 needs
	 * 11: [11,13); stage 0 B0c0 [11,13), B1c0 [13,15). Span 15 =
	 * 3 v m + 3 (p - 1); idle 3 of busy 12 = (p - 1) / (v m) = 1/4. */
	const struct want_op s0[8] = {
		{TPS_PP_FORWARD, 0, 0, 0, 1},
		{TPS_PP_FORWARD, 1, 0, 1, 2},
		{TPS_PP_FORWARD, 0, 1, 2, 3},
		{TPS_PP_FORWARD, 1, 1, 3, 4},
		{TPS_PP_BACKWARD, 0, 1, 7, 9},
		{TPS_PP_BACKWARD, 1, 1, 9, 11},
		{TPS_PP_BACKWARD, 0, 0, 11, 13},
		{TPS_PP_BACKWARD, 1, 0, 13, 15},
	};
	const struct want_op s1[8] = {
		{TPS_PP_FORWARD, 0, 0, 1, 2},	{TPS_PP_FORWARD, 1, 0, 2, 3},
		{TPS_PP_FORWARD, 0, 1, 3, 4},	{TPS_PP_FORWARD, 1, 1, 4, 5},
		{TPS_PP_BACKWARD, 0, 1, 5, 7},	{TPS_PP_BACKWARD, 1, 1, 7, 9},
		{TPS_PP_BACKWARD, 0, 0, 9, 11}, {TPS_PP_BACKWARD, 1, 0, 11, 13},
	};
	struct tps_pp_plan plan = make(TPS_PP_INTERLEAVED_1F1B, 2, 2, 2);
	assert_ops(&plan.stages[0], s0, 8);
	assert_ops(&plan.stages[1], s1, 8);
	ck_assert_int_eq(plan.span, 15);
	ck_assert_int_eq(plan.stages[0].idle, 3);
	tps_pp_plan_free(&plan);
}
END_TEST

START_TEST(pp_schedule_names)
{
	ck_assert_str_eq(tps_pp_schedule_name(TPS_PP_GPIPE), "gpipe");
	ck_assert_str_eq(tps_pp_schedule_name(TPS_PP_1F1B), "1f1b");
	ck_assert_str_eq(tps_pp_schedule_name(TPS_PP_INTERLEAVED_1F1B),
			 "interleaved_1f1b");
}
END_TEST

static const struct {
	enum tps_pp_schedule schedule;
	int p, m, v;
	enum tps_status status;
	const char *message;
} bad_rows[] = {
	{TPS_PP_1F1B, 0, 4, 1, TPS_ERR_INPUT,
	 "pipeline: stages (p) must be at least 1, got 0"},
	{TPS_PP_GPIPE, -3, 4, 1, TPS_ERR_INPUT,
	 "pipeline: stages (p) must be at least 1, got -3"},
	{TPS_PP_1F1B, 2, 0, 1, TPS_ERR_INPUT,
	 "pipeline: microbatches (m) must be at least 1, got 0"},
	{TPS_PP_GPIPE, 2, 4, 0, TPS_ERR_INPUT,
	 "pipeline: virtual_stages (v) must be at least 1, got 0"},
	{TPS_PP_GPIPE, 2, 4, 2, TPS_ERR_INPUT,
	 "pipeline: virtual_stages 2 with schedule gpipe (expected 1: only "
	 "interleaved_1f1b has virtual stages)"},
	{TPS_PP_1F1B, 2, 4, 3, TPS_ERR_INPUT,
	 "pipeline: virtual_stages 3 with schedule 1f1b (expected 1: only "
	 "interleaved_1f1b has virtual stages)"},
	{TPS_PP_INTERLEAVED_1F1B, 2, 4, 1, TPS_ERR_INPUT,
	 "pipeline: interleaved_1f1b needs virtual_stages >= 2, got 1"},
	{TPS_PP_INTERLEAVED_1F1B, 4, 6, 2, TPS_ERR_INPUT,
	 "pipeline: microbatches 6 not a multiple of stages 4 (expected a "
	 "multiple: interleaved_1f1b, as Megatron requires)"},
	{TPS_PP_INTERLEAVED_1F1B, 3, 2, 2, TPS_ERR_INPUT,
	 "pipeline: microbatches 2 not a multiple of stages 3"},
	{TPS_PP_1F1B, 4097, 4097, 1, TPS_ERR_LIMIT,
	 "pipeline: stages 4097 past the limit 4096"},
	{TPS_PP_1F1B, 2, 65537, 1, TPS_ERR_LIMIT,
	 "pipeline: microbatches x virtual_stages 65537 past the limit 65536"},
	{TPS_PP_INTERLEAVED_1F1B, 2, 40000, 2, TPS_ERR_LIMIT,
	 "pipeline: microbatches x virtual_stages 80000 past the limit 65536"},
	{TPS_PP_1F1B, 128, 65536, 1, TPS_ERR_LIMIT,
	 "pipeline: stages x microbatches x virtual_stages 8388608 past the "
	 "limit 4194304"},
	{TPS_PP_INTERLEAVED_1F1B, 2, 2147483646, 2, TPS_ERR_LIMIT,
	 "pipeline: microbatches x virtual_stages 4294967292 past the limit "
	 "65536"},
};

START_TEST(pp_bad_input_is_refused)
{
	const int i = _i;
	struct tps_pp_plan plan;
	struct tps_error err = {0};
	memset(&plan, 0x5a, sizeof(plan));
	unsigned char before[sizeof(plan)];
	memcpy(before, &plan, sizeof(plan));
	enum tps_status st =
		tps_pp_plan_init(&plan, bad_rows[i].schedule, bad_rows[i].p,
				 bad_rows[i].m, bad_rows[i].v, &err);
	ck_assert_msg(st == bad_rows[i].status,
		      "row %d: status %d, expected %d", i, (int)st,
		      (int)bad_rows[i].status);
	ck_assert_int_eq(err.status, bad_rows[i].status);
	ck_assert_msg(strstr(err.message, bad_rows[i].message) != NULL,
		      "row %d: message \"%s\" lacks \"%s\"", i, err.message,
		      bad_rows[i].message);
	ck_assert_msg(memcmp(before, &plan, sizeof(plan)) == 0,
		      "row %d: plan touched on error", i);
}
END_TEST

static Suite *pipeline_schedule_suite(void)
{
	Suite *s = suite_create("pipeline_schedule");
	TCase *bubble = tcase_create("bubble");
	TCase *memory = tcase_create("in_flight");
	TCase *order = tcase_create("order");
	TCase *bad = tcase_create("bad_input");
	tcase_add_test(bubble, pp_gpipe_and_1f1b_bubble_is_p_minus_1_over_m);
	tcase_add_test(bubble, pp_interleaved_bubble_is_p_minus_1_over_v_m);
	tcase_add_test(memory, pp_1f1b_keeps_min_p_m_in_flight_gpipe_m);
	tcase_add_test(order, pp_1f1b_p2_m2_timeline_by_hand);
	tcase_add_test(order, pp_interleaved_p2_m2_v2_order_by_hand);
	tcase_add_test(order, pp_schedule_names);
	tcase_add_loop_test(bad, pp_bad_input_is_refused, 0,
			    (int)(sizeof(bad_rows) / sizeof(bad_rows[0])));
	suite_add_tcase(s, bubble);
	suite_add_tcase(s, memory);
	suite_add_tcase(s, order);
	suite_add_tcase(s, bad);
	return s;
}

int main(void)
{
	return tu_run_suite(pipeline_schedule_suite());
}
