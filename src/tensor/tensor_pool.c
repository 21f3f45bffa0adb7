/*
 * tps_matmul_on: one matmul cut into blocks of C that the pool's threads
 * compute at once. Each block is an ordinary tps_matmul on contiguous
 * operands, so every C[i][j] is still summed over k in ascending order by
 * one thread: the bytes do not depend on the cut or the thread count.
 *
 * The cut follows the operand that can be sliced without a copy:
 *   rows of C    when A's rows are contiguous (trans_a false): A[i0:i1]
 *                and C[i0:i1] are plain sub-arrays; every block reads B.
 *   columns of C when A has few rows (a batch: the simulator's usual
 *                case, 32 rows by a 4096-wide W), so that each block
 *                reads only its part of the weight B: for y = x W^T
 *                (trans_b) the rows W[j0:j1] in place, for dx = dy W
 *                the columns W[:, j0:j1] copied out; the block of C is
 *                copied into place.
 *   rows of C    for dW = dy^T x (trans_a): rows i0..i1 of C need columns
 *                i0..i1 of dy, copied out first (dy is small: rows x out).
 */
#include "tensor.h"

#include <stdlib.h>
#include <string.h>

/* Below this many multiply-adds a matmul is not worth waking threads. */
#define MIN_PARALLEL_WORK ((int64_t)1 << 18)

struct matmul_job {
	float *c;
	const float *a, *b;
	int64_t m, n, k;
	bool trans_a, trans_b;
	bool by_columns;
	int64_t blocks;
};

/* [start, start + len) of the block'th of `blocks` near-equal pieces of n,
 * cut at multiples of `align` so kernels see whole register blocks. */
static void piece(int64_t n, int64_t blocks, int64_t block, int64_t align,
		  int64_t *start, int64_t *len)
{
	int64_t units = (n + align - 1) / align;
	int64_t lo = units * block / blocks, hi = units * (block + 1) / blocks;
	*start = lo * align < n ? lo * align : n;
	*len = (hi * align < n ? hi * align : n) - *start;
}

/* C[i0:i0+mi, j0:j0+nj] by the naive loop, in place, when a block's
 * copy cannot be allocated: slower, not wrong (same sums, same order). */
static void naive_block(const struct matmul_job *job, int64_t i0, int64_t mi,
			int64_t j0, int64_t nj)
{
	for (int64_t i = i0; i < i0 + mi; i++) {
		for (int64_t j = j0; j < j0 + nj; j++) {
			float sum = 0.0f;
			for (int64_t p = 0; p < job->k; p++) {
				float x = job->trans_a ? job->a[p * job->m + i]
						       : job->a[i * job->k + p];
				float y = job->trans_b ? job->b[j * job->k + p]
						       : job->b[p * job->n + j];
				sum += x * y;
			}
			job->c[i * job->n + j] = sum;
		}
	}
}

static void rows_block(const struct matmul_job *job, int64_t i0, int64_t mi)
{
	if (!job->trans_a) {
		tps_matmul(job->c + i0 * job->n, job->a + i0 * job->k, job->b,
			   mi, job->n, job->k, false, job->trans_b);
		return;
	}
	/* A is (k, m): its columns i0..i0+mi, as a (k, mi) copy. */
	float *a = malloc((size_t)(job->k * mi) * sizeof *a + 1);
	if (!a) {
		naive_block(job, i0, mi, 0, job->n);
		return;
	}
	for (int64_t p = 0; p < job->k; p++) {
		memcpy(a + p * mi, job->a + p * job->m + i0,
		       (size_t)mi * sizeof *a);
	}
	tps_matmul(job->c + i0 * job->n, a, job->b, mi, job->n, job->k, true,
		   job->trans_b);
	free(a);
}

static void columns_block(const struct matmul_job *job, int64_t j0, int64_t nj)
{
	/* C[:, j0:j0+nj] = A op(B)[:, j0:j0+nj], computed into a (m, nj)
	 * block. With trans_b, op(B)'s columns are B's rows j0.., in place;
	 * otherwise B's columns j0.. are copied out as a (k, nj) block. */
	float *c = malloc((size_t)(job->m * nj) * sizeof *c + 1);
	float *b = job->trans_b ? NULL
				: malloc((size_t)(job->k * nj) * sizeof *b + 1);
	if (!c || (!job->trans_b && !b)) {
		free(c);
		free(b);
		naive_block(job, 0, job->m, j0, nj);
		return;
	}
	if (job->trans_b) {
		tps_matmul(c, job->a, job->b + j0 * job->k, job->m, nj, job->k,
			   false, true);
	} else {
		for (int64_t p = 0; p < job->k; p++) {
			memcpy(b + p * nj, job->b + p * job->n + j0,
			       (size_t)nj * sizeof *b);
		}
		tps_matmul(c, job->a, b, job->m, nj, job->k, false, false);
		free(b);
	}
	for (int64_t i = 0; i < job->m; i++) {
		memcpy(job->c + i * job->n + j0, c + i * nj,
		       (size_t)nj * sizeof *c);
	}
	free(c);
}

static void run_block(void *opaque, int64_t block)
{
	const struct matmul_job *job = opaque;
	int64_t start, len;
	if (job->by_columns) {
		piece(job->n, job->blocks, block, 64, &start, &len);
		if (len > 0) {
			columns_block(job, start, len);
		}
	} else {
		piece(job->m, job->blocks, block, 8, &start, &len);
		if (len > 0) {
			rows_block(job, start, len);
		}
	}
}

void tps_matmul_on(struct tps_pool *pool, float *c, const float *a,
		   const float *b, int64_t m, int64_t n, int64_t k,
		   bool trans_a, bool trans_b)
{
	struct matmul_job job = {c, a, b, m, n, k, trans_a, trans_b, false, 0};
	/* Inside a pool item (a rank's matmul while the ranks share the
	 * pool) the blocks would run one after another: no cut at all. */
	int threads = tps_pool_threads_here(pool);

	if (threads == 1 || m * n * k < MIN_PARALLEL_WORK ||
	    (trans_a && trans_b)) {
		tps_matmul(c, a, b, m, n, k, trans_a, trans_b);
		return;
	}
	/* Columns when the rows are few (a batch): cut by rows, every
	 * thread would read all of B, the weight. */
	job.by_columns = !trans_a && m < 256;
	/* Four blocks a thread, so a slow thread does not hold the rest. */
	job.blocks = 4 * (int64_t)threads;
	tps_pool_for(pool, job.blocks, run_block, &job);
}
