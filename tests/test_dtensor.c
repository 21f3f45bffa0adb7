/* dtensor: local regions, distribute / full_tensor, redistribute. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "tpsim/dtensor.h"

static struct tps_mesh mesh2(int a, int b)
{
	const int shape[2] = {a, b};
	const char *names[2] = {"dp", "tp"};
	struct tps_mesh m;
	ck_assert_int_eq(tps_mesh_init(&m, 2, shape, names, NULL), TPS_OK);
	return m;
}

static struct tps_tensor arange(int ndim, const int64_t *dims)
{
	struct tps_tensor t;
	struct tps_shape s = tps_shape_make(ndim, dims);
	ck_assert_int_eq(tps_tensor_init(&t, &s, NULL), TPS_OK);
	for (int64_t i = 0; i < tps_tensor_numel(&t); i++) {
		t.data[i] = (float)(i + 1);
	}
	return t;
}

static void assert_same(const struct tps_tensor *a, const struct tps_tensor *b)
{
	ck_assert(tps_shape_equal(&a->shape, &b->shape));
	ck_assert_mem_eq(a->data, b->data,
			 (size_t)tps_tensor_numel(a) * sizeof(float));
}

/* The global value as the dtensor now holds it equals `want`. */
static void assert_global(const struct tps_dtensor *dt,
			  const struct tps_tensor *want)
{
	struct tps_tensor full;
	ck_assert_int_eq(tps_dtensor_full_tensor(dt, &full, NULL), TPS_OK);
	assert_same(&full, want);
	tps_tensor_free(&full);
}

struct step_log {
	int count;
	enum tps_redistribute_kind kinds[8];
	enum tps_comm_op ops[8];
	int64_t bytes[8];
};

static enum tps_status log_step(void *ctx,
				const struct tps_redistribute_step *s,
				const struct tps_dtensor *dt,
				struct tps_error *err)
{
	struct step_log *log = ctx;
	(void)dt;
	(void)err;
	log->kinds[log->count] = s->kind;
	log->ops[log->count] = s->report.op;
	log->bytes[log->count++] = s->report.bytes_per_rank;
	return TPS_OK;
}

START_TEST(region_is_a_chunk_of_a_chunk)
{
	/* (2,3) mesh both sharding dim 0 of 13 rows: dp halves 13 -> 7, 6,
	 * then tp splits each: 7 -> 3,3,1 and 6 -> 2,2,2. */
	struct tps_mesh m = mesh2(2, 3);
	const int64_t d[2] = {13, 2};
	struct tps_shape g = tps_shape_make(2, d);
	struct tps_placement p[2] = {tps_placement_shard(0),
				     tps_placement_shard(0)};
	const int64_t off[6] = {0, 3, 6, 7, 9, 11};
	const int64_t len[6] = {3, 3, 1, 2, 2, 2};
	for (int r = 0; r < 6; r++) {
		int64_t o[2], l[2];
		tps_dtensor_local_region(&m, &g, p, r, o, l);
		ck_assert_int_eq(o[0], off[r]);
		ck_assert_int_eq(l[0], len[r]);
		ck_assert_int_eq(o[1], 0);
		ck_assert_int_eq(l[1], 2);
	}
}
END_TEST

START_TEST(distribute_then_full_tensor_round_trips)
{
	struct tps_mesh m = mesh2(2, 3);
	const int64_t d[3] = {5, 4, 7};
	struct tps_tensor g = arange(3, d);
	const struct tps_placement choices[4] = {
		tps_placement_replicate(), tps_placement_shard(0),
		tps_placement_shard(2), tps_placement_partial()};
	for (int a = 0; a < 4; a++) {
		for (int b = 0; b < 4; b++) {
			struct tps_placement p[2] = {choices[a], choices[b]};
			struct tps_dtensor dt;
			ck_assert_int_eq(
				tps_dtensor_distribute(&dt, &m, &g, p, NULL),
				TPS_OK);
			assert_global(&dt, &g);
			tps_dtensor_free(&dt);
		}
	}
	tps_tensor_free(&g);
}
END_TEST

START_TEST(colwise_weight_shards_rows_of_the_seed_matrix)
{
	/* W = [[1,2,3,4],[5,6,7,8]] shard(0) over tp=2: rank 0 gets row 0. */
	const int n = 2;
	const char *names[1] = {"tp"};
	struct tps_mesh m;
	const int64_t d[2] = {2, 4};
	struct tps_tensor w = arange(2, d);
	struct tps_placement p[1] = {tps_placement_shard(0)};
	struct tps_dtensor dt;
	const float r1[4] = {5, 6, 7, 8};
	ck_assert_int_eq(tps_mesh_init(&m, 1, &n, names, NULL), TPS_OK);
	ck_assert_int_eq(tps_dtensor_distribute(&dt, &m, &w, p, NULL), TPS_OK);
	ck_assert_int_eq(dt.locals[1].shape.dim[0], 1);
	ck_assert_mem_eq(dt.locals[1].data, r1, sizeof r1);
	tps_dtensor_free(&dt);
	tps_tensor_free(&w);
}
END_TEST

/* Redistributes a fresh dtensor of g from `from` to `to` and checks the
 * global value, the placements, and the steps reported. */
static void check_redistribute(struct tps_placement from0,
			       struct tps_placement from1,
			       struct tps_placement to0,
			       struct tps_placement to1, int want_steps,
			       enum tps_redistribute_kind kind,
			       enum tps_comm_op op, int64_t bytes)
{
	struct tps_mesh m = mesh2(2, 3);
	const int64_t d[2] = {4, 7};
	struct tps_tensor g = arange(2, d);
	struct tps_placement from[2] = {from0, from1}, to[2] = {to0, to1};
	struct tps_dtensor dt;
	struct step_log log = {0};
	ck_assert_int_eq(tps_dtensor_distribute(&dt, &m, &g, from, NULL),
			 TPS_OK);
	ck_assert_int_eq(
		tps_dtensor_redistribute(&dt, to, log_step, &log, NULL),
		TPS_OK);
	ck_assert(tps_placement_equal(dt.placements[0], to0));
	ck_assert(tps_placement_equal(dt.placements[1], to1));
	assert_global(&dt, &g);
	ck_assert_int_eq(log.count, want_steps);
	if (want_steps > 0) {
		ck_assert_int_eq(log.kinds[0], kind);
		if (kind == TPS_REDISTRIBUTE_COLLECTIVE) {
			ck_assert_int_eq(log.ops[0], op);
			ck_assert_int_eq(log.bytes[0], bytes);
		}
	}
	tps_dtensor_free(&dt);
	tps_tensor_free(&g);
}

START_TEST(partial_to_replicate_is_all_reduce)
{
	/* (4,7) buffer, tp = 3: c = ceil(28/3) = 10 floats; 2*2*40 = 160. */
	check_redistribute(tps_placement_replicate(), tps_placement_partial(),
			   tps_placement_replicate(), tps_placement_replicate(),
			   1, TPS_REDISTRIBUTE_COLLECTIVE, TPS_COMM_ALL_REDUCE,
			   160);
}
END_TEST

START_TEST(partial_to_shard_is_reduce_scatter)
{
	/* 7 columns over 3: padded chunk 3 cols x 4 rows = 48 B; 2*48. */
	check_redistribute(tps_placement_replicate(), tps_placement_partial(),
			   tps_placement_replicate(), tps_placement_shard(1), 1,
			   TPS_REDISTRIBUTE_COLLECTIVE, TPS_COMM_REDUCE_SCATTER,
			   96);
}
END_TEST

START_TEST(shard_to_replicate_is_all_gather)
{
	check_redistribute(tps_placement_replicate(), tps_placement_shard(1),
			   tps_placement_replicate(), tps_placement_replicate(),
			   1, TPS_REDISTRIBUTE_COLLECTIVE, TPS_COMM_ALL_GATHER,
			   96);
}
END_TEST

START_TEST(replicate_to_shard_is_a_local_split)
{
	check_redistribute(tps_placement_replicate(), tps_placement_replicate(),
			   tps_placement_replicate(), tps_placement_shard(1), 1,
			   TPS_REDISTRIBUTE_SPLIT, TPS_COMM_ALL_GATHER, 0);
}
END_TEST

START_TEST(shard_to_shard_is_all_to_all)
{
	/* shard(1) -> shard(0) over tp=3 of (4,7): largest block sent is
	 * 2 rows x 3 cols = 24 B; (n-1) c = 48. */
	check_redistribute(tps_placement_replicate(), tps_placement_shard(1),
			   tps_placement_replicate(), tps_placement_shard(0), 1,
			   TPS_REDISTRIBUTE_COLLECTIVE, TPS_COMM_ALL_TO_ALL,
			   48);
}
END_TEST

START_TEST(two_mesh_dims_change_inner_first)
{
	/* [shard(0), shard(1)] -> [replicate, replicate]: tp (inner) is
	 * gathered before dp. */
	struct tps_mesh m = mesh2(2, 3);
	const int64_t d[2] = {5, 7};
	struct tps_tensor g = arange(2, d);
	struct tps_placement from[2] = {tps_placement_shard(0),
					tps_placement_shard(1)};
	struct tps_placement to[2] = {tps_placement_replicate(),
				      tps_placement_replicate()};
	struct tps_dtensor dt;
	struct step_log log = {0};
	ck_assert_int_eq(tps_dtensor_distribute(&dt, &m, &g, from, NULL),
			 TPS_OK);
	ck_assert_int_eq(
		tps_dtensor_redistribute(&dt, to, log_step, &log, NULL),
		TPS_OK);
	ck_assert_int_eq(log.count, 2);
	for (int r = 0; r < 6; r++) {
		assert_same(&dt.locals[r], &g);
	}
	tps_dtensor_free(&dt);
	tps_tensor_free(&g);
}
END_TEST

START_TEST(wrong_nesting_and_to_partial_are_refused)
{
	struct tps_mesh m = mesh2(2, 3);
	const int64_t d[2] = {6, 6};
	struct tps_tensor g = arange(2, d);
	struct tps_placement nested[2] = {tps_placement_shard(0),
					  tps_placement_shard(0)};
	struct tps_placement outer_only[2] = {tps_placement_replicate(),
					      tps_placement_shard(0)};
	struct tps_placement rep[2] = {tps_placement_replicate(),
				       tps_placement_replicate()};
	struct tps_placement part[2] = {tps_placement_replicate(),
					tps_placement_partial()};
	struct tps_dtensor dt;
	struct tps_error err = {0};
	ck_assert_int_eq(tps_dtensor_distribute(&dt, &m, &g, nested, NULL),
			 TPS_OK);
	ck_assert_int_eq(
		tps_dtensor_redistribute(&dt, outer_only, NULL, NULL, &err),
		TPS_ERR_UNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(err.message, "inner mesh dim"));
	tps_dtensor_free(&dt);
	ck_assert_int_eq(tps_dtensor_distribute(&dt, &m, &g, rep, NULL),
			 TPS_OK);
	ck_assert_int_eq(tps_dtensor_redistribute(&dt, part, NULL, NULL, &err),
			 TPS_ERR_UNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(err.message, "partial"));
	tps_dtensor_free(&dt);
	tps_tensor_free(&g);
}
END_TEST

START_TEST(size_one_dim_changes_are_not_reported)
{
	struct tps_mesh m = mesh2(2, 1);
	const int64_t d[2] = {2, 2};
	struct tps_tensor g = arange(2, d);
	struct tps_placement from[2] = {tps_placement_replicate(),
					tps_placement_partial()};
	struct tps_placement to[2] = {tps_placement_replicate(),
				      tps_placement_replicate()};
	struct tps_dtensor dt;
	struct step_log log = {0};
	ck_assert_int_eq(tps_dtensor_distribute(&dt, &m, &g, from, NULL),
			 TPS_OK);
	ck_assert_int_eq(
		tps_dtensor_redistribute(&dt, to, log_step, &log, NULL),
		TPS_OK);
	ck_assert_int_eq(log.count, 0);
	assert_global(&dt, &g);
	tps_dtensor_free(&dt);
	tps_tensor_free(&g);
}
END_TEST

static Suite *dtensor_suite(void)
{
	Suite *s = suite_create("dtensor");
	TCase *region = tcase_create("regions");
	TCase *redist = tcase_create("redistribute");
	tcase_add_test(region, region_is_a_chunk_of_a_chunk);
	tcase_add_test(region, distribute_then_full_tensor_round_trips);
	tcase_add_test(region, colwise_weight_shards_rows_of_the_seed_matrix);
	tcase_add_test(redist, partial_to_replicate_is_all_reduce);
	tcase_add_test(redist, partial_to_shard_is_reduce_scatter);
	tcase_add_test(redist, shard_to_replicate_is_all_gather);
	tcase_add_test(redist, replicate_to_shard_is_a_local_split);
	tcase_add_test(redist, shard_to_shard_is_all_to_all);
	tcase_add_test(redist, two_mesh_dims_change_inner_first);
	tcase_add_test(redist, wrong_nesting_and_to_partial_are_refused);
	tcase_add_test(redist, size_one_dim_changes_are_not_reported);
	suite_add_tcase(s, region);
	suite_add_tcase(s, redist);
	return s;
}

int main(void)
{
	return tu_run_suite(dtensor_suite());
}
