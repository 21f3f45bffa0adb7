/* tensor: shapes, the chunk rule, narrow/concat, the GEMM kernel. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "rng.h"
#include "memory.h"
#include "tensor.h"

static struct tps_tensor make(int ndim, const int64_t *dims)
{
	struct tps_tensor t;
	struct tps_shape s = tps_shape_make(ndim, dims);
	ck_assert_int_eq(tps_tensor_init(&t, &s, NULL), TPS_OK);
	return t;
}

static void fill_arange(struct tps_tensor *t)
{
	for (int64_t i = 0; i < tps_tensor_numel(t); i++) {
		t->data[i] = (float)(i + 1);
	}
}

START_TEST(chunk_rule_matches_torch_chunk)
{
	/* 13 over 6 -> 3,3,3,3,1,0 and 5 over 2 -> 3,2 (docs/design.md). */
	const int64_t want13[6] = {3, 3, 3, 3, 1, 0};
	const int64_t want_start13[6] = {0, 3, 6, 9, 12, 13};
	int64_t start, len;
	for (int i = 0; i < 6; i++) {
		tps_chunk_range(13, 6, i, &start, &len);
		ck_assert_int_eq(len, want13[i]);
		ck_assert_int_eq(start, want_start13[i]);
	}
	tps_chunk_range(5, 2, 0, &start, &len);
	ck_assert_int_eq(len, 3);
	tps_chunk_range(5, 2, 1, &start, &len);
	ck_assert_int_eq(start, 3);
	ck_assert_int_eq(len, 2);
	/* More shards than elements: 2 over 4 -> 1,1,0,0. */
	tps_chunk_range(2, 4, 3, &start, &len);
	ck_assert_int_eq(start, 2);
	ck_assert_int_eq(len, 0);
}
END_TEST

START_TEST(chunk_rule_covers_every_element_once)
{
	for (int64_t n = 0; n <= 40; n++) {
		for (int k = 1; k <= 9; k++) {
			int64_t next = 0, start, len;
			for (int i = 0; i < k; i++) {
				tps_chunk_range(n, k, i, &start, &len);
				ck_assert_int_eq(start, next);
				ck_assert_int_ge(len, 0);
				next = start + len;
			}
			ck_assert_int_eq(next, n);
		}
	}
}
END_TEST

START_TEST(chunk_rule_in_blocks_keeps_blocks_whole)
{
	/* 5 heads of 2 over 2: heads 3,2 -> features [0,6) and [6,10). */
	int64_t start, len;
	tps_chunk_range_blocks(10, 2, 2, 0, &start, &len);
	ck_assert_int_eq(start, 0);
	ck_assert_int_eq(len, 6);
	tps_chunk_range_blocks(10, 2, 2, 1, &start, &len);
	ck_assert_int_eq(start, 6);
	ck_assert_int_eq(len, 4);
	/* 2 blocks of 3 over 3: 3,3,0, the empty one at the end. */
	tps_chunk_range_blocks(6, 3, 3, 2, &start, &len);
	ck_assert_int_eq(start, 6);
	ck_assert_int_eq(len, 0);
	/* Block 1 is the element rule. */
	for (int64_t n = 0; n <= 20; n++) {
		for (int k = 1; k <= 8; k++) {
			for (int i = 0; i < k; i++) {
				int64_t s1, l1;
				tps_chunk_range(n, k, i, &start, &len);
				tps_chunk_range_blocks(n, 1, k, i, &s1, &l1);
				ck_assert_int_eq(s1, start);
				ck_assert_int_eq(l1, len);
			}
		}
	}
}
END_TEST

START_TEST(numel_overflow_is_refused)
{
	const int64_t big[3] = {1 << 20, 1 << 20, 4};
	const int64_t edge[2] = {(int64_t)1 << 31, 1};
	const int64_t over[2] = {((int64_t)1 << 31) + 1, 1};
	const int64_t wrap[4] = {INT64_MAX / 2, 4, 4, 4};
	struct tps_shape s = tps_shape_make(3, big);
	struct tps_error err = {0};
	struct tps_tensor t = {0};
	int64_t n = -7;
	ck_assert_int_eq(tps_shape_numel(&s, &n, &err), TPS_ERR_LIMIT);
	ck_assert_int_eq(n, -7); /* untouched on error */
	ck_assert_ptr_nonnull(strstr(err.message, "(1048576, 1048576, 4)"));
	s = tps_shape_make(2, edge);
	ck_assert_int_eq(tps_shape_numel(&s, &n, NULL), TPS_OK);
	ck_assert_int_eq(n, (int64_t)1 << 31);
	s = tps_shape_make(2, over);
	ck_assert_int_eq(tps_shape_numel(&s, &n, NULL), TPS_ERR_LIMIT);
	s = tps_shape_make(4, wrap);
	ck_assert_int_eq(tps_tensor_init(&t, &s, &err), TPS_ERR_LIMIT);
	ck_assert_ptr_null(t.data);
}
END_TEST

START_TEST(empty_tensor_keeps_its_shape)
{
	const int64_t dims[2] = {0, 4};
	struct tps_tensor t = make(2, dims);
	ck_assert_ptr_null(t.data);
	ck_assert_int_eq(t.shape.dim[1], 4);
	ck_assert_int_eq(tps_tensor_numel(&t), 0);
	tps_tensor_free(&t);
	tps_tensor_free(NULL);
}
END_TEST

START_TEST(narrow_then_concat_gives_back_the_tensor)
{
	const int64_t dims[3] = {2, 5, 3};
	struct tps_tensor t = make(3, dims), parts[3], joined;
	fill_arange(&t);
	for (int d = 0; d < 3; d++) {
		int64_t n = t.shape.dim[d], start, len;
		for (int i = 0; i < 3; i++) {
			tps_chunk_range(n, 3, i, &start, &len);
			ck_assert_int_eq(tps_tensor_narrow(&parts[i], &t, d,
							   start, len, NULL),
					 TPS_OK);
			ck_assert_int_eq(parts[i].shape.dim[d], len);
		}
		ck_assert_int_eq(tps_tensor_concat(&joined, parts, 3, d, NULL),
				 TPS_OK);
		ck_assert(tps_shape_equal(&joined.shape, &t.shape));
		for (int64_t e = 0; e < tps_tensor_numel(&t); e++) {
			ck_assert_float_eq(joined.data[e], t.data[e]);
		}
		tps_tensor_free(&joined);
		for (int i = 0; i < 3; i++) {
			tps_tensor_free(&parts[i]);
		}
	}
	tps_tensor_free(&t);
}
END_TEST

START_TEST(narrow_picks_the_right_columns)
{
	/* [[1,2,3,4],[5,6,7,8]][:, 1:3] = [[2,3],[6,7]] */
	const int64_t dims[2] = {2, 4};
	const float want[4] = {2, 3, 6, 7};
	struct tps_tensor t = make(2, dims), s;
	fill_arange(&t);
	ck_assert_int_eq(tps_tensor_narrow(&s, &t, 1, 1, 2, NULL), TPS_OK);
	for (int i = 0; i < 4; i++) {
		ck_assert_float_eq(s.data[i], want[i]);
	}
	tps_tensor_free(&s);
	tps_tensor_free(&t);
}
END_TEST

START_TEST(region_equals_narrowing_each_dim_in_turn)
{
	/* Every box of a (3, 4, 5) arange whose sides are 0, 1 or most of
	 * a dim, against narrow applied dim by dim. */
	const int64_t dims[3] = {3, 4, 5};
	struct tps_tensor t = make(3, dims);
	int boxes = 0;
	fill_arange(&t);
	for (int code = 0; code < 27 * 8; code++) {
		int64_t offset[3], length[3];
		struct tps_tensor box, cur = {0}, next;
		for (int d = 0, c = code; d < 3; d++, c /= 6) {
			offset[d] = c % 2;
			length[d] = (c / 2) % 3 == 0   ? 0
				    : (c / 2) % 3 == 1 ? 1
						       : dims[d] - offset[d];
		}
		ck_assert_int_eq(
			tps_tensor_region(&box, &t, offset, length, NULL),
			TPS_OK);
		ck_assert_int_eq(tps_tensor_copy(&cur, &t, NULL), TPS_OK);
		for (int d = 0; d < 3; d++) {
			ck_assert_int_eq(tps_tensor_narrow(&next, &cur, d,
							   offset[d], length[d],
							   NULL),
					 TPS_OK);
			tps_tensor_move(&cur, &next);
		}
		ck_assert(tps_shape_equal(&box.shape, &cur.shape));
		for (int64_t e = 0; e < tps_tensor_numel(&box); e++) {
			ck_assert_float_eq(box.data[e], cur.data[e]);
		}
		boxes += tps_tensor_numel(&box) > 0;
		tps_tensor_free(&box);
		tps_tensor_free(&cur);
	}
	ck_assert_int_gt(boxes, 50);
	tps_tensor_free(&t);
}
END_TEST

START_TEST(memory_counts_live_and_peak_tensor_bytes)
{
	/* Into the calling thread's account (memory.h); none bound, none
	 * counted. */
	const int64_t small[1] = {10}, big[2] = {1024, 1024};
	struct tps_memory_account account, *before;
	struct tps_tensor a, b, uncounted;
	int64_t live, peak;
	tps_memory_account_init(&account);
	before = tps_memory_account_bind(&account);
	ck_assert_ptr_eq(tps_memory_account_bound(), &account);
	a = make(1, small);
	b = make(2, big); /* 4 MiB: the huge-page path */
	tps_memory_account_read(&account, &live, &peak);
	ck_assert_int_eq(live, 40 + (4 << 20));
	ck_assert_int_eq(peak, live);
	for (int64_t e = 0; e < tps_tensor_numel(&b); e++) {
		ck_assert(b.data[e] == 0.0f);
	}
	tps_tensor_free(&b);
	tps_tensor_move(&a, &b); /* frees a's 40 bytes */
	tps_memory_account_read(&account, &live, &peak);
	ck_assert_int_eq(live, 0);
	ck_assert_int_eq(peak, 40 + (4 << 20));
	ck_assert_ptr_eq(tps_memory_account_bind(before), &account);
	uncounted = make(1, small);
	tps_tensor_free(&uncounted);
	tps_memory_account_read(&account, &live, &peak);
	ck_assert_int_eq(live, 0);
	ck_assert_int_eq(peak, 40 + (4 << 20));
}
END_TEST

/* Two threads, each with its own account, allocating at once: each
 * account sees its own thread's tensors only. */
struct account_thread {
	int64_t floats;
	struct tps_memory_account account;
	int64_t live, peak;
};

static void *allocate_in_own_account(void *opaque)
{
	struct account_thread *at = opaque;
	const int64_t dims[1] = {at->floats};
	struct tps_tensor t[8];
	tps_memory_account_init(&at->account);
	tps_memory_account_bind(&at->account);
	for (int i = 0; i < 8; i++) {
		t[i] = make(1, dims);
	}
	for (int i = 0; i < 8; i++) {
		tps_tensor_free(&t[i]);
	}
	tps_memory_account_read(&at->account, &at->live, &at->peak);
	tps_memory_account_bind(NULL);
	return NULL;
}

START_TEST(memory_accounts_of_two_threads_are_their_own)
{
	struct account_thread at[2] = {{.floats = 1000}, {.floats = 3000}};
	pthread_t tid[2];
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(pthread_create(&tid[i], NULL,
						allocate_in_own_account,
						&at[i]),
				 0);
	}
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(pthread_join(tid[i], NULL), 0);
		ck_assert_int_eq(at[i].live, 0);
		ck_assert_int_eq(at[i].peak, 8 * 4 * at[i].floats);
	}
}
END_TEST

START_TEST(concat_refuses_mismatched_shapes)
{
	const int64_t a_dims[2] = {2, 3}, b_dims[2] = {3, 3};
	struct tps_tensor parts[2] = {make(2, a_dims), make(2, b_dims)}, out;
	struct tps_error err = {0};
	ck_assert_int_eq(tps_tensor_concat(&out, parts, 2, 1, &err),
			 TPS_ERR_SHAPE);
	ck_assert_ptr_nonnull(strstr(err.message, "(2, 3) and (3, 3)"));
	tps_tensor_free(&parts[0]);
	tps_tensor_free(&parts[1]);
}
END_TEST

START_TEST(linear_matches_the_seed_hand_check)
{
	/* x = [1,2,3,4], W = [[1,2,3,4],[5,6,7,8]], b = [1, 2]:
	 * y = [1+4+9+16 + 1, 5+12+21+32 + 2] = [31, 72]. */
	const int64_t xd[2] = {1, 4}, wd[2] = {2, 4}, bd[1] = {2};
	struct tps_tensor x = make(2, xd), w = make(2, wd), b = make(1, bd), y;
	fill_arange(&x);
	fill_arange(&w);
	fill_arange(&b);
	ck_assert_int_eq(tps_tensor_linear(&y, &x, &w, &b, NULL, NULL), TPS_OK);
	ck_assert_int_eq(y.shape.ndim, 2);
	ck_assert_int_eq(y.shape.dim[1], 2);
	ck_assert_float_eq(y.data[0], 31.0f);
	ck_assert_float_eq(y.data[1], 72.0f);
	tps_tensor_free(&y);
	ck_assert_int_eq(tps_tensor_linear(&y, &x, &w, NULL, NULL, NULL),
			 TPS_OK);
	ck_assert_float_eq(y.data[0], 30.0f);
	ck_assert_float_eq(y.data[1], 70.0f);
	tps_tensor_free(&y);
	tps_tensor_free(&x);
	tps_tensor_free(&w);
	tps_tensor_free(&b);
}
END_TEST

START_TEST(linear_kernel_is_bit_identical_to_naive)
{
	/* Random N-D input, every n from 1 to 11 (the blocked loop and its
	 * tail), so the speed-up never changes a bit. */
	struct tps_rng rng;
	tps_rng_seed(&rng, 42);
	for (int64_t n = 1; n <= 11; n++) {
		const int64_t xd[3] = {2, 3, 17}, wd[2] = {n, 17};
		struct tps_tensor x = make(3, xd), w = make(2, wd), y;
		float *naive = calloc((size_t)(6 * n), sizeof *naive);
		for (int64_t i = 0; i < tps_tensor_numel(&x); i++) {
			x.data[i] = tps_rng_uniform(&rng, 1.0f);
		}
		for (int64_t i = 0; i < tps_tensor_numel(&w); i++) {
			w.data[i] = tps_rng_uniform(&rng, 1.0f);
		}
		ck_assert_int_eq(
			tps_tensor_linear(&y, &x, &w, NULL, NULL, NULL),
			TPS_OK);
		ck_assert_int_eq(y.shape.ndim, 3);
		tps_matmul_naive(naive, x.data, w.data, 6, n, 17, false, true);
		ck_assert_mem_eq(naive, y.data,
				 (size_t)(6 * n) * sizeof(float));
		free(naive);
		tps_tensor_free(&y);
		tps_tensor_free(&x);
		tps_tensor_free(&w);
	}
}
END_TEST

/* n floats uniform in [-1, 1), malloc'd (at least one byte). */
static float *random_floats(struct tps_rng *rng, int64_t n)
{
	float *x = malloc((size_t)n * sizeof *x + 1);
	ck_assert_ptr_nonnull(x);
	for (int64_t e = 0; e < n; e++) {
		x[e] = tps_rng_uniform(rng, 1);
	}
	return x;
}

START_TEST(matmul_on_a_pool_is_bit_identical_for_every_thread_count)
{
	/* Shapes past the parallel threshold through each cut: columns
	 * (x W^T, few rows), rows (many rows, or dW = dy^T x with dy's
	 * columns copied out), with odd sizes so blocks are uneven; the
	 * last is below the threshold (one thread). */
	static const int64_t shapes[][3] = {
		{5, 301, 203}, {3, 1029, 97}, {129, 71, 53}, {300, 70, 33},
		{17, 17, 17},  {1, 4099, 65}, {67, 129, 1}};
	static const int counts[] = {1, 2, 3, 8};
	struct tps_rng rng;
	tps_rng_seed(&rng, 11);
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
		float *a = random_floats(&rng, m * k);
		float *b = random_floats(&rng, k * n);
		float *want = malloc((size_t)(m * n) * 4);
		float *got = malloc((size_t)(m * n) * 4);
		for (int flags = 0; flags < 4; flags++) {
			bool ta = flags & 1, tb = flags & 2;
			tps_matmul_naive(want, a, b, m, n, k, ta, tb);
			for (size_t c = 0; c < sizeof counts / sizeof counts[0];
			     c++) {
				struct tps_pool *pool = NULL;
				ck_assert_int_eq(
					tps_pool_new(&pool, counts[c], NULL),
					TPS_OK);
				memset(got, 0xff, (size_t)(m * n) * 4);
				tps_matmul_on(pool, got, a, b, m, n, k, ta, tb);
				ck_assert_msg(memcmp(got, want,
						     (size_t)(m * n) * 4) == 0,
					      "threads %d trans %d%d m %lld n "
					      "%lld k %lld",
					      counts[c], ta, tb, (long long)m,
					      (long long)n, (long long)k);
				tps_pool_free(pool);
			}
		}
		free(a);
		free(b);
		free(want);
		free(got);
	}
}
END_TEST

START_TEST(matmul_is_bit_identical_to_naive_for_every_transpose)
{
	/* Odd shapes in every flag combination: the kernels reorder loops
	 * but never a sum, so each C[i][j] must equal the naive loop's bits.
	 * k = 1 and 129 reach the edges of the accumulation. */
	static const int64_t sizes[] = {1, 3, 4, 5, 17, 129};
	const int ns = (int)(sizeof sizes / sizeof sizes[0]);
	struct tps_rng rng;
	tps_rng_seed(&rng, 7);
	for (int flags = 0; flags < 4; flags++) {
		bool ta = flags & 1, tb = flags & 2;
		for (int im = 0; im < ns; im++) {
			for (int in = 0; in < ns; in++) {
				for (int ik = 0; ik < ns; ik++) {
					int64_t m = sizes[im], n = sizes[in];
					int64_t k = sizes[ik];
					float *a = random_floats(&rng, m * k);
					float *b = random_floats(&rng, k * n);
					float *c1 = malloc((size_t)(m * n) * 4);
					float *c2 = malloc((size_t)(m * n) * 4);
					tps_matmul(c1, a, b, m, n, k, ta, tb);
					tps_matmul_naive(c2, a, b, m, n, k, ta,
							 tb);
					ck_assert_msg(
						memcmp(c1, c2,
						       (size_t)(m * n) * 4) ==
							0,
						"trans %d%d m %lld n %lld k "
						"%lld",
						ta, tb, (long long)m,
						(long long)n, (long long)k);
					free(a);
					free(b);
					free(c1);
					free(c2);
				}
			}
		}
	}
}
END_TEST

START_TEST(matmul_naive_computes_each_transpose)
{
	/* A = [[1,2],[3,4]], B = [[5,6],[7,8]], k = 2:
	 * A B = [[19,22],[43,50]]; A B^T = [[17,23],[39,53]];
	 * A^T B = [[26,30],[38,44]]; A^T B^T = [[23,31],[34,46]]. */
	const float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
	const float want[4][4] = {{19, 22, 43, 50},
				  {26, 30, 38, 44},
				  {17, 23, 39, 53},
				  {23, 31, 34, 46}};
	for (int flags = 0; flags < 4; flags++) {
		float c[4];
		tps_matmul(c, a, b, 2, 2, 2, flags & 1, flags & 2);
		ck_assert_mem_eq(c, want[flags], sizeof c);
		tps_matmul_naive(c, a, b, 2, 2, 2, flags & 1, flags & 2);
		ck_assert_mem_eq(c, want[flags], sizeof c);
	}
}
END_TEST

/* Values where the order of a sum shows: magnitudes 1e8 beside 1, signed
 * zeros, denormals, and small values whose products underflow to
 * denormals. */
static float tricky_float(struct tps_rng *rng)
{
	uint64_t r = tps_rng_next(rng);
	float u = tps_rng_uniform(rng, 1.0f);
	switch (r % 8) {
	case 0: return u * 1e8f;
	case 1: return -0.0f;
	case 2: return 0.0f;
	case 3: return u * 1e-39f; /* a denormal */
	case 4: return u * 1e-20f;
	case 5: return (float)((r >> 32) % 7) - 3.0f;
	default: return u;
	}
}

static float *tricky_floats(struct tps_rng *rng, int64_t count)
{
	float *v = malloc((size_t)(count > 0 ? count : 1) * sizeof *v);
	ck_assert_ptr_nonnull(v);
	for (int64_t i = 0; i < count; i++) {
		v[i] = tricky_float(rng);
	}
	return v;
}

/* Fails naming the first element whose bits differ, with the max
 * difference over the finite ones. */
static void assert_same_bits(const float *got, const float *want, int64_t count,
			     const char *what, int flags, int64_t m, int64_t n,
			     int64_t k)
{
	int64_t first = -1;
	double max_diff = 0;
	for (int64_t e = 0; e < count; e++) {
		if (memcmp(&got[e], &want[e], sizeof(float)) != 0) {
			double d = fabs((double)got[e] - (double)want[e]);
			first = first < 0 ? e : first;
			max_diff = d > max_diff ? d : max_diff;
		}
	}
	ck_assert_msg(first < 0,
		      "%s trans_a %d trans_b %d m %lld n %lld k %lld: element "
		      "%lld is %a, naive %a; max difference %g",
		      what, flags & 1, (flags >> 1) & 1, (long long)m,
		      (long long)n, (long long)k, (long long)first,
		      first < 0 ? 0.0 : got[first],
		      first < 0 ? 0.0 : want[first], max_diff);
}

struct mnk {
	int64_t m, n, k;
};

/* Every supported variant against tps_matmul_naive, bit for bit, on each
 * shape in all four transpose combinations. C starts as garbage, so an
 * element a kernel forgets shows. */
static void check_variants_on(const struct mnk *shapes, int count,
			      uint64_t seed)
{
	struct tps_rng rng;
	tps_rng_seed(&rng, seed);
	for (int s = 0; s < count; s++) {
		const int64_t m = shapes[s].m, n = shapes[s].n, k = shapes[s].k;
		const size_t bytes = (size_t)(m * n > 0 ? m * n : 1) * 4;
		for (int flags = 0; flags < 4; flags++) {
			float *a = tricky_floats(&rng, m * k);
			float *b = tricky_floats(&rng, k * n);
			float *want = malloc(bytes), *got = malloc(bytes);
			ck_assert_ptr_nonnull(want);
			ck_assert_ptr_nonnull(got);
			tps_matmul_naive(want, a, b, m, n, k, flags & 1,
					 flags & 2);
			for (int v = 0; v < tps_matmul_variant_count(); v++) {
				if (!tps_matmul_variant_supported(v)) {
					continue;
				}
				memset(got, 0x7f, bytes);
				tps_matmul_variant(v, got, a, b, m, n, k,
						   flags & 1, flags & 2);
				assert_same_bits(got, want, m * n,
						 tps_matmul_variant_name(v),
						 flags, m, n, k);
			}
			free(a);
			free(b);
			free(want);
			free(got);
		}
	}
}

START_TEST(matmul_every_variant_is_bit_identical_to_naive)
{
	/* Every tail of the vectors (lanes 4, 8, 16), of the register
	 * tiles and of one panel (64 columns at most): m and n both ways
	 * round, so C and C^T tiles both run, for short sums. */
	static const int64_t sizes[] = {0,  1,	2,  3,	5,  7,
					15, 16, 17, 31, 33, 64};
	static const int64_t ks[] = {0, 1, 2, 3, 17};
	enum { NS = sizeof sizes / sizeof sizes[0] };
	enum { NK = sizeof ks / sizeof ks[0] };
	struct mnk shapes[NS * NS * NK];
	int count = 0;
	for (int i = 0; i < NS; i++) {
		for (int j = 0; j < NS; j++) {
			for (int p = 0; p < NK; p++) {
				shapes[count++] =
					(struct mnk){sizes[i], sizes[j], ks[p]};
			}
		}
	}
	check_variants_on(shapes, count, 11);
}
END_TEST

START_TEST(matmul_every_variant_is_bit_identical_across_block_edges)
{
	/* Per variant, shapes just past each of its blocks: k over one and
	 * two p blocks (partial sums kept in C or in a buffer, reloaded),
	 * m over the row block and n over the column block (several packed
	 * blocks), and panels of every width beside a batch-sized m. */
	for (int v = 0; v < tps_matmul_variant_count(); v++) {
		struct tps_matmul_blocking bl;
		int64_t k1, k2, ks, nr, mr, lanes;
		if (!tps_matmul_variant_supported(v)) {
			continue;
		}
		tps_matmul_variant_blocking(v, &bl);
		k1 = bl.kc + 1;
		k2 = 2 * bl.kc + 3;
		ks = bl.kc_single;
		nr = bl.nr;
		mr = bl.mr;
		lanes = bl.lanes;
		{
			const struct mnk shapes[] = {
				{1, 2 * nr + 3, k1},
				{3, 17, k2},
				{lanes + 1, nr + 1, k1},
				{nr, 2 * nr + 5, k2},
				{2 * nr + 1, nr + 3, k1},
				{2 * nr + 1, 2 * nr + 1, k2},
				{mr + 1, 1, k2},
				{129, 3, k1},
				{bl.mc + mr + 1, bl.nc + nr + 1, 3},
				{nr + 1, bl.nc + 1, 2},
				{bl.mc + 1, nr + 1, 5},
				{257, 17, 33},
				{33, 257, 15},
				{lanes + 1, bl.mc + 2 * nr + 1, k1},
				{nr + 5, nr + 2 * lanes + 1, 7},
				{nr + 5, nr + lanes + 3, 7},
				{2 * lanes + 3, nr + 9, k1},
				{3 * lanes - 1, 3 * nr, 9},
				{bl.small_m, 2 * nr + 5, 2 * ks + 1},
				{bl.small_m / 2 + 1, nr + lanes + 1, ks + 3},
				{lanes + 1, 2 * nr + 3, ks + 1},
				{2 * lanes + 1, nr - 1, ks + 2},
				{16, 33, ks + 1},
				{9, 40, ks + 1},
			};
			check_variants_on(
				shapes, (int)(sizeof shapes / sizeof shapes[0]),
				100 + (uint64_t)v);
		}
		/* Every row count of the unpacked-B tiles, with a tail. */
		for (int m = 1; m <= bl.small_m; m++) {
			const struct mnk shape = {m, nr + 2 * lanes + 3, 7};
			check_variants_on(&shape, 1, 200 + (uint64_t)m);
		}
	}
}
END_TEST

/* Copies the (rows, cols) matrix src into rows of ld floats, the
 * padding NaN: an operand stored inside a bigger matrix. */
static float *padded(const float *src, int64_t rows, int64_t cols, int64_t ld)
{
	float *p = malloc((size_t)(rows * ld + 1) * sizeof *p);
	ck_assert_ptr_nonnull(p);
	for (int64_t i = 0; i < rows * ld; i++) {
		p[i] = NAN;
	}
	for (int64_t r = 0; r < rows; r++) {
		memcpy(p + r * ld, src + r * cols, (size_t)cols * sizeof *p);
	}
	return p;
}

START_TEST(matmul_with_leading_dims_is_bit_identical_to_naive)
{
	/* Each operand a block of a wider matrix (its padding NaN, which
	 * must never be read) and C a block of a wider one (its padding
	 * must be left as it was), for every variant, every transpose, the
	 * pool's cuts and shapes past the blocks: the bits of the
	 * contiguous product. */
	static const struct mnk shapes[] = {
		{1, 1, 1},     {3, 5, 7},      {32, 300, 97}, {5, 301, 203},
		{129, 71, 53}, {17, 33, 1100}, {300, 70, 33}, {9, 40, 0},
		{256, 64, 64}, {64, 256, 256}};
	struct tps_rng rng;
	tps_rng_seed(&rng, 23);
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		const int64_t m = shapes[s].m, n = shapes[s].n, k = shapes[s].k;
		for (int flags = 0; flags < 4; flags++) {
			bool ta = flags & 1, tb = flags & 2;
			int64_t ar = ta ? k : m, ac = ta ? m : k;
			int64_t br = tb ? n : k, bc = tb ? k : n;
			int64_t lda = ac + 3, ldb = bc + 17, ldc = n + 5;
			float *a = random_floats(&rng, m * k);
			float *b = random_floats(&rng, k * n);
			float *pa = padded(a, ar, ac, lda);
			float *pb = padded(b, br, bc, ldb);
			float *want = malloc((size_t)(m * n + 1) * 4);
			float *got = malloc((size_t)(m * ldc + 1) * 4);
			ck_assert_ptr_nonnull(want);
			ck_assert_ptr_nonnull(got);
			tps_matmul_naive(want, a, b, m, n, k, ta, tb);
			for (int v = -2; v < tps_matmul_variant_count(); v++) {
				struct tps_pool *pool = NULL;
				if (v >= 0 &&
				    !tps_matmul_variant_supported(v)) {
					continue;
				}
				memset(got, 0x7f, (size_t)(m * ldc) * 4);
				if (v == -2) {
					tps_matmul_naive_ld(got, ldc, pa, lda,
							    pb, ldb, m, n, k,
							    ta, tb);
				} else if (v == -1) {
					ck_assert_int_eq(
						tps_pool_new(&pool, 3, NULL),
						TPS_OK);
					tps_matmul_on_ld(pool, got, ldc, pa,
							 lda, pb, ldb, m, n, k,
							 ta, tb);
					tps_pool_free(pool);
				} else {
					tps_matmul_variant_ld(v, got, ldc, pa,
							      lda, pb, ldb, m,
							      n, k, ta, tb);
				}
				for (int64_t i = 0; i < m; i++) {
					const unsigned char *pad =
						(const unsigned char
							 *)(got + i * ldc + n);
					ck_assert_msg(
						memcmp(got + i * ldc,
						       want + i * n,
						       (size_t)n * 4) == 0,
						"variant %d trans %d%d m %lld "
						"n %lld k %lld row %lld",
						v, ta, tb, (long long)m,
						(long long)n, (long long)k,
						(long long)i);
					for (int64_t e = 0; e < (ldc - n) * 4;
					     e++) {
						ck_assert_int_eq(pad[e], 0x7f);
					}
				}
			}
			free(a);
			free(b);
			free(pa);
			free(pb);
			free(want);
			free(got);
		}
	}
}
END_TEST

START_TEST(view_region_shares_a_contiguous_block_and_copies_the_rest)
{
	/* (3, 4, 5): a block of whole rows of dim 1 within one index of
	 * dim 0 is contiguous (a view into src); a cut of dim 2 alone whose
	 * rows are one stretch of (3, 4) is evenly spaced rows (a strided
	 * view, rows 5 apart); a block of dim 1 across two of dim 0 is
	 * neither (a copy), nor is a cut of dim 2 within it. All hold
	 * tps_tensor_region's values, element i at tps_tensor_offset;
	 * freeing a view leaves src whole. */
	int64_t dims[3] = {3, 4, 5};
	struct tps_shape sh = tps_shape_make(3, dims);
	struct tps_tensor src, v, c, want;
	static const int64_t cases[][6] = {
		/* offset, length */
		{1, 1, 0, 1, 2, 5}, {0, 0, 0, 3, 4, 5}, {0, 0, 1, 3, 4, 2},
		{0, 1, 0, 2, 2, 5}, {2, 0, 0, 1, 4, 5}, {1, 1, 2, 1, 3, 3},
		{0, 1, 1, 2, 2, 2}, {1, 2, 4, 1, 1, 1}};
	/* 0: a copy; 1: a contiguous view; 2: a strided view */
	static const int kinds[] = {1, 1, 2, 0, 1, 2, 0, 1};
	ck_assert_int_eq(tps_tensor_init(&src, &sh, NULL), TPS_OK);
	for (int i = 0; i < 60; i++) {
		src.data[i] = (float)i;
	}
	for (int t = 0; t < 8; t++) {
		ck_assert_int_eq(tps_tensor_view_region(&v, &src, cases[t],
							cases[t] + 3, NULL),
				 TPS_OK);
		ck_assert_int_eq(tps_tensor_region(&want, &src, cases[t],
						   cases[t] + 3, NULL),
				 TPS_OK);
		ck_assert(tps_shape_equal(&v.shape, &want.shape));
		ck_assert_msg(tps_tensor_is_view(&v) == (kinds[t] > 0),
			      "case %d", t);
		ck_assert_int_eq(v.row_stride, kinds[t] == 2 ? 5 : 0);
		ck_assert_int_eq(tps_tensor_row_stride(&v),
				 kinds[t] == 2 ? 5 : cases[t][5]);
		for (int64_t i = 0; i < tps_tensor_numel(&want); i++) {
			ck_assert_float_eq(v.data[tps_tensor_offset(&v, i)],
					   want.data[i]);
		}
		if (kinds[t]) {
			ck_assert(v.data >= src.data && v.data < src.data + 60);
		}
		ck_assert_int_eq(tps_tensor_copy(&c, &v, NULL), TPS_OK);
		ck_assert(!tps_tensor_is_view(&c) && c.row_stride == 0);
		ck_assert(memcmp(c.data, want.data,
				 (size_t)tps_tensor_numel(&want) * 4) == 0);
		tps_tensor_free(&v);
		tps_tensor_free(&c);
		tps_tensor_free(&want);
		ck_assert_float_eq(src.data[59], 59.0f);
	}
	tps_tensor_free(&src);
}
END_TEST

START_TEST(strided_view_reads_as_its_copy)
{
	/* W (7, 10) and its column block W[:, 3:7], a strided view (rows 10
	 * apart) of a rowwise shard(1)'s kind: every op that takes one
	 * gives the bits it gives on the block's copy. The columns around
	 * the block are NaN, so a read outside it shows. */
	int64_t wd[2] = {7, 10}, xd[3] = {2, 3, 4}, dyd[2] = {5, 7};
	int64_t off[2] = {0, 3}, len[2] = {7, 4};
	struct tps_shape wsh = tps_shape_make(2, wd);
	struct tps_shape xsh = tps_shape_make(3, xd);
	struct tps_shape dysh = tps_shape_make(2, dyd);
	struct tps_tensor w, view, copy, x, dy, a, b;
	int64_t bad = -1;
	ck_assert_int_eq(tps_tensor_init(&w, &wsh, NULL), TPS_OK);
	for (int i = 0; i < 70; i++) {
		int col = i % 10;
		w.data[i] =
			col >= 3 && col < 7 ? (float)(i * 37 % 11) - 5.0f : NAN;
	}
	ck_assert_int_eq(tps_tensor_view_region(&view, &w, off, len, NULL),
			 TPS_OK);
	ck_assert_int_eq(view.row_stride, 10);
	ck_assert_int_eq(tps_tensor_copy(&copy, &view, NULL), TPS_OK);
	ck_assert(tps_tensor_all_finite(&view, &bad));
	ck_assert_int_eq(bad, -1);
	ck_assert_int_eq(tps_tensor_init(&x, &xsh, NULL), TPS_OK);
	for (int i = 0; i < 24; i++) {
		x.data[i] = (float)(i % 5) * 0.25f - 0.5f;
	}
	ck_assert_int_eq(tps_tensor_init(&dy, &dysh, NULL), TPS_OK);
	for (int i = 0; i < 35; i++) {
		dy.data[i] = (float)(i % 3) - 1.0f;
	}
	/* y = x W^T, its |W| form, and dx = dy W */
	ck_assert_int_eq(tps_tensor_linear(&a, &x, &view, NULL, NULL, NULL),
			 TPS_OK);
	ck_assert_int_eq(tps_tensor_linear(&b, &x, &copy, NULL, NULL, NULL),
			 TPS_OK);
	ck_assert(memcmp(a.data, b.data, 2 * 3 * 7 * 4) == 0);
	tps_tensor_free(&a);
	tps_tensor_free(&b);
	ck_assert_int_eq(
		tps_tensor_linear_abs(&a, &x, &view, TPS_ABS_B, NULL, NULL),
		TPS_OK);
	ck_assert_int_eq(
		tps_tensor_linear_abs(&b, &x, &copy, TPS_ABS_B, NULL, NULL),
		TPS_OK);
	ck_assert(memcmp(a.data, b.data, 2 * 3 * 7 * 4) == 0);
	tps_tensor_free(&a);
	tps_tensor_free(&b);
	ck_assert_int_eq(
		tps_tensor_linear_backward_input(&a, &dy, &view, NULL, NULL),
		TPS_OK);
	ck_assert_int_eq(
		tps_tensor_linear_backward_input(&b, &dy, &copy, NULL, NULL),
		TPS_OK);
	ck_assert(memcmp(a.data, b.data, 5 * 4 * 4) == 0);
	tps_tensor_free(&a);
	tps_tensor_free(&b);
	/* narrow of the view: its columns 1..2, and its rows 2..5 */
	ck_assert_int_eq(tps_tensor_narrow(&a, &view, 1, 1, 2, NULL), TPS_OK);
	ck_assert_int_eq(tps_tensor_narrow(&b, &copy, 1, 1, 2, NULL), TPS_OK);
	ck_assert(memcmp(a.data, b.data, 7 * 2 * 4) == 0);
	tps_tensor_free(&a);
	tps_tensor_free(&b);
	ck_assert_int_eq(tps_tensor_narrow(&a, &view, 0, 2, 3, NULL), TPS_OK);
	ck_assert_int_eq(tps_tensor_narrow(&b, &copy, 0, 2, 3, NULL), TPS_OK);
	ck_assert(memcmp(a.data, b.data, 3 * 4 * 4) == 0);
	tps_tensor_free(&a);
	tps_tensor_free(&b);
	/* a non-finite value is found at its element index, not offset */
	w.data[5 * 10 + 4] = INFINITY;
	ck_assert(!tps_tensor_all_finite(&view, &bad));
	ck_assert_int_eq(bad, 5 * 4 + 1);
	tps_tensor_free(&view);
	tps_tensor_free(&copy);
	tps_tensor_free(&x);
	tps_tensor_free(&dy);
	tps_tensor_free(&w);
}
END_TEST

START_TEST(zero_view_reads_zeros_and_holds_no_account)
{
	/* 64 MiB of zeros that a run's account does not see; freed. */
	int64_t dims[2] = {4096, 4096};
	struct tps_shape sh = tps_shape_make(2, dims);
	struct tps_memory_account acc;
	struct tps_tensor z;
	int64_t live, peak;
	double sum = 0.0;
	tps_memory_account_init(&acc);
	tps_memory_account_bind(&acc);
	ck_assert_int_eq(tps_tensor_init_zero_view(&z, &sh, NULL), TPS_OK);
	ck_assert(tps_tensor_is_view(&z));
	for (int64_t i = 0; i < 4096 * 4096; i += 997) {
		sum += z.data[i];
	}
	ck_assert(sum == 0.0 && z.data[4096 * 4096 - 1] == 0.0f);
	tps_memory_account_read(&acc, &live, &peak);
	ck_assert_int_eq(peak, 0);
	tps_tensor_free(&z);
	ck_assert_ptr_null(z.data);
	tps_memory_account_bind(NULL);
}
END_TEST

/* t with every value's magnitude, as a new tensor. */
static struct tps_tensor magnitudes(const struct tps_tensor *t)
{
	struct tps_tensor m;
	ck_assert_int_eq(tps_tensor_copy(&m, t, NULL), TPS_OK);
	for (int64_t i = 0; i < tps_tensor_numel(&m); i++) {
		m.data[i] = 1.0f * fabsf(m.data[i]);
	}
	return m;
}

START_TEST(linear_abs_is_bit_identical_to_linear_on_magnitudes)
{
	/* x (3, k), W (n, k) with k = 16384: |W| goes in blocks of 64 of
	 * its rows (forward) or columns (input), n = 200 over four blocks,
	 * the last short; dW of dy (3, n) and x, both by magnitude. Each
	 * against the plain call on the magnitudes' tensors, bit for bit,
	 * with a pool of 2 and without. */
	int64_t xd[2] = {3, 16384}, wd[2] = {200, 16384}, yd[2] = {3, 200};
	struct tps_shape xs = tps_shape_make(2, xd), ws = tps_shape_make(2, wd);
	struct tps_shape ys = tps_shape_make(2, yd);
	struct tps_tensor x, w, dy, ax, aw, ady, got, want;
	struct tps_pool *pool = NULL;
	struct tps_rng rng;
	tps_rng_seed(&rng, 5);
	ck_assert_int_eq(tps_tensor_init(&x, &xs, NULL), TPS_OK);
	ck_assert_int_eq(tps_tensor_init(&w, &ws, NULL), TPS_OK);
	ck_assert_int_eq(tps_tensor_init(&dy, &ys, NULL), TPS_OK);
	for (int64_t i = 0; i < 3 * 16384; i++) {
		x.data[i] = tps_rng_uniform(&rng, 1.0f);
	}
	for (int64_t i = 0; i < 200 * 16384; i++) {
		w.data[i] = tps_rng_uniform(&rng, 1.0f);
	}
	for (int64_t i = 0; i < 3 * 200; i++) {
		dy.data[i] = tps_rng_uniform(&rng, 1.0f);
	}
	ax = magnitudes(&x);
	aw = magnitudes(&w);
	ady = magnitudes(&dy);
	ck_assert_int_eq(tps_pool_new(&pool, 2, NULL), TPS_OK);
	for (int threads = 0; threads < 2; threads++) {
		struct tps_pool *p = threads ? pool : NULL;
		for (unsigned abs = 1; abs <= 3; abs++) {
			const struct tps_tensor *a1 =
				abs & TPS_ABS_A ? &ax : &x;
			const struct tps_tensor *b1 =
				abs & TPS_ABS_B ? &aw : &w;
			const struct tps_tensor *d1 =
				abs & TPS_ABS_A ? &ady : &dy;
			const struct tps_tensor *x2 =
				abs & TPS_ABS_B ? &ax : &x;
			ck_assert_int_eq(tps_tensor_linear_abs(&got, &x, &w,
							       abs, p, NULL),
					 TPS_OK);
			ck_assert_int_eq(
				tps_tensor_linear(&want, a1, b1, NULL, p, NULL),
				TPS_OK);
			ck_assert(memcmp(got.data, want.data, 3 * 200 * 4) ==
				  0);
			tps_tensor_free(&got);
			tps_tensor_free(&want);
			ck_assert_int_eq(tps_tensor_linear_backward_input_abs(
						 &got, &dy, &w, abs, p, NULL),
					 TPS_OK);
			ck_assert_int_eq(tps_tensor_linear_backward_input(
						 &want, d1, b1, p, NULL),
					 TPS_OK);
			ck_assert(memcmp(got.data, want.data, 3 * 16384 * 4) ==
				  0);
			tps_tensor_free(&got);
			tps_tensor_free(&want);
			ck_assert_int_eq(tps_tensor_linear_backward_weight_abs(
						 &got, &dy, &x, abs, p, NULL),
					 TPS_OK);
			ck_assert_int_eq(tps_tensor_linear_backward_weight(
						 &want, d1, x2, p, NULL),
					 TPS_OK);
			ck_assert(memcmp(got.data, want.data,
					 200 * 16384 * 4) == 0);
			tps_tensor_free(&got);
			tps_tensor_free(&want);
		}
	}
	tps_pool_free(pool);
	tps_tensor_free(&x);
	tps_tensor_free(&w);
	tps_tensor_free(&dy);
	tps_tensor_free(&ax);
	tps_tensor_free(&aw);
	tps_tensor_free(&ady);
}
END_TEST

START_TEST(matmul_every_variant_matches_naive_on_infinities)
{
	/* inf * 0 and inf - inf make NaNs; every variant makes the same
	 * ones in the same places. */
	struct tps_rng rng;
	tps_rng_seed(&rng, 5);
	for (int flags = 0; flags < 4; flags++) {
		const int64_t m = 19, n = 37, k = 9;
		float *a = tricky_floats(&rng, m * k);
		float *b = tricky_floats(&rng, k * n);
		float want[19 * 37], got[19 * 37];
		a[3] = INFINITY;
		a[40] = -INFINITY;
		b[7] = INFINITY;
		b[100] = -INFINITY;
		tps_matmul_naive(want, a, b, m, n, k, flags & 1, flags & 2);
		for (int v = 0; v < tps_matmul_variant_count(); v++) {
			if (tps_matmul_variant_supported(v)) {
				tps_matmul_variant(v, got, a, b, m, n, k,
						   flags & 1, flags & 2);
				assert_same_bits(got, want, m * n,
						 tps_matmul_variant_name(v),
						 flags, m, n, k);
			}
		}
		free(a);
		free(b);
	}
}
END_TEST

START_TEST(matmul_test_data_tells_summation_orders_apart)
{
	/* The bit-identity tests could pass with a kernel that sums in
	 * another order only if the data hid it: summed from p = k-1 down,
	 * or with fused multiply-adds, the same products must give other
	 * bits. */
	const int64_t m = 16, n = 16, k = 33;
	struct tps_rng rng;
	float *a, *b;
	float want[16 * 16], desc[16 * 16], fused[16 * 16];
	int differ_desc = 0, differ_fused = 0;
	tps_rng_seed(&rng, 11);
	a = tricky_floats(&rng, m * k);
	b = tricky_floats(&rng, k * n);
	tps_matmul_naive(want, a, b, m, n, k, false, false);
	for (int64_t i = 0; i < m; i++) {
		for (int64_t j = 0; j < n; j++) {
			float s = 0.0f, f = 0.0f;
			for (int64_t p = k - 1; p >= 0; p--) {
				s += a[i * k + p] * b[p * n + j];
			}
			for (int64_t p = 0; p < k; p++) {
				f = fmaf(a[i * k + p], b[p * n + j], f);
			}
			desc[i * n + j] = s;
			fused[i * n + j] = f;
		}
	}
	for (int64_t e = 0; e < m * n; e++) {
		differ_desc += memcmp(&desc[e], &want[e], 4) != 0;
		differ_fused += memcmp(&fused[e], &want[e], 4) != 0;
	}
	ck_assert_msg(differ_desc > m * n / 4 && differ_fused > m * n / 4,
		      "descending order differs in %d of %lld elements, fused "
		      "in %d",
		      differ_desc, (long long)(m * n), differ_fused);
	free(a);
	free(b);
}
END_TEST

START_TEST(matmul_k_zero_gives_positive_zeros)
{
	/* Every C[i][j] starts from +0.0f, whatever C held; and with k = 1
	 * and a product of -0, 0.0f + -0.0f is +0.0f. */
	const float a[3] = {-0.0f, 1.0f, -0.0f}, b[2] = {1.0f, -2.0f};
	const float zeros[6] = {0};
	for (int v = 0; v < tps_matmul_variant_count(); v++) {
		float c[6];
		if (!tps_matmul_variant_supported(v)) {
			continue;
		}
		memset(c, 0xff, sizeof c);
		tps_matmul_variant(v, c, a, b, 3, 2, 0, false, false);
		ck_assert_mem_eq(c, zeros, sizeof c);
		tps_matmul_variant(v, c, a, b, 3, 2, 1, false, false);
		ck_assert_mem_eq(&c[0], zeros, 2 * sizeof(float));
		ck_assert_mem_eq(&c[4], zeros, 2 * sizeof(float));
		ck_assert_float_eq(c[3], -2.0f);
	}
}
END_TEST

/* One thread's share of the concurrency test: `rounds` calls of
 * tps_matmul, each checked against the naive result. */
struct matmul_job {
	int64_t m, n, k;
	bool trans_a, trans_b;
	const float *a, *b, *want;
	float *got;
	int rounds, mismatches;
};

static void *matmul_job_run(void *arg)
{
	struct matmul_job *job = arg;
	const size_t bytes = (size_t)(job->m * job->n) * sizeof(float);
	for (int r = 0; r < job->rounds; r++) {
		memset(job->got, 0x7f, bytes);
		tps_matmul(job->got, job->a, job->b, job->m, job->n, job->k,
			   job->trans_a, job->trans_b);
		job->mismatches += memcmp(job->got, job->want, bytes) != 0;
	}
	return NULL;
}

START_TEST(matmul_gives_the_same_bits_from_concurrent_threads)
{
	/* Rank threads will call tps_matmul at once: it keeps no shared
	 * buffers. Two shapes on different paths (packed panels; C^T with
	 * its partial-sum buffer), each in its own thread. */
	const struct mnk shapes[2] = {{70, 130, 300}, {20, 150, 1100}};
	struct matmul_job jobs[2];
	pthread_t threads[2];
	struct tps_rng rng;
	tps_rng_seed(&rng, 3);
	for (int t = 0; t < 2; t++) {
		const int64_t m = shapes[t].m, n = shapes[t].n, k = shapes[t].k;
		float *want = malloc((size_t)(m * n) * sizeof *want);
		ck_assert_ptr_nonnull(want);
		jobs[t] = (struct matmul_job){
			.m = m,
			.n = n,
			.k = k,
			.trans_a = t == 0,
			.trans_b = t == 1,
			.a = tricky_floats(&rng, m * k),
			.b = tricky_floats(&rng, k * n),
			.want = want,
			.got = malloc((size_t)(m * n) * sizeof(float)),
		};
		ck_assert_ptr_nonnull(jobs[t].got);
		tps_matmul_naive(want, jobs[t].a, jobs[t].b, m, n, k,
				 jobs[t].trans_a, jobs[t].trans_b);
		jobs[t].rounds = 8;
	}
	for (int t = 0; t < 2; t++) {
		ck_assert_int_eq(pthread_create(&threads[t], NULL,
						matmul_job_run, &jobs[t]),
				 0);
	}
	for (int t = 0; t < 2; t++) {
		ck_assert_int_eq(pthread_join(threads[t], NULL), 0);
		ck_assert_msg(jobs[t].mismatches == 0,
			      "thread %d: %d of %d results differ from naive",
			      t, jobs[t].mismatches, jobs[t].rounds);
		free((void *)jobs[t].a);
		free((void *)jobs[t].b);
		free((void *)jobs[t].want);
		free(jobs[t].got);
	}
}
END_TEST

START_TEST(matmul_variant_that_cannot_run_is_reported)
{
	/* The list is fixed: generic runs anywhere; avx2 and avx512 need
	 * their features (and to be compiled in, on x86 only). */
	const int count = tps_matmul_variant_count();
	const unsigned all = TPS_MATMUL_CPU_AVX2 | TPS_MATMUL_CPU_AVX512F;
	const unsigned cpu = tps_matmul_cpu_features();
	ck_assert_int_eq(count, 3);
	ck_assert_str_eq(tps_matmul_variant_name(0), "generic");
	ck_assert_str_eq(tps_matmul_variant_name(1), "avx2");
	ck_assert_str_eq(tps_matmul_variant_name(2), "avx512");
	ck_assert_ptr_null(tps_matmul_variant_name(-1));
	ck_assert_ptr_null(tps_matmul_variant_name(count));
	ck_assert(!tps_matmul_variant_runs_on(-1, all));
	ck_assert(!tps_matmul_variant_runs_on(count, all));
	ck_assert(!tps_matmul_variant_supported(count));
	ck_assert(tps_matmul_variant_runs_on(0, 0));
	ck_assert(!tps_matmul_variant_runs_on(1, 0));
	ck_assert(!tps_matmul_variant_runs_on(2, TPS_MATMUL_CPU_AVX2));
	ck_assert(tps_matmul_variant_supported(0));
	for (int v = 0; v < count; v++) {
		ck_assert(tps_matmul_variant_supported(v) ==
			  tps_matmul_variant_runs_on(v, cpu));
	}
#if defined(__x86_64__) || defined(__i386__)
	ck_assert(tps_matmul_variant_runs_on(1, all));
	ck_assert(tps_matmul_variant_runs_on(2, all));
	ck_assert(tps_matmul_variant_supported(1) ==
		  (bool)__builtin_cpu_supports("avx2"));
	ck_assert(tps_matmul_variant_supported(2) ==
		  (bool)__builtin_cpu_supports("avx512f"));
#endif
	ck_assert(tps_matmul_variant_supported(tps_matmul_variant_active()));
}
END_TEST

START_TEST(matmul_env_request_picks_a_variant_that_runs)
{
	/* TPSIM_GEMM names a variant; one the CPU cannot run, an unknown
	 * name or none gives the fastest that runs. */
	const unsigned all = TPS_MATMUL_CPU_AVX2 | TPS_MATMUL_CPU_AVX512F;
	ck_assert_int_eq(tps_matmul_variant_pick("generic", all), 0);
	ck_assert_int_eq(tps_matmul_variant_pick(NULL, 0), 0);
	ck_assert_int_eq(tps_matmul_variant_pick("avx512", 0), 0);
	ck_assert_int_eq(tps_matmul_variant_pick("bogus", 0), 0);
#if defined(__x86_64__) || defined(__i386__)
	ck_assert_int_eq(tps_matmul_variant_pick("avx2", all), 1);
	ck_assert_int_eq(tps_matmul_variant_pick(NULL, all), 2);
	ck_assert_int_eq(tps_matmul_variant_pick("", all), 2);
	ck_assert_int_eq(tps_matmul_variant_pick("avx512", TPS_MATMUL_CPU_AVX2),
			 1);
	ck_assert_int_eq(tps_matmul_variant_pick("AVX2", all), 2);
#endif
}
END_TEST

START_TEST(matmul_variant_is_main_s_choice_never_the_environment_s)
{
	/* main() reads TPSIM_GEMM and hands the variant over; the library
	 * reads no environment: set before the first matmul of this
	 * process, it changes nothing. */
	const int best =
		tps_matmul_variant_pick(NULL, tps_matmul_cpu_features());
	const int64_t dims[2] = {2, 2};
	struct tps_tensor x = make(2, dims), w = make(2, dims), y = {0};
	ck_assert_int_eq(setenv("TPSIM_GEMM", "generic", 1), 0);
	ck_assert_int_eq(tps_tensor_linear(&y, &x, &w, NULL, NULL, NULL),
			 TPS_OK);
	ck_assert_str_eq(tps_matmul_variant_name(tps_matmul_variant_active()),
			 tps_matmul_variant_name(best));
	tps_matmul_variant_use(0);
	ck_assert_int_eq(tps_matmul_variant_active(), 0);
	tps_matmul_variant_use(best);
	ck_assert_int_eq(tps_matmul_variant_active(), best);
	ck_assert_int_eq(unsetenv("TPSIM_GEMM"), 0);
	tps_tensor_free(&x);
	tps_tensor_free(&w);
	tps_tensor_free(&y);
}
END_TEST

START_TEST(linear_refuses_mismatched_shapes)
{
	const int64_t xd[2] = {1, 3}, wd[2] = {2, 4};
	struct tps_tensor x = make(2, xd), w = make(2, wd), y = {0};
	struct tps_error err = {0};
	ck_assert_int_eq(tps_tensor_linear(&y, &x, &w, NULL, NULL, &err),
			 TPS_ERR_SHAPE);
	ck_assert_ptr_nonnull(strstr(err.message, "(1, 3)"));
	ck_assert_ptr_null(y.data);
	tps_tensor_free(&x);
	tps_tensor_free(&w);
}
END_TEST

START_TEST(activations_and_finiteness)
{
	const int64_t d[1] = {4};
	struct tps_tensor x = make(1, d), r, g;
	int64_t bad = -1;
	x.data[0] = -1.0f;
	x.data[1] = 0.0f;
	x.data[2] = 2.0f;
	x.data[3] = 1.0f;
	ck_assert_int_eq(tps_tensor_relu(&r, &x, NULL), TPS_OK);
	ck_assert_float_eq(r.data[0], 0.0f);
	ck_assert_float_eq(r.data[2], 2.0f);
	ck_assert_int_eq(tps_tensor_gelu(&g, &x, NULL), TPS_OK);
	/* gelu(1) = 0.5 (1 + erf(1/sqrt 2)) = 0.8413447... */
	ck_assert_float_eq_tol(g.data[3], 0.8413447f, 1e-7f);
	ck_assert_float_eq(g.data[1], 0.0f);
	ck_assert(tps_tensor_all_finite(&g, &bad));
	x.data[2] = NAN;
	ck_assert(!tps_tensor_all_finite(&x, &bad));
	ck_assert_int_eq(bad, 2);
	tps_tensor_free(&x);
	tps_tensor_free(&r);
	tps_tensor_free(&g);
}
END_TEST

START_TEST(silu_and_its_derivative)
{
	/* At +-ln 3 sigmoid is 3/4 and 1/4, so by hand:
	 *   silu(ln 3)   =  3/4 ln 3 =  0.8239592...
	 *   silu(-ln 3)  = -1/4 ln 3 = -0.2746531...
	 *   silu'(x) = s (1 + x (1 - s)): 3/4 + 3/16 ln 3 = 0.9559898...,
	 *   1/4 - 3/16 ln 3 = 0.0440102..., and 1/2 at 0.
	 * At -200 exp(200) is large but finite in double: silu is -0 or a
	 * tiny negative and its derivative 0, never NaN. */
	const int64_t d[1] = {4};
	const float ln3 = 1.0986123f;
	struct tps_tensor x = make(1, d), dy = make(1, d), y, dx;
	x.data[0] = ln3;
	x.data[1] = -ln3;
	x.data[2] = 0.0f;
	x.data[3] = -200.0f;
	for (int i = 0; i < 4; i++) {
		dy.data[i] = 2.0f;
	}
	ck_assert_int_eq(tps_tensor_silu(&y, &x, NULL), TPS_OK);
	ck_assert_float_eq_tol(y.data[0], 0.8239592f, 2e-7f);
	ck_assert_float_eq_tol(y.data[1], -0.2746531f, 2e-7f);
	ck_assert_float_eq(y.data[2], 0.0f);
	ck_assert_float_eq_tol(y.data[3], 0.0f, 1e-30f);
	ck_assert_int_eq(tps_tensor_silu_backward(&dx, &dy, &x, NULL), TPS_OK);
	ck_assert_float_eq_tol(dx.data[0], 2.0f * 0.9559898f, 4e-7f);
	ck_assert_float_eq_tol(dx.data[1], 2.0f * 0.0440102f, 4e-7f);
	ck_assert_float_eq(dx.data[2], 1.0f);
	ck_assert_float_eq_tol(dx.data[3], 0.0f, 1e-30f);
	ck_assert(tps_tensor_all_finite(&dx, NULL));
	tps_tensor_free(&x);
	tps_tensor_free(&dy);
	tps_tensor_free(&y);
	tps_tensor_free(&dx);
}
END_TEST

START_TEST(rope_turns_pairs_by_position)
{
	/* x (1, 2, 4): one head of d = 4 at positions 0 and 1, each row
	 * 1, 2, 3, 4; theta 10000 gives the pairs' frequencies 1 and
	 * 10000^(-1/2) = 0.01. Position 0 is the identity; at position 1,
	 * by hand (cos 1 = 0.5403023, sin 1 = 0.8414710, cos 0.01 =
	 * 0.9999500, sin 0.01 = 0.0099998):
	 *   rotate_half pairs (0, 2) at 1 rad and (1, 3) at 0.01 rad:
	 *     1 cos 1 - 3 sin 1 = -1.9841106, 2 cos .01 - 4 sin .01 =
	 *     1.9599007, 3 cos 1 + 1 sin 1 = 2.4623779, 4 cos .01 + 2
	 *     sin .01 = 4.0197997
	 *   interleaved pairs (0, 1) at 1 rad and (2, 3) at 0.01 rad:
	 *     1 cos 1 - 2 sin 1 = -1.1426397, 2 cos 1 + 1 sin 1 =
	 *     1.9220756, 3 cos .01 - 4 sin .01 = 2.9598507, 4 cos .01 +
	 *     3 sin .01 = 4.0297995
	 * Starting at pos0 = 1 (a shard's offset) moves row 0 to position 1.
	 * sign -1 turns back: within an ulp of x. */
	static const float want[2][4] = {
		{-1.9841106f, 1.9599007f, 2.4623779f, 4.0197997f},
		{-1.1426397f, 1.9220756f, 2.9598507f, 4.0297995f}};
	const int64_t d[3] = {1, 2, 4};
	struct tps_tensor x = make(3, d), y, back, shifted;
	double max_diff = 0.0;
	for (int i = 0; i < 8; i++) {
		x.data[i] = (float)(i % 4 + 1);
	}
	for (int style = 0; style < TPS_ROPE_STYLE_COUNT; style++) {
		ck_assert_int_eq(
			tps_tensor_rope(&y, &x, 4, 0, 10000.0, style, 1, NULL),
			TPS_OK);
		ck_assert_mem_eq(y.data, x.data, 4 * sizeof(float));
		for (int c = 0; c < 4; c++) {
			ck_assert_float_eq_tol(y.data[4 + c], want[style][c],
					       4e-7f);
		}
		ck_assert_int_eq(tps_tensor_rope(&shifted, &x, 4, 1, 10000.0,
						 style, 1, NULL),
				 TPS_OK);
		ck_assert_mem_eq(shifted.data, y.data + 4, 4 * sizeof(float));
		ck_assert_int_eq(tps_tensor_rope(&back, &y, 4, 0, 10000.0,
						 style, -1, NULL),
				 TPS_OK);
		for (int i = 0; i < 8; i++) {
			double diff = fabs((double)back.data[i] - x.data[i]);
			max_diff = diff > max_diff ? diff : max_diff;
		}
		tps_tensor_free(&y);
		tps_tensor_free(&back);
		tps_tensor_free(&shifted);
	}
	printf("rope there and back: max diff %g\n", max_diff);
	ck_assert(max_diff <= 4.8e-7);
	tps_tensor_free(&x);
}
END_TEST

START_TEST(rng_is_seeded_and_named)
{
	struct tps_rng a, b, c;
	float va, vb;
	tps_rng_seed_named(&a, 7, "fc1.weight");
	tps_rng_seed_named(&b, 7, "fc1.weight");
	tps_rng_seed_named(&c, 7, "fc2.weight");
	for (int i = 0; i < 100; i++) {
		va = tps_rng_uniform(&a, 0.5f);
		vb = tps_rng_uniform(&b, 0.5f);
		ck_assert_float_eq(va, vb);
		ck_assert(va >= -0.5f && va < 0.5f);
	}
	ck_assert(tps_rng_next(&a) != tps_rng_next(&c));
	/* Known first output of xoshiro256** seeded by splitmix64(0): a
	 * change here changes every trace, so it must be deliberate. */
	tps_rng_seed(&a, 0);
	ck_assert_uint_eq(tps_rng_next(&a), 0x99ec5f36cb75f2b4ULL);
	for (int i = 0; i < 1000; i++) {
		ck_assert(isfinite(tps_rng_normal(&b, 1.0f)));
	}
}
END_TEST

static Suite *tensor_suite(void)
{
	Suite *s = suite_create("tensor");
	TCase *chunk = tcase_create("chunk");
	TCase *shape = tcase_create("shape");
	TCase *copy = tcase_create("narrow_concat");
	TCase *gemm = tcase_create("linear");
	TCase *variants = tcase_create("gemm_variants");
	TCase *misc = tcase_create("elementwise_rng");
	tcase_add_test(chunk, chunk_rule_matches_torch_chunk);
	tcase_add_test(chunk, chunk_rule_covers_every_element_once);
	tcase_add_test(chunk, chunk_rule_in_blocks_keeps_blocks_whole);
	tcase_add_test(shape, numel_overflow_is_refused);
	tcase_add_test(shape, empty_tensor_keeps_its_shape);
	tcase_add_test(copy, narrow_then_concat_gives_back_the_tensor);
	tcase_add_test(copy, narrow_picks_the_right_columns);
	tcase_add_test(copy, region_equals_narrowing_each_dim_in_turn);
	tcase_add_test(shape, memory_counts_live_and_peak_tensor_bytes);
	tcase_add_test(shape, memory_accounts_of_two_threads_are_their_own);
	tcase_add_test(copy, concat_refuses_mismatched_shapes);
	tcase_add_test(gemm, linear_matches_the_seed_hand_check);
	tcase_add_test(gemm, linear_kernel_is_bit_identical_to_naive);
	tcase_add_test(gemm,
		       matmul_is_bit_identical_to_naive_for_every_transpose);
	tcase_add_test(
		gemm, matmul_on_a_pool_is_bit_identical_for_every_thread_count);
	tcase_add_test(gemm, matmul_naive_computes_each_transpose);
	tcase_add_test(gemm, linear_refuses_mismatched_shapes);
	tcase_add_test(gemm,
		       linear_abs_is_bit_identical_to_linear_on_magnitudes);
	tcase_add_test(
		gemm,
		view_region_shares_a_contiguous_block_and_copies_the_rest);
	tcase_add_test(gemm, strided_view_reads_as_its_copy);
	tcase_add_test(gemm, zero_view_reads_zeros_and_holds_no_account);
	tcase_add_test(variants,
		       matmul_every_variant_is_bit_identical_to_naive);
	tcase_add_test(
		variants,
		matmul_every_variant_is_bit_identical_across_block_edges);
	tcase_add_test(variants,
		       matmul_with_leading_dims_is_bit_identical_to_naive);
	tcase_add_test(variants,
		       matmul_every_variant_matches_naive_on_infinities);
	tcase_add_test(variants, matmul_test_data_tells_summation_orders_apart);
	tcase_add_test(variants, matmul_k_zero_gives_positive_zeros);
	tcase_add_test(variants,
		       matmul_gives_the_same_bits_from_concurrent_threads);
	tcase_add_test(variants, matmul_variant_that_cannot_run_is_reported);
	tcase_add_test(variants, matmul_env_request_picks_a_variant_that_runs);
	tcase_add_test(variants,
		       matmul_variant_is_main_s_choice_never_the_environment_s);
	tcase_add_test(misc, activations_and_finiteness);
	tcase_add_test(misc, silu_and_its_derivative);
	tcase_add_test(misc, rope_turns_pairs_by_position);
	tcase_add_test(misc, rng_is_seeded_and_named);
	suite_add_tcase(s, chunk);
	suite_add_tcase(s, shape);
	suite_add_tcase(s, copy);
	suite_add_tcase(s, gemm);
	suite_add_tcase(s, variants);
	suite_add_tcase(s, misc);
	return s;
}

int main(void)
{
	return tu_run_suite(tensor_suite());
}
