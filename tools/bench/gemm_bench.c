/*
 * tps_matmul against single-thread OpenBLAS sgemm, measured, not asserted.
 * Run it through tools/bench/gemm.sh, which pins OpenBLAS (one thread, the
 * core type of this CPU) before the library loads.
 *
 *   gemm_bench [--variant NAME] [--runs N] [--min-ms MS] [--clock cpu|wall]
 *              [--shape M,N,K]...
 *
 * For each shape (the default list, or those given) and each use (nt: y =
 * x W^T, nn: dx = dy W, tn: dW = dy^T x, with the (m, n, k) of tensor.h)
 * it times tpsim and OpenBLAS alternately, N runs each (5), each run
 * repeating the call until it lasts MS milliseconds (50); it prints the
 * median time per call, GFLOP/s (2 m n k / time) and tpsim / OpenBLAS,
 * one tab-separated row per case. The clock is the process's CPU time by
 * default, which a busy machine disturbs less than the wall clock.
 * max_rel_diff is max |tpsim - OpenBLAS| / max |OpenBLAS| over C: they round
 * differently (OpenBLAS fuses and reorders; tpsim keeps the naive order).
 */
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rng.h"
#include "tensor.h"

struct shape {
	int64_t m, n, k;
};

struct use {
	const char *name;
	bool trans_a, trans_b;
};

/* Square, the MLP benchmark's batch of 32 rows (tools/bench/bench.sh), and
 * thinner batches. */
static const struct shape default_shapes[] = {
	{512, 512, 512},  {1024, 1024, 1024}, {32, 512, 4096}, {32, 4096, 512},
	{64, 4096, 1024}, {8, 4096, 1024},    {1, 4096, 1024},
};

#define MAX_SHAPES 32

static clockid_t bench_clock = CLOCK_PROCESS_CPUTIME_ID;

static const struct use uses[] = {
	{"nt", false, true},
	{"nn", false, false},
	{"tn", true, false},
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(bench_clock, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct problem {
	struct shape s;
	struct use u;
	const float *a, *b;
	float *c;
	int variant; /* -1: tps_matmul */
};

static void call_tpsim(const struct problem *pr)
{
	if (pr->variant < 0) {
		tps_matmul(pr->c, pr->a, pr->b, pr->s.m, pr->s.n, pr->s.k,
			   pr->u.trans_a, pr->u.trans_b);
	} else {
		tps_matmul_variant(pr->variant, pr->c, pr->a, pr->b, pr->s.m,
				   pr->s.n, pr->s.k, pr->u.trans_a,
				   pr->u.trans_b);
	}
}

static void call_openblas(const struct problem *pr)
{
	/* Row-major: lda is the row length of A as stored. */
	const int m = (int)pr->s.m, n = (int)pr->s.n, k = (int)pr->s.k;
	cblas_sgemm(CblasRowMajor, pr->u.trans_a ? CblasTrans : CblasNoTrans,
		    pr->u.trans_b ? CblasTrans : CblasNoTrans, m, n, k, 1.0f,
		    pr->a, pr->u.trans_a ? m : k, pr->b, pr->u.trans_b ? k : n,
		    0.0f, pr->c, n);
}

/* Calls per run so that a run lasts about min_s. */
static long calibrate(void (*fn)(const struct problem *),
		      const struct problem *pr, double min_s)
{
	double t0 = now_s(), dt;
	fn(pr);
	dt = now_s() - t0;
	if (dt <= 0) {
		return 1000;
	}
	return dt >= min_s ? 1 : (long)ceil(min_s / dt);
}

static double run_once(void (*fn)(const struct problem *),
		       const struct problem *pr, long reps)
{
	double t0 = now_s();
	for (long r = 0; r < reps; r++) {
		fn(pr);
	}
	return (now_s() - t0) / (double)reps;
}

static float *random_floats(int64_t count, uint64_t seed)
{
	struct tps_rng rng;
	float *v = malloc((size_t)count * sizeof *v);
	if (!v) {
		return NULL;
	}
	tps_rng_seed(&rng, seed);
	for (int64_t i = 0; i < count; i++) {
		v[i] = tps_rng_uniform(&rng, 1.0f);
	}
	return v;
}

static int usage(void)
{
	fprintf(stderr, "usage: gemm_bench [--variant NAME] [--runs N] "
			"[--min-ms MS] [--clock cpu|wall] [--shape M,N,K]...\n"
			"run it through tools/bench/gemm.sh\n");
	return 2;
}

static bool parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		return false;
	}
	*out = v;
	return true;
}

/* "M,N,K", each 1..65536. */
static bool parse_shape(const char *s, struct shape *out)
{
	long v[3];
	for (int i = 0; i < 3; i++) {
		char *end;
		errno = 0;
		v[i] = strtol(s, &end, 10);
		if (errno || end == s || v[i] < 1 || v[i] > 65536 ||
		    *end != (i < 2 ? ',' : '\0')) {
			return false;
		}
		s = end + 1;
	}
	*out = (struct shape){v[0], v[1], v[2]};
	return true;
}

int main(int argc, char **argv)
{
	const char *threads = getenv("OPENBLAS_NUM_THREADS");
	const char *coretype = getenv("OPENBLAS_CORETYPE");
	int variant = -1;
	long runs = 5, min_ms = 50;
	struct shape shapes[MAX_SHAPES];
	size_t n_shapes = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--variant") == 0 && i + 1 < argc) {
			const char *name = argv[++i];
			variant = -2;
			for (int v = 0; v < tps_matmul_variant_count(); v++) {
				if (strcmp(name, tps_matmul_variant_name(v)) ==
				    0) {
					variant = v;
				}
			}
			if (variant < 0 ||
			    !tps_matmul_variant_supported(variant)) {
				fprintf(stderr,
					"gemm_bench: variant %s does not run "
					"here\n",
					name);
				return 2;
			}
		} else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
			if (!parse_long(argv[++i], 1, 1000, &runs)) {
				return usage();
			}
		} else if (strcmp(argv[i], "--min-ms") == 0 && i + 1 < argc) {
			if (!parse_long(argv[++i], 0, 100000, &min_ms)) {
				return usage();
			}
		} else if (strcmp(argv[i], "--clock") == 0 && i + 1 < argc) {
			const char *c = argv[++i];
			if (strcmp(c, "cpu") == 0) {
				bench_clock = CLOCK_PROCESS_CPUTIME_ID;
			} else if (strcmp(c, "wall") == 0) {
				bench_clock = CLOCK_MONOTONIC;
			} else {
				return usage();
			}
		} else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc) {
			if (n_shapes == MAX_SHAPES ||
			    !parse_shape(argv[++i], &shapes[n_shapes++])) {
				return usage();
			}
		} else {
			return usage();
		}
	}
	if (n_shapes == 0) {
		n_shapes = sizeof default_shapes / sizeof default_shapes[0];
		memcpy(shapes, default_shapes, sizeof default_shapes);
	}
	/* OpenBLAS reads these when it loads, before main: they must come
	 * from the environment the process started with. */
	if (!threads || strcmp(threads, "1") != 0 || !coretype) {
		fprintf(stderr, "gemm_bench: OpenBLAS is not pinned "
				"(OPENBLAS_NUM_THREADS=1, OPENBLAS_CORETYPE); "
				"run tools/bench/gemm.sh\n");
		return 2;
	}

	printf("# tpsim variant %s; OpenBLAS %s, core %s, 1 thread; median "
	       "of %ld runs\n",
	       tps_matmul_variant_name(variant < 0 ? tps_matmul_variant_active()
						   : variant),
	       openblas_get_config(), openblas_get_corename(), runs);
	printf("op\tm\tn\tk\ttpsim_ms\ttpsim_gflops\topenblas_ms\t"
	       "openblas_gflops\tratio\tmax_rel_diff\n");
	fflush(stdout);

	for (size_t si = 0; si < n_shapes; si++) {
		for (size_t ui = 0; ui < sizeof uses / sizeof uses[0]; ui++) {
			struct problem pr = {shapes[si], uses[ui], NULL,
					     NULL,	 NULL,	   variant};
			const int64_t m = pr.s.m, n = pr.s.n, k = pr.s.k;
			float *a = random_floats(m * k, 1);
			float *b = random_floats(k * n, 2);
			float *c = malloc((size_t)(m * n) * sizeof *c);
			float *ref = malloc((size_t)(m * n) * sizeof *ref);
			double *tt = malloc((size_t)runs * sizeof *tt);
			double *to = malloc((size_t)runs * sizeof *to);
			double flops = 2.0 * (double)m * (double)n * (double)k;
			double diff = 0, scale = 0;
			long reps_t, reps_o;

			if (!a || !b || !c || !ref || !tt || !to) {
				fprintf(stderr, "gemm_bench: out of memory\n");
				return 2;
			}
			pr.a = a;
			pr.b = b;
			pr.c = ref;
			call_openblas(&pr);
			pr.c = c;
			call_tpsim(&pr);
			for (int64_t e = 0; e < m * n; e++) {
				double d = fabs((double)c[e] - ref[e]);
				diff = d > diff ? d : diff;
				scale = fabs(ref[e]) > scale ? fabs(ref[e])
							     : scale;
			}
			diff = scale > 0 ? diff / scale : diff;
			reps_t = calibrate(call_tpsim, &pr, min_ms * 1e-3);
			reps_o = calibrate(call_openblas, &pr, min_ms * 1e-3);
			for (long r = 0; r < runs; r++) {
				tt[r] = run_once(call_tpsim, &pr, reps_t);
				to[r] = run_once(call_openblas, &pr, reps_o);
			}
			qsort(tt, (size_t)runs, sizeof *tt, cmp_double);
			qsort(to, (size_t)runs, sizeof *to, cmp_double);
			printf("%s\t%lld\t%lld\t%lld\t%.4g\t%.1f\t%.4g\t%.1f\t"
			       "%.2f\t%.1e\n",
			       pr.u.name, (long long)m, (long long)n,
			       (long long)k, tt[runs / 2] * 1e3,
			       flops / tt[runs / 2] * 1e-9, to[runs / 2] * 1e3,
			       flops / to[runs / 2] * 1e-9,
			       to[runs / 2] / tt[runs / 2], diff);
			fflush(stdout);
			free(a);
			free(b);
			free(c);
			free(ref);
			free(tt);
			free(to);
		}
	}
	return 0;
}
