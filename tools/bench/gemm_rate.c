/*
 * The GEMM's own rate on this machine, measured, not asserted: the yard-
 * stick of tools/bench/bench.sh's training-step ratio (issue 22), with no
 * other library (gemm_bench.c compares with OpenBLAS when it is there).
 *
 *   gemm_rate [THREADS]   (default: the machine's cores)
 *
 * For the products of a GPT-2-small block on 4 ranks (512 rows of 768
 * features; the MLP's 3072; a rank's 192 and 768 columns) in each use
 * (nt: y = x W^T, nn: dx = dy W, tn: dW = dy^T x), it times tps_matmul_on
 * over a pool of THREADS, repeating each product until it lasts 0.2 s
 * of wall clock, and prints one line: the total flops over the total
 * seconds, in GFLOP/s, and the threads.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pool.h"
#include "rng.h"
#include "tensor.h"

struct product {
	int64_t m, n, k;
	bool trans_a, trans_b;
};

static const struct product products[] = {
	{512, 192, 768, false, true},	{512, 768, 192, false, false},
	{192, 768, 512, true, false},	{512, 768, 768, false, true},
	{512, 768, 3072, false, false}, {3072, 768, 512, true, false},
	{512, 3072, 768, false, true},
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static float *random_floats(struct tps_rng *rng, int64_t n)
{
	float *x = malloc((size_t)n * sizeof *x + 1);
	for (int64_t i = 0; x && i < n; i++) {
		x[i] = tps_rng_uniform(rng, 1);
	}
	return x;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? (int)strtol(argv[1], NULL, 10)
			       : tps_pool_default_threads();
	struct tps_pool *pool = NULL;
	struct tps_rng rng;
	double flops = 0.0, seconds = 0.0;

	if (threads < 1 || threads > TPS_POOL_MAX_THREADS ||
	    tps_pool_new(&pool, threads, NULL) != TPS_OK) {
		fprintf(stderr, "gemm_rate: bad thread count\n");
		return 2;
	}
	tps_rng_seed(&rng, 1);
	for (size_t i = 0; i < sizeof products / sizeof products[0]; i++) {
		const struct product *p = &products[i];
		float *a = random_floats(&rng, p->m * p->k);
		float *b = random_floats(&rng, p->k * p->n);
		float *c = malloc((size_t)(p->m * p->n) * sizeof *c);
		double start, took;
		int64_t reps = 0;
		if (!a || !b || !c) {
			fprintf(stderr, "gemm_rate: out of memory\n");
			return 2;
		}
		/* One untimed call: page faults and caches. */
		tps_matmul_on(pool, c, a, b, p->m, p->n, p->k, p->trans_a,
			      p->trans_b);
		start = now_s();
		do {
			tps_matmul_on(pool, c, a, b, p->m, p->n, p->k,
				      p->trans_a, p->trans_b);
			reps++;
			took = now_s() - start;
		} while (took < 0.2);
		flops += 2.0 * (double)(p->m * p->n * p->k) * (double)reps;
		seconds += took;
		free(a);
		free(b);
		free(c);
	}
	printf("%.1f GFLOP/s on %d threads\n", flops / seconds / 1e9, threads);
	tps_pool_free(pool);
	return 0;
}
