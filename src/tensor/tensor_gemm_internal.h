/* What tensor_gemm.c shares with tensor_gemm_kernel.c, which meson compiles
 * once per instruction set (generic, avx2, avx512). Not installed. */
#ifndef TPSIM_TENSOR_GEMM_INTERNAL_H
#define TPSIM_TENSOR_GEMM_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "tensor.h"

/* One variant's tps_matmul: the same contract and arguments. Only the
 * variants meson built (TPS_GEMM_HAVE_<ISA>) are defined. */
typedef void tps_gemm_run_fn(float *c, int64_t ldc, const float *a, int64_t lda,
			     const float *b, int64_t ldb, int64_t m, int64_t n,
			     int64_t k, bool trans_a, bool trans_b);

tps_gemm_run_fn tps_gemm_run_generic;
void tps_gemm_blocking_generic(struct tps_matmul_blocking *blocking);
tps_gemm_run_fn tps_gemm_run_avx2;
void tps_gemm_blocking_avx2(struct tps_matmul_blocking *blocking);
tps_gemm_run_fn tps_gemm_run_avx512;
void tps_gemm_blocking_avx512(struct tps_matmul_blocking *blocking);

#endif
