/*
 * tps_matmul_on: one matmul cut into blocks of C that the pool's threads
 * compute at once. Each block is an ordinary tps_matmul_ld on sub-blocks
 * of the operands, in place (leading dimensions), so every C[i][j] is
 * still summed over k in ascending order by one thread: the bytes do not
 * depend on the cut or the thread count.
 *
 *   rows of C    rows i0..i1 of C from rows i0..i1 of op(A): A's rows
 *                (trans_a false) or its columns (trans_a: dW = dy^T x);
 *                every block reads all of B.
 *   columns of C when A has few rows (a batch: the simulator's usual
 *                case, 32 rows by a 4096-wide W), so that each block
 *                reads only its part of the weight B: its rows j0..j1
 *                for y = x W^T (trans_b), its columns for dx = dy W.
 */
#include "tensor.h"

/* Below this many multiply-adds a matmul is not worth waking threads. */
#define MIN_PARALLEL_WORK ((int64_t)1 << 18)

struct matmul_job {
	float *c;
	const float *a, *b;
	int64_t ldc, lda, ldb;
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

static void rows_block(const struct matmul_job *job, int64_t i0, int64_t mi)
{
	const float *a = job->a + (job->trans_a ? i0 : i0 * job->lda);
	tps_matmul_ld(job->c + i0 * job->ldc, job->ldc, a, job->lda, job->b,
		      job->ldb, mi, job->n, job->k, job->trans_a, job->trans_b);
}

static void columns_block(const struct matmul_job *job, int64_t j0, int64_t nj)
{
	const float *b = job->b + (job->trans_b ? j0 * job->ldb : j0);
	tps_matmul_ld(job->c + j0, job->ldc, job->a, job->lda, b, job->ldb,
		      job->m, nj, job->k, job->trans_a, job->trans_b);
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
	tps_matmul_on_ld(pool, c, n, a, trans_a ? m : k, b, trans_b ? k : n, m,
			 n, k, trans_a, trans_b);
}

void tps_matmul_on_ld(struct tps_pool *pool, float *c, int64_t ldc,
		      const float *a, int64_t lda, const float *b, int64_t ldb,
		      int64_t m, int64_t n, int64_t k, bool trans_a,
		      bool trans_b)
{
	struct matmul_job job = {c, a, b,	ldc,	 lda,	ldb, m,
				 n, k, trans_a, trans_b, false, 0};
	/* Inside a pool item (a rank's matmul while the ranks share the
	 * pool) the blocks would run one after another: no cut at all. */
	int threads = tps_pool_threads_here(pool);

	if (threads == 1 || m * n * k < MIN_PARALLEL_WORK ||
	    (trans_a && trans_b)) {
		tps_matmul_ld(c, ldc, a, lda, b, ldb, m, n, k, trans_a,
			      trans_b);
		return;
	}
	/* Columns when the rows are few (a batch): cut by rows, every
	 * thread would read all of B, the weight. */
	job.by_columns = !trans_a && m < 256;
	/* Four blocks a thread, so a slow thread does not hold the rest. */
	job.blocks = 4 * (int64_t)threads;
	tps_pool_for(pool, job.blocks, run_block, &job);
}
