/*
 * The GEMM: the reference loop, and the choice of a blocked variant
 * (tensor_gemm_kernel.c compiled per instruction set) at run time.
 */
#include "tensor_gemm_internal.h"

#include <assert.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

struct gemm_variant {
	const char *name;
	unsigned needs; /* TPS_MATMUL_CPU_* */
	tps_gemm_run_fn *run;
	void (*blocking)(struct tps_matmul_blocking *blocking);
};

/* The order is fixed on every build; a variant not compiled has no run. */
static const struct gemm_variant variants[] = {
	{"generic", 0, tps_gemm_run_generic, tps_gemm_blocking_generic},
#ifdef TPS_GEMM_HAVE_AVX2
	{"avx2", TPS_MATMUL_CPU_AVX2, tps_gemm_run_avx2,
	 tps_gemm_blocking_avx2},
#else
	{"avx2", TPS_MATMUL_CPU_AVX2, NULL, NULL},
#endif
#ifdef TPS_GEMM_HAVE_AVX512
	{"avx512", TPS_MATMUL_CPU_AVX512F, tps_gemm_run_avx512,
	 tps_gemm_blocking_avx512},
#else
	{"avx512", TPS_MATMUL_CPU_AVX512F, NULL, NULL},
#endif
};

#define N_VARIANTS ((int)(sizeof variants / sizeof variants[0]))

int tps_matmul_variant_count(void)
{
	return N_VARIANTS;
}

const char *tps_matmul_variant_name(int i)
{
	return i >= 0 && i < N_VARIANTS ? variants[i].name : NULL;
}

unsigned tps_matmul_cpu_features(void)
{
	unsigned features = 0;
#if defined(__x86_64__) || defined(__i386__)
	/* libgcc's checks include the OS's support (XCR0) for the wide
	 * registers. */
	if (__builtin_cpu_supports("avx2")) {
		features |= TPS_MATMUL_CPU_AVX2;
	}
	if (__builtin_cpu_supports("avx512f")) {
		features |= TPS_MATMUL_CPU_AVX512F;
	}
#endif
	return features;
}

bool tps_matmul_variant_runs_on(int i, unsigned features)
{
	return i >= 0 && i < N_VARIANTS && variants[i].run &&
	       (variants[i].needs & ~features) == 0;
}

bool tps_matmul_variant_supported(int i)
{
	return tps_matmul_variant_runs_on(i, tps_matmul_cpu_features());
}

int tps_matmul_variant_pick(const char *request, unsigned features)
{
	int best = 0; /* generic runs everywhere */
	for (int i = 0; i < N_VARIANTS; i++) {
		if (!tps_matmul_variant_runs_on(i, features)) {
			continue;
		}
		if (request && strcmp(request, variants[i].name) == 0) {
			return i;
		}
		best = i;
	}
	return best;
}

/* The variant tps_matmul runs: -1 until chosen, by tps_matmul_variant_use
 * (main(), from TPSIM_GEMM) or by the first matmul (the fastest the CPU
 * runs; racing first calls store the same value). A process-wide choice,
 * the one the library keeps: every variant computes the same bits, so
 * which one runs is the process's tuning, like malloc's, never a run's
 * result (tensor.h). */
static atomic_int active = -1;

int tps_matmul_variant_active(void)
{
	int i = atomic_load_explicit(&active, memory_order_relaxed);
	if (i < 0) {
		i = tps_matmul_variant_pick(NULL, tps_matmul_cpu_features());
		atomic_store_explicit(&active, i, memory_order_relaxed);
	}
	return i;
}

void tps_matmul_variant_use(int i)
{
	assert(tps_matmul_variant_supported(i));
	atomic_store_explicit(&active, i, memory_order_relaxed);
}

void tps_matmul_variant(int i, float *c, const float *a, const float *b,
			int64_t m, int64_t n, int64_t k, bool trans_a,
			bool trans_b)
{
	tps_matmul_variant_ld(i, c, n, a, trans_a ? m : k, b, trans_b ? k : n,
			      m, n, k, trans_a, trans_b);
}

void tps_matmul_variant_ld(int i, float *c, int64_t ldc, const float *a,
			   int64_t lda, const float *b, int64_t ldb, int64_t m,
			   int64_t n, int64_t k, bool trans_a, bool trans_b)
{
	assert(tps_matmul_variant_supported(i));
	variants[i].run(c, ldc, a, lda, b, ldb, m, n, k, trans_a, trans_b);
}

void tps_matmul_variant_blocking(int i, struct tps_matmul_blocking *blocking)
{
	assert(i >= 0 && i < N_VARIANTS && variants[i].blocking);
	variants[i].blocking(blocking);
}

void tps_matmul(float *c, const float *a, const float *b, int64_t m, int64_t n,
		int64_t k, bool trans_a, bool trans_b)
{
	tps_matmul_ld(c, n, a, trans_a ? m : k, b, trans_b ? k : n, m, n, k,
		      trans_a, trans_b);
}

void tps_matmul_ld(float *c, int64_t ldc, const float *a, int64_t lda,
		   const float *b, int64_t ldb, int64_t m, int64_t n, int64_t k,
		   bool trans_a, bool trans_b)
{
	variants[tps_matmul_variant_active()].run(c, ldc, a, lda, b, ldb, m, n,
						  k, trans_a, trans_b);
}

void tps_matmul_naive(float *c, const float *a, const float *b, int64_t m,
		      int64_t n, int64_t k, bool trans_a, bool trans_b)
{
	tps_matmul_naive_ld(c, n, a, trans_a ? m : k, b, trans_b ? k : n, m, n,
			    k, trans_a, trans_b);
}

void tps_matmul_naive_ld(float *c, int64_t ldc, const float *a, int64_t lda,
			 const float *b, int64_t ldb, int64_t m, int64_t n,
			 int64_t k, bool trans_a, bool trans_b)
{
	for (int64_t i = 0; i < m; i++) {
		for (int64_t j = 0; j < n; j++) {
			float s = 0.0f;
			for (int64_t p = 0; p < k; p++) {
				float x = trans_a ? a[p * lda + i]
						  : a[i * lda + p];
				float y = trans_b ? b[j * ldb + p]
						  : b[p * ldb + j];
				s += x * y;
			}
			c[i * ldc + j] = s;
		}
	}
}
