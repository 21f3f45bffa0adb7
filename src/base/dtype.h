/*
 * The storage dtypes of a run: float32 (the default), bfloat16 and float16.
 *
 * Every tensor lives in float32 memory. A bf16 or fp16 tensor holds only
 * values of its dtype: each store rounds to the nearest value of the
 * dtype, ties to even, as a GPU's conversion instructions do (overflow
 * goes to infinity, NaN stays NaN, subnormals are kept). Arithmetic on
 * them stays float32 (a matmul accumulates in float32, as tensor cores
 * do) until the result is stored and rounded again.
 *
 *   dtype      significand bits   unit roundoff u   largest finite
 *   float32    24                 2^-24             3.4028235e38
 *   bfloat16    8                 2^-8              3.3895314e38
 *   float16    11                 2^-11             65504
 *
 * u is the bound on one rounding's relative error, |fl(x) - x| <= u |x|
 * for x in the normal range (Higham, ch. 2).
 */
#ifndef TPSIM_DTYPE_H
#define TPSIM_DTYPE_H

#include <stdint.h>

enum tps_dtype {
	TPS_DTYPE_F32,
	TPS_DTYPE_BF16,
	TPS_DTYPE_F16,
};
#define TPS_DTYPE_COUNT 3
/* "float32", "bfloat16", "float16"; NULL-terminated. */
extern const char *const tps_dtype_names[];

/* Bytes an element of d takes in memory on a real system: 4 for
 * float32, 2 for bfloat16 and float16 (tpsim itself keeps every value in
 * a float; the memory figures count what a GPU would hold). */
int tps_dtype_size(enum tps_dtype d);

/* The dtype's unit roundoff u (the table above). */
double tps_dtype_unit_roundoff(enum tps_dtype d);

/* x rounded to the nearest value of d, ties to even, as a float (exact:
 * every value of d is a float). F32 returns x. */
float tps_dtype_round(float x, enum tps_dtype d);
/* The same from a double: how a decimal read from a trace becomes a value
 * of d (one rounding, not double -> float -> d). */
float tps_dtype_round_double(double x, enum tps_dtype d);
/* Rounds n values in place. */
void tps_dtype_round_array(float *x, int64_t n, enum tps_dtype d);

/* The IEEE bit patterns: bfloat16 is a float32's top 16 bits once
 * rounded; float16 is binary16. Quiet NaNs keep their sign. */
uint16_t tps_bf16_bits(float x);
float tps_bf16_value(uint16_t bits);
uint16_t tps_f16_bits(float x);
float tps_f16_value(uint16_t bits);

#endif
