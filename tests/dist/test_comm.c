/* comm: every collective against a hand computation, with its bytes. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "comm.h"

static struct tps_mesh mesh1(int n)
{
	const char *names[1] = {"tp"};
	struct tps_mesh m;
	ck_assert_int_eq(tps_mesh_init(&m, 1, &n, names, NULL), TPS_OK);
	return m;
}

static struct tps_mesh mesh_3x2(void)
{
	const int shape[2] = {3, 2};
	const char *names[2] = {"row", "col"};
	struct tps_mesh m;
	ck_assert_int_eq(tps_mesh_init(&m, 2, shape, names, NULL), TPS_OK);
	return m;
}

/* locals[r] = a 1-D tensor holding vals[r][0..n). */
static struct tps_tensor *vectors(int world, int n, const float *vals)
{
	struct tps_tensor *locals = calloc((size_t)world, sizeof *locals);
	int64_t d = n;
	struct tps_shape s = tps_shape_make(1, &d);
	for (int r = 0; r < world; r++) {
		ck_assert_int_eq(tps_tensor_init(&locals[r], &s, NULL), TPS_OK);
		memcpy(locals[r].data, vals + r * n, (size_t)n * sizeof(float));
	}
	return locals;
}

static void free_all(struct tps_tensor *locals, int world)
{
	for (int r = 0; r < world; r++) {
		tps_tensor_free(&locals[r]);
	}
	free(locals);
}

static void assert_vec(const struct tps_tensor *t, const float *want, int n)
{
	ck_assert_int_eq(t->shape.ndim, 1);
	ck_assert_int_eq(t->shape.dim[0], n);
	for (int i = 0; i < n; i++) {
		ck_assert_msg(t->data[i] == want[i], "element %d: %g != %g", i,
			      (double)t->data[i], (double)want[i]);
	}
}

START_TEST(all_gather_concatenates_uneven_shards)
{
	/* 7 columns over 3 ranks: 3, 3, 1 (the chunk rule). Rank r holds
	 * (2, len_r) with values 100 r + 10 i + j. */
	struct tps_mesh m = mesh1(3);
	const int64_t lens[3] = {3, 3, 1};
	struct tps_tensor locals[3];
	struct tps_comm_report rep;
	for (int r = 0; r < 3; r++) {
		int64_t d[2] = {2, lens[r]};
		struct tps_shape s = tps_shape_make(2, d);
		ck_assert_int_eq(tps_tensor_init(&locals[r], &s, NULL), TPS_OK);
		for (int i = 0; i < 2; i++) {
			for (int j = 0; j < lens[r]; j++) {
				locals[r].data[i * lens[r] + j] =
					(float)(100 * r + 10 * i + j);
			}
		}
	}
	ck_assert_int_eq(tps_comm_all_gather(&m, 1, locals, 1, &rep, NULL),
			 TPS_OK);
	for (int r = 0; r < 3; r++) {
		/* Row 1 = [10,11,12, 110,111,112, 210]. */
		const float row1[7] = {10, 11, 12, 110, 111, 112, 210};
		ck_assert_int_eq(locals[r].shape.dim[1], 7);
		for (int j = 0; j < 7; j++) {
			ck_assert_float_eq(locals[r].data[7 + j], row1[j]);
		}
		tps_tensor_free(&locals[r]);
	}
	/* (n-1) c, c = the largest shard 2 x 3 floats = 24 bytes. */
	ck_assert_int_eq(rep.op, TPS_COMM_ALL_GATHER);
	ck_assert_int_eq(rep.group_size, 3);
	ck_assert_int_eq(rep.bytes_per_rank, 48);
}
END_TEST

START_TEST(all_reduce_runs_in_each_group_of_one_dim)
{
	/* (3,2) mesh, along row (dim 0): groups [0,2,4], [1,3,5].
	 * Rank r holds [r, 10 r]. */
	struct tps_mesh m = mesh_3x2();
	const float vals[12] = {0, 0, 1, 10, 2, 20, 3, 30, 4, 40, 5, 50};
	const float sum0[2] = {6, 60}, sum1[2] = {9, 90};
	const float avg0[2] = {2, 20}, avg1[2] = {3, 30};
	const float max0[2] = {4, 40}, max1[2] = {5, 50};
	struct tps_comm_report rep;
	struct tps_tensor *l = vectors(6, 2, vals);
	ck_assert_int_eq(tps_comm_all_reduce(&m, 1, l, TPS_REDUCE_SUM,
					     TPS_COMM_F32, &rep, NULL),
			 TPS_OK);
	for (int r = 0; r < 6; r++) {
		assert_vec(&l[r], r % 2 ? sum1 : sum0, 2);
	}
	/* S = 2 elements, n = 3: c = ceil(2/3) = 1 float; 2 (n-1) c = 16. */
	ck_assert_int_eq(rep.bytes_per_rank, 16);
	free_all(l, 6);
	l = vectors(6, 2, vals);
	ck_assert_int_eq(tps_comm_all_reduce(&m, 1, l, TPS_REDUCE_AVG,
					     TPS_COMM_F32, NULL, NULL),
			 TPS_OK);
	for (int r = 0; r < 6; r++) {
		assert_vec(&l[r], r % 2 ? avg1 : avg0, 2);
	}
	free_all(l, 6);
	l = vectors(6, 2, vals);
	ck_assert_int_eq(tps_comm_all_reduce(&m, 1, l, TPS_REDUCE_MAX,
					     TPS_COMM_F32, NULL, NULL),
			 TPS_OK);
	for (int r = 0; r < 6; r++) {
		assert_vec(&l[r], r % 2 ? max1 : max0, 2);
	}
	free_all(l, 6);
}
END_TEST

/*
 * Reductions in a narrower dtype (comm.h): each member rounded to the sum's
 * dtype, the running sum rounded after each member (ranks 0, 1, 2), avg
 * rounded after its division, the result rounded to the store dtype.
 * bfloat16 has 8 significant bits: between 1 and 2 its step is 2^-7, so
 * 1 + 2^-8 is a tie and goes to 1 (even). Per element, ranks 0, 1, 2:
 *   e0 (1, 2^-8, 2^-8)        bf16 sum 1: 1 + 2^-8 ties to 1, twice;
 *                             float32 sum 1 + 2^-7, a bf16 value
 *   e1 (2^-8, 2^-8, 1)        2^-7 first, then 1 + 2^-7: every order
 *   e2 (1 + 2^-9, 0, 0)       not a bf16 value: rounded to 1 as a bf16
 *                             member; float32 keeps it
 *   e3 (3, 0, 0)              exact anywhere
 * avg of e0 in bf16: 1 / 3 = 0.0101010101...b, rounded to 8 bits
 * 1.0101011b x 2^-2 = 0.333984375; in float32, 1.0078125 / 3 = 0.3359375
 * (1.0101100b x 2^-2, a bf16 value, so the bf16 store keeps it).
 * float16 (11 bits, step 2^-10 above 1) holds 1 + 2^-8 and 1 + 2^-9: e0
 * sums to 1 + 2^-7 in it, and e2 stays 1 + 2^-9.
 */
START_TEST(all_reduce_in_bf16_rounds_each_addition)
{
	static const struct {
		struct tps_comm_dtypes dt;
		enum tps_reduce_op op;
		float want[4];
	} cases[] = {
		{{TPS_DTYPE_BF16, TPS_DTYPE_BF16},
		 TPS_REDUCE_SUM,
		 {1.0f, 1.0078125f, 1.0f, 3.0f}},
		{{TPS_DTYPE_BF16, TPS_DTYPE_F32},
		 TPS_REDUCE_SUM,
		 {1.0f, 1.0078125f, 1.0f, 3.0f}},
		{{TPS_DTYPE_F32, TPS_DTYPE_BF16},
		 TPS_REDUCE_SUM,
		 {1.0078125f, 1.0078125f, 1.0f, 3.0f}},
		{{TPS_DTYPE_F32, TPS_DTYPE_F32},
		 TPS_REDUCE_SUM,
		 {1.0078125f, 1.0078125f, 1.001953125f, 3.0f}},
		{{TPS_DTYPE_F16, TPS_DTYPE_F16},
		 TPS_REDUCE_SUM,
		 {1.0078125f, 1.0078125f, 1.001953125f, 3.0f}},
		{{TPS_DTYPE_BF16, TPS_DTYPE_BF16},
		 TPS_REDUCE_AVG,
		 {0.333984375f, 0.3359375f, 0.333984375f, 1.0f}},
		{{TPS_DTYPE_F32, TPS_DTYPE_BF16},
		 TPS_REDUCE_AVG,
		 {0.3359375f, 0.3359375f, 0.333984375f, 1.0f}},
	};
	const float h = 0.00390625f; /* 2^-8 */
	const float vals[12] = {1, h, 1.001953125f, 3, h, h, 0, 0, h, 1, 0, 0};
	struct tps_mesh m = mesh1(3);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct tps_tensor *l = vectors(3, 4, vals);
		ck_assert_int_eq(tps_comm_all_reduce(&m, 1, l, cases[i].op,
						     cases[i].dt, NULL, NULL),
				 TPS_OK);
		for (int r = 0; r < 3; r++) {
			for (int e = 0; e < 4; e++) {
				ck_assert_msg(l[r].data[e] == cases[i].want[e],
					      "case %zu rank %d element %d: "
					      "%.9g, expected %.9g",
					      i, r, e, l[r].data[e],
					      cases[i].want[e]);
			}
		}
		free_all(l, 3);
	}
}
END_TEST

/* reduce_scatter sums as all_reduce, then keeps a chunk: in bf16, rank 0
 * keeps e0 and e1 of the case above (1 and 1 + 2^-7), rank 1 e2 and e3. */
START_TEST(reduce_scatter_in_bf16_rounds_each_addition)
{
	const float h = 0.00390625f;
	const float vals[12] = {1, h, 1.001953125f, 3, h, h, 0, 0, h, 1, 0, 0};
	const float r0[2] = {1.0f, 1.0078125f}, r1[2] = {1.0f, 3.0f};
	struct tps_mesh m = mesh1(3);
	struct tps_comm_dtypes bf16 = {TPS_DTYPE_BF16, TPS_DTYPE_BF16};
	struct tps_tensor *l = vectors(3, 4, vals);
	ck_assert_int_eq(tps_comm_reduce_scatter(&m, 1, l, TPS_REDUCE_SUM, bf16,
						 0, NULL, NULL),
			 TPS_OK);
	/* 4 over 3: chunks of 2, 2, 0. */
	assert_vec(&l[0], r0, 2);
	assert_vec(&l[1], r1, 2);
	ck_assert_int_eq(l[2].shape.dim[0], 0);
	free_all(l, 3);
}
END_TEST

START_TEST(all_reduce_sums_in_ascending_group_order)
{
	/* float32, ranks 0, 1, 2 in order: (0 + 1e8) - 1e8 = 0, + 1 = 1.
	 * Descending, 1 - 1e8 rounds to -1e8 and + 1e8 gives 0; so the two
	 * orders give 1 and 0, and only ascending passes. */
	struct tps_mesh m = mesh1(3);
	const float vals[3] = {1e8f, -1e8f, 1.0f};
	const float want[1] = {1.0f};
	struct tps_tensor *l = vectors(3, 1, vals);
	ck_assert_int_eq(tps_comm_all_reduce(&m, 1, l, TPS_REDUCE_SUM,
					     TPS_COMM_F32, NULL, NULL),
			 TPS_OK);
	for (int r = 0; r < 3; r++) {
		assert_vec(&l[r], want, 1);
	}
	free_all(l, 3);
}
END_TEST

START_TEST(all_reduce_on_a_pool_keeps_the_ascending_order_per_element)
{
	/* 3 ranks x 50,001 elements (several chunks, the last short), each
	 * element the (1e8, -1e8, 1) case at a rotating position, so any
	 * other order would show; sum and avg, at 1, 2, 3 and 8 threads. */
	static const int counts[] = {1, 2, 3, 8};
	static const enum tps_reduce_op ops[] = {TPS_REDUCE_SUM,
						 TPS_REDUCE_AVG};
	const int n = 50001;
	float *vals = malloc((size_t)(3 * n) * sizeof *vals);
	for (int e = 0; e < n; e++) {
		vals[e] = e % 2 ? 1e8f : 3.0f * (float)e;
		vals[n + e] = e % 2 ? -1e8f : 0.5f;
		vals[2 * n + e] = e % 2 ? 1.0f : -0.25f * (float)e;
	}
	for (size_t o = 0; o < 2; o++) {
		for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
			struct tps_mesh m = mesh1(3);
			struct tps_tensor *l = vectors(3, n, vals);
			struct tps_pool *pool = NULL;
			ck_assert_int_eq(tps_pool_new(&pool, counts[c], NULL),
					 TPS_OK);
			m.pool = pool;
			ck_assert_int_eq(tps_comm_all_reduce(&m, 1, l, ops[o],
							     TPS_COMM_F32, NULL,
							     NULL),
					 TPS_OK);
			for (int r = 0; r < 3; r++) {
				for (int e = 0; e < n; e++) {
					float want = ((0.0f + vals[e]) +
						      vals[n + e]) +
						     vals[2 * n + e];
					if (ops[o] == TPS_REDUCE_AVG) {
						want /= 3.0f;
					}
					ck_assert_msg(l[r].data[e] == want,
						      "threads %d rank %d "
						      "element %d",
						      counts[c], r, e);
				}
			}
			free_all(l, 3);
			tps_pool_free(pool);
		}
	}
	free(vals);
}
END_TEST

START_TEST(reduce_scatter_keeps_chunk_i)
{
	/* Along col (groups [0,1],[2,3],[4,5]); rank r holds 5 values
	 * r*10 + i. Group {0,1} sum = [10,12,14,16,18] -> chunks of 3, 2. */
	struct tps_mesh m = mesh_3x2();
	float vals[30];
	const float g0_0[3] = {10, 12, 14}, g0_1[2] = {16, 18};
	const float g2_0[3] = {90, 92, 94}, g2_1[2] = {96, 98};
	struct tps_comm_report rep;
	struct tps_tensor *l;
	for (int r = 0; r < 6; r++) {
		for (int i = 0; i < 5; i++) {
			vals[r * 5 + i] = (float)(r * 10 + i);
		}
	}
	l = vectors(6, 5, vals);
	ck_assert_int_eq(tps_comm_reduce_scatter(&m, 2, l, TPS_REDUCE_SUM,
						 TPS_COMM_F32, 0, &rep, NULL),
			 TPS_OK);
	assert_vec(&l[0], g0_0, 3);
	assert_vec(&l[1], g0_1, 2);
	assert_vec(&l[4], g2_0, 3);
	assert_vec(&l[5], g2_1, 2);
	/* (n-1) c with c the padded chunk, 3 floats: 12 bytes. */
	ck_assert_int_eq(rep.bytes_per_rank, 12);
	free_all(l, 6);
}
END_TEST

START_TEST(broadcast_and_scatter_from_a_root)
{
	struct tps_mesh m = mesh1(3);
	const float vals[15] = {1, 2,  3,  4,  5,  6,  7, 8,
				9, 10, 11, 12, 13, 14, 15};
	const float root1[5] = {6, 7, 8, 9, 10};
	const float c0[2] = {1, 2}, c1[2] = {3, 4}, c2[1] = {5};
	struct tps_comm_report rep;
	struct tps_tensor *l = vectors(3, 5, vals);
	ck_assert_int_eq(tps_comm_broadcast(&m, 1, l, 1, &rep, NULL), TPS_OK);
	for (int r = 0; r < 3; r++) {
		assert_vec(&l[r], root1, 5);
	}
	ck_assert_int_eq(rep.bytes_per_rank, 20);
	free_all(l, 3);
	/* 5 over 3: chunks 2, 2, 1 of root 0's [1..5]. */
	l = vectors(3, 5, vals);
	ck_assert_int_eq(tps_comm_scatter(&m, 1, l, 0, 0, &rep, NULL), TPS_OK);
	assert_vec(&l[0], c0, 2);
	assert_vec(&l[1], c1, 2);
	assert_vec(&l[2], c2, 1);
	ck_assert_int_eq(rep.bytes_per_rank, 16);
	free_all(l, 3);
}
END_TEST

START_TEST(all_to_all_turns_shard0_into_shard1)
{
	/* Global (4,4) = arange 0..15. Rank j holds rows 2j..2j+1; after
	 * all_to_all(split 1, concat 0) it holds columns 2j..2j+1. */
	struct tps_mesh m = mesh1(2);
	struct tps_tensor l[2];
	struct tps_comm_report rep;
	for (int r = 0; r < 2; r++) {
		int64_t d[2] = {2, 4};
		struct tps_shape s = tps_shape_make(2, d);
		ck_assert_int_eq(tps_tensor_init(&l[r], &s, NULL), TPS_OK);
		for (int e = 0; e < 8; e++) {
			l[r].data[e] = (float)(8 * r + e);
		}
	}
	ck_assert_int_eq(tps_comm_all_to_all(&m, 1, l, 1, 0, &rep, NULL),
			 TPS_OK);
	for (int j = 0; j < 2; j++) {
		ck_assert_int_eq(l[j].shape.dim[0], 4);
		ck_assert_int_eq(l[j].shape.dim[1], 2);
		for (int i = 0; i < 4; i++) {
			for (int c = 0; c < 2; c++) {
				ck_assert_float_eq(l[j].data[i * 2 + c],
						   (float)(i * 4 + 2 * j + c));
			}
		}
		tps_tensor_free(&l[j]);
	}
	/* Each rank sends one (2,2) block: (n-1) c = 16 bytes. */
	ck_assert_int_eq(rep.bytes_per_rank, 16);
}
END_TEST

START_TEST(reduce_scatter_in_blocks_keeps_blocks_whole)
{
	/*
	 * 2 ranks, rank r holds 10 values 100 r + i: the sum is 100 + 2i =
	 * [100, 102, ..., 118]. In blocks of 2 (5 heads of head_dim 2) the
	 * chunk rule cuts 5 blocks over 2 ranks as 3, 2 blocks: rank 0 keeps
	 * elements [0,6) = 100..110, rank 1 [6,10) = 112..118 (the element
	 * rule would give 5 and 5, cutting block 2 in half). c is the padded
	 * chunk, 6 floats: (n-1) c = 24 bytes.
	 */
	struct tps_mesh m = mesh1(2);
	float vals[20];
	const float r0[6] = {100, 102, 104, 106, 108, 110};
	const float r1[4] = {112, 114, 116, 118};
	struct tps_comm_report rep;
	struct tps_tensor *l;
	for (int r = 0; r < 2; r++) {
		for (int i = 0; i < 10; i++) {
			vals[r * 10 + i] = (float)(100 * r + i);
		}
	}
	l = vectors(2, 10, vals);
	ck_assert_int_eq(
		tps_comm_reduce_scatter_blocks(&m, 1, l, TPS_REDUCE_SUM,
					       TPS_COMM_F32, 0, 2, &rep, NULL),
		TPS_OK);
	assert_vec(&l[0], r0, 6);
	assert_vec(&l[1], r1, 4);
	ck_assert_int_eq(rep.op, TPS_COMM_REDUCE_SCATTER);
	ck_assert_int_eq(rep.bytes_per_rank, 24);
	free_all(l, 2);
}
END_TEST

START_TEST(reduce_scatter_in_blocks_leaves_trailing_ranks_empty)
{
	/*
	 * 3 ranks, each holding [1..6]: the sum is [3, 6, ..., 18]. Two blocks
	 * of 3 over 3 ranks: 1, 1, 0 blocks, so rank 0 keeps [3,6,9], rank 1
	 * [12,15,18] and rank 2 nothing (a (0) shard). c = 3 floats:
	 * (n-1) c = 2 * 12 = 24 bytes.
	 */
	struct tps_mesh m = mesh1(3);
	const float vals[18] = {1, 2, 3, 4, 5, 6, 1, 2, 3,
				4, 5, 6, 1, 2, 3, 4, 5, 6};
	const float r0[3] = {3, 6, 9}, r1[3] = {12, 15, 18};
	struct tps_comm_report rep;
	struct tps_tensor *l = vectors(3, 6, vals);
	ck_assert_int_eq(
		tps_comm_reduce_scatter_blocks(&m, 1, l, TPS_REDUCE_SUM,
					       TPS_COMM_F32, 0, 3, &rep, NULL),
		TPS_OK);
	assert_vec(&l[0], r0, 3);
	assert_vec(&l[1], r1, 3);
	assert_vec(&l[2], NULL, 0);
	ck_assert_int_eq(rep.bytes_per_rank, 24);
	free_all(l, 3);
}
END_TEST

START_TEST(scatter_in_blocks_keeps_blocks_whole)
{
	/*
	 * 3 ranks, root 0 holds [1..8] in blocks of 2: 4 blocks over 3 ranks
	 * give ceil(4/3) = 2, 2, 0 blocks, i.e. [1,2,3,4], [5,6,7,8], []
	 * (the element rule would give 3, 3, 2). c = 4 floats at the root:
	 * (n-1) c = 2 * 16 = 32 bytes.
	 */
	struct tps_mesh m = mesh1(3);
	float vals[24];
	const float c0[4] = {1, 2, 3, 4}, c1[4] = {5, 6, 7, 8};
	struct tps_comm_report rep;
	struct tps_tensor *l;
	for (int e = 0; e < 24; e++) {
		vals[e] = (float)(e + 1);
	}
	l = vectors(3, 8, vals);
	ck_assert_int_eq(tps_comm_scatter_blocks(&m, 1, l, 0, 0, 2, &rep, NULL),
			 TPS_OK);
	assert_vec(&l[0], c0, 4);
	assert_vec(&l[1], c1, 4);
	assert_vec(&l[2], NULL, 0);
	ck_assert_int_eq(rep.op, TPS_COMM_SCATTER);
	ck_assert_int_eq(rep.bytes_per_rank, 32);
	free_all(l, 3);
}
END_TEST

START_TEST(all_to_all_in_blocks_turns_shard0_into_head_shards)
{
	/*
	 * Global (2,10) = 10 i + c. Rank j holds row j (shard(0) over 2).
	 * all_to_all(split 1 in blocks of 2, concat 0): the 5 blocks of
	 * columns go 3, 2 blocks to ranks 0, 1, so rank 0 ends with columns
	 * [0,6) of both rows, (2,6), and rank 1 with columns [6,10), (2,4):
	 * shard(1,block=2). Rank 1 sends rank 0 its row's columns 0-5 (6
	 * floats), rank 0 sends rank 1 columns 6-9 (4): the largest block is
	 * 6 floats, (n-1) c = 24 bytes.
	 */
	struct tps_mesh m = mesh1(2);
	struct tps_tensor l[2];
	struct tps_comm_report rep;
	const int64_t width[2] = {6, 4}, first[2] = {0, 6};
	for (int r = 0; r < 2; r++) {
		int64_t d[2] = {1, 10};
		struct tps_shape s = tps_shape_make(2, d);
		ck_assert_int_eq(tps_tensor_init(&l[r], &s, NULL), TPS_OK);
		for (int c = 0; c < 10; c++) {
			l[r].data[c] = (float)(10 * r + c);
		}
	}
	ck_assert_int_eq(
		tps_comm_all_to_all_blocks(&m, 1, l, 1, 2, 0, &rep, NULL),
		TPS_OK);
	for (int j = 0; j < 2; j++) {
		ck_assert_int_eq(l[j].shape.dim[0], 2);
		ck_assert_int_eq(l[j].shape.dim[1], width[j]);
		for (int i = 0; i < 2; i++) {
			for (int c = 0; c < width[j]; c++) {
				ck_assert_float_eq(
					l[j].data[i * width[j] + c],
					(float)(10 * i + first[j] + c));
			}
		}
		tps_tensor_free(&l[j]);
	}
	ck_assert_int_eq(rep.bytes_per_rank, 24);
}
END_TEST

START_TEST(blocks_that_do_not_divide_the_dim_fail_and_leave_buffers)
{
	/* 5 elements are not a whole number of blocks of 2. */
	struct tps_mesh m = mesh1(2);
	const float vals[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	struct tps_error err = {0};
	struct tps_tensor *l = vectors(2, 5, vals);
	ck_assert_int_eq(
		tps_comm_reduce_scatter_blocks(&m, 1, l, TPS_REDUCE_SUM,
					       TPS_COMM_F32, 0, 2, NULL, &err),
		TPS_ERR_SHAPE);
	ck_assert_msg(strstr(err.message, "5 elements, not a whole number "
					  "of blocks of 2") != NULL,
		      "%s", err.message);
	ck_assert_int_eq(tps_comm_scatter_blocks(&m, 1, l, 0, 0, 2, NULL, &err),
			 TPS_ERR_SHAPE);
	ck_assert_int_eq(
		tps_comm_all_to_all_blocks(&m, 1, l, 0, 2, 0, NULL, &err),
		TPS_ERR_SHAPE);
	assert_vec(&l[0], vals, 5);
	assert_vec(&l[1], vals + 5, 5);
	free_all(l, 2);
}
END_TEST

START_TEST(group_of_one_moves_nothing)
{
	struct tps_mesh m = mesh1(1);
	const float vals[2] = {3, 4};
	struct tps_comm_report rep;
	struct tps_tensor *l = vectors(1, 2, vals);
	ck_assert_int_eq(tps_comm_all_reduce(&m, 1, l, TPS_REDUCE_SUM,
					     TPS_COMM_F32, &rep, NULL),
			 TPS_OK);
	assert_vec(&l[0], vals, 2);
	ck_assert_int_eq(rep.bytes_per_rank, 0);
	free_all(l, 1);
}
END_TEST

START_TEST(mismatched_shapes_fail_and_leave_buffers)
{
	struct tps_mesh m = mesh1(2);
	struct tps_tensor l[2];
	struct tps_error err = {0};
	const int64_t a = 2, b = 3;
	struct tps_shape sa = tps_shape_make(1, &a), sb = tps_shape_make(1, &b);
	ck_assert_int_eq(tps_tensor_init(&l[0], &sa, NULL), TPS_OK);
	ck_assert_int_eq(tps_tensor_init(&l[1], &sb, NULL), TPS_OK);
	l[0].data[0] = 7;
	ck_assert_int_eq(tps_comm_all_reduce(&m, 1, l, TPS_REDUCE_SUM,
					     TPS_COMM_F32, NULL, &err),
			 TPS_ERR_SHAPE);
	ck_assert_ptr_nonnull(strstr(err.message, "(2)"));
	ck_assert_int_eq(l[0].shape.dim[0], 2);
	ck_assert_float_eq(l[0].data[0], 7);
	ck_assert_int_eq(tps_comm_all_gather(&m, 1, l, 3, NULL, &err),
			 TPS_ERR_SHAPE);
	tps_tensor_free(&l[0]);
	tps_tensor_free(&l[1]);
}
END_TEST

static Suite *comm_suite(void)
{
	Suite *s = suite_create("comm");
	TCase *gather = tcase_create("all_gather");
	TCase *reduce = tcase_create("all_reduce");
	TCase *scatter = tcase_create("scatter_family");
	TCase *edge = tcase_create("edge_cases");
	tcase_add_test(gather, all_gather_concatenates_uneven_shards);
	tcase_add_test(reduce, all_reduce_runs_in_each_group_of_one_dim);
	tcase_add_test(reduce, all_reduce_sums_in_ascending_group_order);
	tcase_add_test(reduce, all_reduce_in_bf16_rounds_each_addition);
	tcase_add_test(reduce, reduce_scatter_in_bf16_rounds_each_addition);
	tcase_add_test(
		reduce,
		all_reduce_on_a_pool_keeps_the_ascending_order_per_element);
	tcase_add_test(scatter, reduce_scatter_keeps_chunk_i);
	tcase_add_test(scatter, broadcast_and_scatter_from_a_root);
	tcase_add_test(scatter, all_to_all_turns_shard0_into_shard1);
	tcase_add_test(scatter, reduce_scatter_in_blocks_keeps_blocks_whole);
	tcase_add_test(scatter,
		       reduce_scatter_in_blocks_leaves_trailing_ranks_empty);
	tcase_add_test(scatter, scatter_in_blocks_keeps_blocks_whole);
	tcase_add_test(scatter,
		       all_to_all_in_blocks_turns_shard0_into_head_shards);
	tcase_add_test(
		edge, blocks_that_do_not_divide_the_dim_fail_and_leave_buffers);
	tcase_add_test(edge, group_of_one_moves_nothing);
	tcase_add_test(edge, mismatched_shapes_fail_and_leave_buffers);
	suite_add_tcase(s, gather);
	suite_add_tcase(s, reduce);
	suite_add_tcase(s, scatter);
	suite_add_tcase(s, edge);
	return s;
}

int main(void)
{
	return tu_run_suite(comm_suite());
}
