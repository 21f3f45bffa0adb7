/*
 * Saturating int64 arithmetic, for estimates that must not wrap (memory,
 * trace size, flops): a result past INT64_MAX is INT64_MAX, which every
 * budget refuses. Sizes that must be exact use __builtin_mul_overflow and
 * fail instead (docs/design.md section 8).
 */
#ifndef TPSIM_ARITH_H
#define TPSIM_ARITH_H

#include <stdint.h>

static inline int64_t tps_sat_add(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

static inline int64_t tps_sat_mul(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

#endif
