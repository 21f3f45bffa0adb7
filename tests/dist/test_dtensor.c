/* dtensor: local regions, distribute / full_tensor, redistribute. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "dtensor.h"

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
	if (tps_tensor_numel(a) > 0) { /* an empty shard's data is NULL */
		ck_assert_mem_eq(a->data, b->data,
				 (size_t)tps_tensor_numel(a) * sizeof(float));
	}
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

static struct tps_mesh mesh3(int a, int b, int c)
{
	const int shape[3] = {a, b, c};
	const char *names[3] = {"dp", "cp", "tp"};
	struct tps_mesh m;
	ck_assert_int_eq(tps_mesh_init(&m, 3, shape, names, NULL), TPS_OK);
	return m;
}

START_TEST(region_over_a_flat_group_is_one_chunk)
{
	/* docs/design.md's example: 5 rows over dp and cp of a (2,2,2) mesh
	 * flattened, the groups [0,2,4,6] and [1,3,5,7], are one torch.chunk
	 * over the group: 2, 2, 1, 0. shard(0) on each (a chunk of a chunk)
	 * gives 2, 1, 1, 1. */
	struct tps_mesh m = mesh3(2, 2, 2);
	const int64_t d[2] = {5, 4};
	struct tps_shape g = tps_shape_make(2, d);
	struct tps_placement flat[3] = {tps_placement_shard_flat(0),
					tps_placement_shard_flat(0),
					tps_placement_replicate()};
	struct tps_placement nested[3] = {tps_placement_shard(0),
					  tps_placement_shard(0),
					  tps_placement_replicate()};
	const int64_t flat_off[4] = {0, 2, 4, 5}, flat_len[4] = {2, 2, 1, 0};
	const int64_t nested_off[4] = {0, 2, 3, 4},
		      nested_len[4] = {2, 1, 1, 1};
	/* dp and tp flattened around cp, of a (2,3,2) mesh: flat index
	 * 2 dp + tp over 4, 13 rows: 4, 4, 4, 1, whatever cp is. */
	struct tps_mesh m2 = mesh3(2, 3, 2);
	const int64_t d2[1] = {13};
	struct tps_shape g2 = tps_shape_make(1, d2);
	struct tps_placement around[3] = {tps_placement_shard_flat(0),
					  tps_placement_replicate(),
					  tps_placement_shard_flat(0)};
	const int64_t around_off[4] = {0, 4, 8, 12},
		      around_len[4] = {4, 4, 4, 1};
	ck_assert_int_eq(tps_dtensor_check_placements(&m, &g, flat, NULL),
			 TPS_OK);
	for (int r = 0; r < 8; r++) {
		int64_t o[2], l[2];
		int k = r / 2; /* the flattened dp rank; tp is r % 2 */
		tps_dtensor_local_region(&m, &g, flat, r, o, l);
		ck_assert_int_eq(o[0], flat_off[k]);
		ck_assert_int_eq(l[0], flat_len[k]);
		ck_assert_int_eq(l[1], 4);
		tps_dtensor_local_region(&m, &g, nested, r, o, l);
		ck_assert_int_eq(o[0], nested_off[k]);
		ck_assert_int_eq(l[0], nested_len[k]);
	}
	for (int r = 0; r < 12; r++) {
		int64_t o[1], l[1];
		int coord[3];
		tps_mesh_coord_of(&m2, r, coord);
		tps_dtensor_local_region(&m2, &g2, around, r, o, l);
		ck_assert_int_eq(o[0], around_off[2 * coord[0] + coord[2]]);
		ck_assert_int_eq(l[0], around_len[2 * coord[0] + coord[2]]);
	}
}
END_TEST

START_TEST(local_shard_is_a_chunk_of_each_rank_local_tensor)
{
	/* ZeRO over dp of a colwise weight (docs/zero.md): on a (2,3) mesh
	 * (dp, tp) with shard(0,local) on dp and shard(0) on tp, 13 rows are
	 * split by tp first, 5, 5, 3, then each tp shard by dp: 3, 2 | 3, 2
	 * | 2, 1. Rank (dp i, tp j) = 3 i + j. Plain shard(0) on both would
	 * split dp first (region_is_a_chunk_of_a_chunk). */
	struct tps_mesh m = mesh2(2, 3);
	const int64_t d[2] = {13, 2};
	struct tps_shape g = tps_shape_make(2, d);
	struct tps_placement p[2] = {tps_placement_shard_local(0, false),
				     tps_placement_shard(0)};
	const int64_t off[6] = {0, 5, 10, 3, 8, 12};
	const int64_t len[6] = {3, 3, 2, 2, 2, 1};
	/* Over the flattened (dp, cp) group of a (2,2,2) mesh, with tp on
	 * dim 1: 5 rows are one chunk over 4, 2, 2, 1, 0. */
	struct tps_mesh m3 = mesh3(2, 2, 2);
	const int64_t d3[2] = {5, 4};
	struct tps_shape g3 = tps_shape_make(2, d3);
	struct tps_placement p3[3] = {tps_placement_shard_local(0, true),
				      tps_placement_shard_local(0, true),
				      tps_placement_shard(1)};
	const int64_t off3[4] = {0, 2, 4, 5}, len3[4] = {2, 2, 1, 0};
	ck_assert_int_eq(tps_dtensor_check_placements(&m, &g, p, NULL), TPS_OK);
	for (int r = 0; r < 6; r++) {
		int64_t o[2], l[2];
		tps_dtensor_local_region(&m, &g, p, r, o, l);
		ck_assert_int_eq(o[0], off[r]);
		ck_assert_int_eq(l[0], len[r]);
		ck_assert_int_eq(l[1], 2);
	}
	for (int r = 0; r < 8; r++) {
		int64_t o[2], l[2];
		tps_dtensor_local_region(&m3, &g3, p3, r, o, l);
		ck_assert_int_eq(o[0], off3[r / 2]);
		ck_assert_int_eq(l[0], len3[r / 2]);
		ck_assert_int_eq(o[1], 2 * (r % 2));
		ck_assert_int_eq(l[1], 2);
	}
}
END_TEST

START_TEST(flat_shards_round_trip_and_are_not_redistributed)
{
	/* distribute and full_tensor take a flat shard; redistribute, which
	 * moves one mesh dim at a time, refuses to touch one. */
	struct tps_mesh m = mesh3(2, 2, 2);
	const int64_t d[2] = {5, 3};
	struct tps_tensor g = arange(2, d);
	struct tps_placement flat[3] = {tps_placement_shard_flat(0),
					tps_placement_shard_flat(0),
					tps_placement_shard(1)};
	struct tps_placement gathered[3] = {tps_placement_replicate(),
					    tps_placement_shard_flat(0),
					    tps_placement_shard(1)};
	struct tps_placement tp_gathered[3] = {tps_placement_shard_flat(0),
					       tps_placement_shard_flat(0),
					       tps_placement_replicate()};
	struct tps_dtensor dt;
	struct tps_error err = {0};
	ck_assert_int_eq(tps_dtensor_distribute(&dt, &m, &g, flat, NULL),
			 TPS_OK);
	assert_global(&dt, &g);
	/* Rank 4 is dp 1, cp 0: flattened dp rank 2, row 4; tp 0: cols 0-1. */
	ck_assert_int_eq(dt.locals[4].shape.dim[0], 1);
	ck_assert_int_eq(dt.locals[4].shape.dim[1], 2);
	ck_assert(dt.locals[4].data[0] == 13.0f);
	ck_assert_int_eq(dt.locals[6].shape.dim[0], 0);
	/* The tp dim moves freely beside it. */
	ck_assert_int_eq(tps_dtensor_redistribute(&dt, tp_gathered,
						  TPS_COMM_F32, NULL, NULL,
						  &err),
			 TPS_OK);
	assert_global(&dt, &g);
	ck_assert_int_eq(tps_dtensor_redistribute(&dt, gathered, TPS_COMM_F32,
						  NULL, NULL, &err),
			 TPS_ERR_UNSUPPORTED);
	ck_assert_str_eq(
		err.message,
		"redistribute shard(0,flat) -> replicate on mesh dim "
		"\"dp\": a flat or local shard is made by distribute or "
		"ZeRO only");
	tps_dtensor_free(&dt);
	tps_tensor_free(&g);
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
	ck_assert_int_eq(tps_dtensor_redistribute(&dt, to, TPS_COMM_F32,
						  log_step, &log, NULL),
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
	ck_assert_int_eq(tps_dtensor_redistribute(&dt, to, TPS_COMM_F32,
						  log_step, &log, NULL),
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
	ck_assert_int_eq(tps_dtensor_redistribute(&dt, outer_only, TPS_COMM_F32,
						  NULL, NULL, &err),
			 TPS_ERR_UNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(err.message, "inner mesh dim"));
	tps_dtensor_free(&dt);
	ck_assert_int_eq(tps_dtensor_distribute(&dt, &m, &g, rep, NULL),
			 TPS_OK);
	ck_assert_int_eq(tps_dtensor_redistribute(&dt, part, TPS_COMM_F32, NULL,
						  NULL, &err),
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
	ck_assert_int_eq(tps_dtensor_redistribute(&dt, to, TPS_COMM_F32,
						  log_step, &log, NULL),
			 TPS_OK);
	ck_assert_int_eq(log.count, 0);
	assert_global(&dt, &g);
	tps_dtensor_free(&dt);
	tps_tensor_free(&g);
}
END_TEST

/* Blocks: shard(d,block=b), whole attention heads. */

static struct tps_mesh mesh1(int k)
{
	const char *names[1] = {"tp"};
	struct tps_mesh m;
	ck_assert_int_eq(tps_mesh_init(&m, 1, &k, names, NULL), TPS_OK);
	return m;
}

START_TEST(region_in_blocks_keeps_heads_whole)
{
	/* 5 heads of head_dim 2 (10 features) over 2 ranks: heads 0-2 are
	 * features [0,6), heads 3-4 [6,10); torch.chunk's 5 and 5 would cut
	 * head 2 in half. Then 2 blocks of 3 over 3 ranks: 3, 3, 0. */
	struct tps_mesh m2 = mesh1(2), m3 = mesh1(3);
	const int64_t ten = 10, six = 6;
	struct tps_shape g10 = tps_shape_make(1, &ten);
	struct tps_shape g6 = tps_shape_make(1, &six);
	struct tps_placement heads[1] = {tps_placement_shard_blocks(0, 2)};
	struct tps_placement threes[1] = {tps_placement_shard_blocks(0, 3)};
	const int64_t off2[2] = {0, 6}, len2[2] = {6, 4};
	const int64_t off3[3] = {0, 3, 6}, len3[3] = {3, 3, 0};
	for (int r = 0; r < 2; r++) {
		int64_t o, l;
		tps_dtensor_local_region(&m2, &g10, heads, r, &o, &l);
		ck_assert_int_eq(o, off2[r]);
		ck_assert_int_eq(l, len2[r]);
	}
	for (int r = 0; r < 3; r++) {
		int64_t o, l;
		tps_dtensor_local_region(&m3, &g6, threes, r, &o, &l);
		ck_assert_int_eq(o, off3[r]);
		ck_assert_int_eq(l, len3[r]);
	}
}
END_TEST

START_TEST(region_with_block_one_is_the_element_rule)
{
	for (int64_t n = 0; n <= 20; n++) {
		struct tps_shape g = tps_shape_make(1, &n);
		for (int k = 1; k <= 8; k++) {
			struct tps_mesh m = mesh1(k);
			struct tps_placement p[1] = {
				tps_placement_shard_blocks(0, 1)};
			for (int r = 0; r < k; r++) {
				int64_t o, l, start, len;
				tps_dtensor_local_region(&m, &g, p, r, &o, &l);
				tps_chunk_range(n, k, r, &start, &len);
				ck_assert_int_eq(o, start);
				ck_assert_int_eq(l, len);
			}
		}
	}
}
END_TEST

START_TEST(placements_compare_blocks_and_normalise_zero)
{
	struct tps_placement zeroed = {0};
	struct tps_placement shard1 = tps_placement_shard(1);
	ck_assert(
		tps_placement_equal(tps_placement_shard_blocks(1, 1), shard1));
	ck_assert(
		tps_placement_equal(tps_placement_shard_blocks(1, 0), shard1));
	ck_assert_int_eq(tps_placement_shard_blocks(1, 0).block, 1);
	ck_assert_int_eq(shard1.block, 1);
	ck_assert(
		!tps_placement_equal(tps_placement_shard_blocks(1, 2), shard1));
	ck_assert(!tps_placement_equal(tps_placement_shard_blocks(1, 2),
				       tps_placement_shard_blocks(1, 4)));
	ck_assert(tps_placement_equal(tps_placement_shard_blocks(1, 2),
				      tps_placement_shard_blocks(1, 2)));
	/* A zeroed struct is replicate; as a shard its block reads as 1. */
	ck_assert(tps_placement_equal(zeroed, tps_placement_replicate()));
	zeroed.kind = TPS_PLACEMENT_SHARD;
	zeroed.dim = 1;
	ck_assert(tps_placement_equal(zeroed, shard1));
	ck_assert_int_eq(tps_placement_block(zeroed), 1);
	ck_assert_int_eq(tps_placement_block(tps_placement_partial()), 1);
	ck_assert_int_eq(tps_placement_block(tps_placement_replicate()), 1);
	ck_assert(!tps_placement_equal(tps_placement_partial(),
				       tps_placement_replicate()));
}
END_TEST

START_TEST(distribute_in_blocks_round_trips_for_every_k)
{
	/* (3, 12) and (2, 3, 12) over 1..8 ranks, the last dim in blocks of
	 * 1, 2, 3, 4, 6 and 12, and dim 0 of (3, 12) in one block of 3. */
	const int64_t d2[2] = {3, 12}, d3[3] = {2, 3, 12};
	const int64_t blocks[6] = {1, 2, 3, 4, 6, 12};
	struct tps_tensor g2 = arange(2, d2), g3 = arange(3, d3);
	for (int k = 1; k <= 8; k++) {
		struct tps_mesh m = mesh1(k);
		for (int b = 0; b < 6; b++) {
			struct tps_placement p2[1] = {
				tps_placement_shard_blocks(1, blocks[b])};
			struct tps_placement p3[1] = {
				tps_placement_shard_blocks(2, blocks[b])};
			struct tps_dtensor dt;
			ck_assert_int_eq(
				tps_dtensor_distribute(&dt, &m, &g2, p2, NULL),
				TPS_OK);
			assert_global(&dt, &g2);
			tps_dtensor_free(&dt);
			ck_assert_int_eq(
				tps_dtensor_distribute(&dt, &m, &g3, p3, NULL),
				TPS_OK);
			assert_global(&dt, &g3);
			tps_dtensor_free(&dt);
		}
		{
			struct tps_placement rows[1] = {
				tps_placement_shard_blocks(0, 3)};
			struct tps_dtensor dt;
			ck_assert_int_eq(tps_dtensor_distribute(&dt, &m, &g2,
								rows, NULL),
					 TPS_OK);
			/* One block: rank 0 holds it all. */
			assert_same(&dt.locals[0], &g2);
			assert_global(&dt, &g2);
			tps_dtensor_free(&dt);
		}
	}
	tps_tensor_free(&g2);
	tps_tensor_free(&g3);
}
END_TEST

/*
 * The reference for block shards, computed without dtensor.c: rank r's
 * region, a chunk of a chunk, each chunk ceil(units / k) whole blocks.
 */
static void ref_region(const struct tps_mesh *m, const struct tps_shape *g,
		       const struct tps_placement *p, int r, int64_t *off,
		       int64_t *len)
{
	int coord[TPS_MAX_MESH_DIMS];
	tps_mesh_coord_of(m, r, coord);
	for (int d = 0; d < g->ndim; d++) {
		off[d] = 0;
		len[d] = g->dim[d];
	}
	for (int i = 0; i < m->ndim; i++) {
		int d = p[i].dim, k = m->shape[i];
		int64_t b = p[i].block, units, per, first, last;
		if (p[i].kind != TPS_PLACEMENT_SHARD) {
			continue;
		}
		ck_assert_int_eq(len[d] % b, 0);
		units = len[d] / b;
		per = (units + k - 1) / k;
		first = per * coord[i] < units ? per * coord[i] : units;
		last = first + per < units ? first + per : units;
		off[d] += first * b;
		len[d] = (last - first) * b;
	}
}

struct partial_job {
	const struct tps_mesh *m;
	const struct tps_tensor *g;
	const struct tps_placement *p;
};

/* Rank r's region of g, times (c + 1) for its coordinate c on every
 * partial mesh dim: a partial tensor whose sum is g times n(n+1)/2 per
 * partial dim, with different values on every rank. */
static enum tps_status partial_local(void *ctx, int r, struct tps_tensor *out,
				     struct tps_error *err)
{
	const struct partial_job *job = ctx;
	int64_t off[TPS_MAX_DIMS], len[TPS_MAX_DIMS];
	int coord[TPS_MAX_MESH_DIMS];
	enum tps_status st;
	ref_region(job->m, &job->g->shape, job->p, r, off, len);
	st = tps_tensor_region(out, job->g, off, len, err);
	tps_mesh_coord_of(job->m, r, coord);
	for (int i = 0; st == TPS_OK && i < job->m->ndim; i++) {
		if (job->p[i].kind == TPS_PLACEMENT_PARTIAL) {
			tps_tensor_scale(out, (float)(coord[i] + 1));
		}
	}
	return st;
}

/*
 * Lays arange(dims) out as `from` on m, redistributes to `to`, and compares
 * every rank's local tensor to its reference region of the global value;
 * the first step reported is `op` (or a split when split is true).
 */
static void check_block_redistribute(const struct tps_mesh *m, int ndim,
				     const int64_t *dims,
				     const struct tps_placement *from,
				     const struct tps_placement *to, bool split,
				     enum tps_comm_op op, int want_steps)
{
	struct tps_tensor g = arange(ndim, dims), want;
	struct partial_job job = {m, &g, from};
	struct tps_dtensor dt;
	struct step_log log = {0};
	float scale = 1.0f;
	char a[32], b[32];
	for (int i = 0; i < m->ndim; i++) {
		if (from[i].kind == TPS_PLACEMENT_PARTIAL) {
			scale *= (float)(m->shape[i] * (m->shape[i] + 1) / 2);
		}
	}
	ck_assert_int_eq(tps_dtensor_map(&dt, m, &g.shape, from, partial_local,
					 &job, NULL),
			 TPS_OK);
	ck_assert_int_eq(tps_dtensor_redistribute(&dt, to, TPS_COMM_F32,
						  log_step, &log, NULL),
			 TPS_OK);
	ck_assert_int_eq(tps_tensor_copy(&want, &g, NULL), TPS_OK);
	tps_tensor_scale(&want, scale);
	for (int i = 0; i < m->ndim; i++) {
		ck_assert_msg(
			tps_placement_equal(dt.placements[i], to[i]),
			"mesh dim %d: %s, want %s", i,
			tps_placement_format(dt.placements[i], a, sizeof a),
			tps_placement_format(to[i], b, sizeof b));
	}
	for (int r = 0; r < m->world_size; r++) {
		int64_t off[TPS_MAX_DIMS], len[TPS_MAX_DIMS];
		struct tps_tensor region;
		ref_region(m, &g.shape, to, r, off, len);
		ck_assert_int_eq(
			tps_tensor_region(&region, &want, off, len, NULL),
			TPS_OK);
		assert_same(&dt.locals[r], &region);
		tps_tensor_free(&region);
	}
	ck_assert_int_eq(log.count, want_steps);
	ck_assert_int_eq(log.kinds[0], split ? TPS_REDISTRIBUTE_SPLIT
					     : TPS_REDISTRIBUTE_COLLECTIVE);
	if (!split) {
		ck_assert_int_eq(log.ops[0], op);
	}
	tps_dtensor_free(&dt);
	tps_tensor_free(&want);
	tps_tensor_free(&g);
}

START_TEST(redistribute_in_blocks_on_a_1d_mesh)
{
	/* (3, 10): 5 heads of 2 over tp=2 (3, 2 heads) and over tp=3 (2, 2,
	 * 1 heads); also in blocks of 5 over 3 (1, 1, 0 blocks). */
	const int64_t d[2] = {3, 10};
	const struct tps_placement rep = tps_placement_replicate();
	const struct tps_placement part = tps_placement_partial();
	const struct tps_placement rows = tps_placement_shard(0);
	const struct tps_placement cols = tps_placement_shard(1);
	for (int k = 2; k <= 3; k++) {
		struct tps_mesh m = mesh1(k);
		for (int64_t b = 2; b <= 5; b += 3) {
			struct tps_placement heads =
				tps_placement_shard_blocks(1, b);
			check_block_redistribute(&m, 2, d, &heads, &rep, false,
						 TPS_COMM_ALL_GATHER, 1);
			check_block_redistribute(&m, 2, d, &rep, &heads, true,
						 TPS_COMM_ALL_GATHER, 1);
			check_block_redistribute(&m, 2, d, &part, &heads, false,
						 TPS_COMM_REDUCE_SCATTER, 1);
			check_block_redistribute(&m, 2, d, &heads, &rows, false,
						 TPS_COMM_ALL_TO_ALL, 1);
			check_block_redistribute(&m, 2, d, &rows, &heads, false,
						 TPS_COMM_ALL_TO_ALL, 1);
			/* Same dim, new block: all_gather, then split. */
			check_block_redistribute(&m, 2, d, &heads, &cols, false,
						 TPS_COMM_ALL_GATHER, 2);
			check_block_redistribute(&m, 2, d, &cols, &heads, false,
						 TPS_COMM_ALL_GATHER, 2);
		}
	}
}
END_TEST

START_TEST(redistribute_in_blocks_on_a_2d_mesh)
{
	/* (2, 3, 10) on a (2, 3) dp x tp mesh: the last dim is 5 heads of 2
	 * (2, 2, 1 over tp) or 2 blocks of 5 (1, 1, 0). */
	struct tps_mesh m = mesh2(2, 3);
	const int64_t d[3] = {2, 3, 10};
	const struct tps_placement rep = tps_placement_replicate();
	const struct tps_placement part = tps_placement_partial();
	const struct tps_placement batch = tps_placement_shard(0);
	const struct tps_placement seq = tps_placement_shard(1);
	for (int64_t b = 2; b <= 5; b += 3) {
		const struct tps_placement heads =
			tps_placement_shard_blocks(2, b);
		struct tps_placement bh[2] = {batch, heads};
		struct tps_placement br[2] = {batch, rep};
		struct tps_placement bs[2] = {batch, seq};
		struct tps_placement rp[2] = {rep, part};
		struct tps_placement rh[2] = {rep, heads};
		struct tps_placement hr[2] = {heads, rep};
		struct tps_placement rr[2] = {rep, rep};
		struct tps_placement ps[2] = {part, seq};
		struct tps_placement hs[2] = {heads, seq};
		check_block_redistribute(&m, 3, d, bh, br, false,
					 TPS_COMM_ALL_GATHER, 1);
		check_block_redistribute(&m, 3, d, br, bh, true,
					 TPS_COMM_ALL_GATHER, 1);
		check_block_redistribute(&m, 3, d, rp, rh, false,
					 TPS_COMM_REDUCE_SCATTER, 1);
		check_block_redistribute(&m, 3, d, bh, bs, false,
					 TPS_COMM_ALL_TO_ALL, 1);
		check_block_redistribute(&m, 3, d, bs, bh, false,
					 TPS_COMM_ALL_TO_ALL, 1);
		/* Heads over dp, the outer mesh dim. */
		check_block_redistribute(&m, 3, d, hr, rr, false,
					 TPS_COMM_ALL_GATHER, 1);
		check_block_redistribute(&m, 3, d, ps, hs, false,
					 TPS_COMM_REDUCE_SCATTER, 1);
		check_block_redistribute(&m, 3, d, hs, bs, false,
					 TPS_COMM_ALL_TO_ALL, 1);
	}
	{
		/* Heads over dp, then over tp: 10 in blocks of 2 over dp ->
		 * 6, 4, each over tp -> 2,2,2 and 2,2,0. */
		const struct tps_placement heads =
			tps_placement_shard_blocks(2, 2);
		struct tps_placement hh[2] = {heads, heads};
		struct tps_placement hr[2] = {heads, rep};
		check_block_redistribute(&m, 3, d, hh, hr, false,
					 TPS_COMM_ALL_GATHER, 1);
		check_block_redistribute(&m, 3, d, hr, hh, true,
					 TPS_COMM_ALL_GATHER, 1);
	}
}
END_TEST

START_TEST(blocks_that_do_not_divide_are_refused)
{
	/* 10 columns are not whole blocks of 3; over dp in blocks of 2 they
	 * are 6 and 4, and 4 is not whole blocks of 3 for tp. */
	struct tps_mesh m1 = mesh1(2), m2 = mesh2(2, 3);
	const int64_t d[2] = {3, 10};
	struct tps_tensor g = arange(2, d);
	struct tps_placement threes[1] = {tps_placement_shard_blocks(1, 3)};
	struct tps_placement rep[1] = {tps_placement_replicate()};
	struct tps_placement part[1] = {tps_placement_partial()};
	struct tps_placement nested[2] = {tps_placement_shard_blocks(1, 2),
					  tps_placement_shard_blocks(1, 3)};
	struct tps_dtensor dt;
	struct tps_error err = {0};
	ck_assert_int_eq(tps_dtensor_distribute(&dt, &m1, &g, threes, &err),
			 TPS_ERR_SHAPE);
	ck_assert_str_eq(err.message,
			 "shard(1,block=3) on mesh dim \"tp\": tensor dim 1 "
			 "has 10 elements there, not a whole number of blocks "
			 "of 3");
	ck_assert_int_eq(tps_dtensor_distribute(&dt, &m2, &g, nested, &err),
			 TPS_ERR_SHAPE);
	ck_assert_ptr_nonnull(strstr(err.message, "has 4 elements there"));
	/* Redistribute fails and keeps the tensor as it was. */
	ck_assert_int_eq(tps_dtensor_distribute(&dt, &m1, &g, rep, NULL),
			 TPS_OK);
	ck_assert_int_eq(tps_dtensor_redistribute(&dt, threes, TPS_COMM_F32,
						  NULL, NULL, &err),
			 TPS_ERR_SHAPE);
	ck_assert_ptr_nonnull(strstr(err.message, "blocks of 3"));
	ck_assert(tps_placement_equal(dt.placements[0], rep[0]));
	assert_same(&dt.locals[1], &g);
	tps_dtensor_free(&dt);
	ck_assert_int_eq(tps_dtensor_distribute(&dt, &m1, &g, part, NULL),
			 TPS_OK);
	ck_assert_int_eq(tps_dtensor_redistribute(&dt, threes, TPS_COMM_F32,
						  NULL, NULL, &err),
			 TPS_ERR_SHAPE);
	ck_assert(tps_placement_equal(dt.placements[0], part[0]));
	assert_global(&dt, &g);
	tps_dtensor_free(&dt);
	tps_tensor_free(&g);
}
END_TEST

START_TEST(product_needs_one_layout)
{
	/* arange(2, 3) times itself on dp 2 x tp 2, tp shard(1): each rank
	 * multiplies its local values, no collective, and the global value
	 * is the squares 1, 4, ..., 36 (arange starts at 1). Different layouts on tp, or a
	 * partial one, are refused with a message naming the mesh dim. */
	struct tps_mesh m = mesh2(2, 2);
	const int64_t d[2] = {2, 3};
	struct tps_tensor g = arange(2, d), full;
	struct tps_placement sh[2] = {tps_placement_replicate(),
				      tps_placement_shard(1)};
	struct tps_placement rep[2] = {tps_placement_replicate(),
				       tps_placement_replicate()};
	struct tps_placement part[2] = {tps_placement_replicate(),
					tps_placement_partial()};
	struct tps_dtensor a, b, c, p, y;
	struct tps_error err = {0};
	ck_assert_int_eq(tps_dtensor_distribute(&a, &m, &g, sh, NULL), TPS_OK);
	ck_assert_int_eq(tps_dtensor_distribute(&b, &m, &g, sh, NULL), TPS_OK);
	ck_assert_int_eq(tps_dtensor_distribute(&c, &m, &g, rep, NULL), TPS_OK);
	ck_assert_int_eq(tps_dtensor_distribute(&p, &m, &g, part, NULL),
			 TPS_OK);
	ck_assert_int_eq(tps_dtensor_mul(&y, &a, &b, NULL), TPS_OK);
	ck_assert(tps_placement_equal(y.placements[1], sh[1]));
	ck_assert_int_eq(tps_dtensor_full_tensor(&y, &full, NULL), TPS_OK);
	for (int i = 0; i < 6; i++) {
		ck_assert_float_eq(full.data[i], (float)((i + 1) * (i + 1)));
	}
	ck_assert_int_eq(tps_dtensor_mul(&y, &a, &c, &err),
			 TPS_ERR_SHAPE);
	ck_assert_str_eq(err.message,
			 "element-wise product: mesh dim 1 (tp): expected "
			 "both operands in one layout, got shard(1) and "
			 "replicate");
	ck_assert_int_eq(tps_dtensor_mul(&y, &p, &p, &err), TPS_ERR_SHAPE);
	ck_assert_str_eq(err.message,
			 "element-wise product: mesh dim 1 (tp): expected no "
			 "partial operand (the product of sums is not the "
			 "sum of products), got partial");
	tps_dtensor_free(&a);
	tps_dtensor_free(&b);
	tps_dtensor_free(&c);
	tps_dtensor_free(&p);
	tps_dtensor_free(&y);
	tps_tensor_free(&full);
	tps_tensor_free(&g);
}
END_TEST

/* The sequence (dim 1 of (3, S, 8), 2 heads of 4) sharded over the
 * placements' mesh dims: RoPE on the shards equals RoPE on the whole,
 * bit for bit, for each style. */
static void check_rope_on_shards(const struct tps_mesh *m, int64_t S,
				 const struct tps_placement *pl)
{
	const int64_t d[3] = {3, S, 8};
	struct tps_tensor g = arange(3, d), want;
	struct tps_dtensor x, y;
	for (int style = 0; style < TPS_ROPE_STYLE_COUNT; style++) {
		for (int sign = -1; sign <= 1; sign += 2) {
			ck_assert_int_eq(tps_tensor_rope(&want, &g, 4, 0, 100.0,
							 style, sign, NULL),
					 TPS_OK);
			ck_assert_int_eq(
				tps_dtensor_distribute(&x, m, &g, pl, NULL),
				TPS_OK);
			ck_assert_int_eq(tps_dtensor_rope(&y, &x, 4, 100.0,
							  style, sign, NULL),
					 TPS_OK);
			for (int i = 0; i < m->ndim; i++) {
				ck_assert(tps_placement_equal(y.placements[i],
							      pl[i]));
			}
			assert_global(&y, &want);
			tps_dtensor_free(&x);
			tps_dtensor_free(&y);
			tps_tensor_free(&want);
		}
	}
	tps_tensor_free(&g);
}

START_TEST(rope_positions_follow_sequence_shards)
{
	/* Sequence (or context) parallel layouts: seq 13 over k = 1..8
	 * ranks in torch.chunk's shards (13 over 8: 2, 2, 2, 2, 2, 2, 1,
	 * 0), so rank r's rows start at global position 2r, not 0; on dp 2
	 * x cp k, the batch over dp and the sequence over cp, and the
	 * sequence over both dims flattened (one chunk of 2k) and as a
	 * chunk of a chunk. A partial tensor stays partial. A split head
	 * is refused. */
	const int64_t d[3] = {3, 13, 8};
	struct tps_tensor g = arange(3, d);
	struct tps_dtensor x, y;
	struct tps_error err = {0};
	for (int k = 1; k <= 8; k++) {
		struct tps_mesh m1 = mesh1(k), m2 = mesh2(2, k);
		struct tps_placement seq[1] = {tps_placement_shard(1)};
		struct tps_placement dp_cp[2] = {tps_placement_shard(0),
						 tps_placement_shard(1)};
		struct tps_placement flat[2] = {tps_placement_shard_flat(1),
						tps_placement_shard_flat(1)};
		struct tps_placement nested[2] = {tps_placement_shard(1),
						  tps_placement_shard(1)};
		struct tps_placement part[2] = {tps_placement_partial(),
						tps_placement_shard(1)};
		check_rope_on_shards(&m1, 13, seq);
		check_rope_on_shards(&m1, 3, seq);
		check_rope_on_shards(&m2, 13, dp_cp);
		check_rope_on_shards(&m2, 13, flat);
		check_rope_on_shards(&m2, 13, nested);
		check_rope_on_shards(&m2, 5, part);
	}
	{
		/* Whole heads on each rank (tp's split of q and k): fine. */
		struct tps_mesh m = mesh1(2);
		struct tps_placement heads[1] = {
			tps_placement_shard_blocks(2, 4)};
		check_rope_on_shards(&m, 13, heads);
	}
	{
		/* 8 features over 3 ranks: 3, 3, 2, so rank 0 holds a head
		 * and a part. */
		struct tps_mesh m = mesh1(3);
		struct tps_placement feat[1] = {tps_placement_shard(2)};
		ck_assert_int_eq(tps_dtensor_distribute(&x, &m, &g, feat, NULL),
				 TPS_OK);
		ck_assert_int_eq(tps_dtensor_rope(&y, &x, 4, 100.0,
						  TPS_ROPE_ROTATE_HALF, 1,
						  &err),
				 TPS_ERR_SHAPE);
		ck_assert_str_eq(err.message,
				 "rope: rank 0 holds features [0, 3) of 8: "
				 "expected whole heads of head_dim 4 (the "
				 "rotation pairs features within a head)");
		tps_dtensor_free(&x);
	}
	tps_tensor_free(&g);
}
END_TEST

static Suite *dtensor_suite(void)
{
	Suite *s = suite_create("dtensor");
	TCase *region = tcase_create("regions");
	TCase *redist = tcase_create("redistribute");
	TCase *blocks = tcase_create("blocks");
	tcase_add_test(region, region_is_a_chunk_of_a_chunk);
	tcase_add_test(region, product_needs_one_layout);
	tcase_add_test(region, rope_positions_follow_sequence_shards);
	tcase_add_test(region, region_over_a_flat_group_is_one_chunk);
	tcase_add_test(region,
		       local_shard_is_a_chunk_of_each_rank_local_tensor);
	tcase_add_test(region,
		       flat_shards_round_trip_and_are_not_redistributed);
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
	tcase_add_test(blocks, region_in_blocks_keeps_heads_whole);
	tcase_add_test(blocks, region_with_block_one_is_the_element_rule);
	tcase_add_test(blocks, placements_compare_blocks_and_normalise_zero);
	tcase_add_test(blocks, distribute_in_blocks_round_trips_for_every_k);
	tcase_add_test(blocks, redistribute_in_blocks_on_a_1d_mesh);
	tcase_add_test(blocks, redistribute_in_blocks_on_a_2d_mesh);
	tcase_add_test(blocks, blocks_that_do_not_divide_are_refused);
	suite_add_tcase(s, region);
	suite_add_tcase(s, redist);
	suite_add_tcase(s, blocks);
	return s;
}

int main(void)
{
	return tu_run_suite(dtensor_suite());
}
