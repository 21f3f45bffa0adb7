/*
 * bfloat16 and float16 rounding (dtype.h). One generic rounding of a
 * double to p significand bits, exponents from emin, is the definition;
 * the per-element paths are bit tricks that the tests hold to it.
 */
#include "dtype.h"

#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

const char *const tps_dtype_names[] = {"float32", "bfloat16", "float16",
				       NULL};

struct format {
	int p;	  /* significand bits, the implicit one included */
	int emin; /* exponent of the smallest normal */
	double max;
	int bytes; /* in memory */
};

static const struct format formats[TPS_DTYPE_COUNT] = {
	[TPS_DTYPE_F32] = {24, -126, 0x1.fffffep127, 4},
	[TPS_DTYPE_BF16] = {8, -126, 0x1.fep127, 2},
	[TPS_DTYPE_F16] = {11, -14, 65504.0, 2},
};

int tps_dtype_size(enum tps_dtype d)
{
	return formats[d].bytes;
}

double tps_dtype_unit_roundoff(enum tps_dtype d)
{
	return ldexp(1.0, -formats[d].p);
}

/* x to the nearest multiple of the format's quantum at x's exponent
 * (rint: ties to even in the default rounding mode, which tpsim never
 * changes); past the largest finite value, infinity. */
static double round_generic(double x, const struct format *f)
{
	double a = fabs(x), r;
	int e;
	if (isnan(x) || isinf(x) || a == 0.0) {
		return x;
	}
	frexp(a, &e); /* a = m 2^e, m in [0.5, 1): leading bit 2^(e-1) */
	e = (e - 1 > f->emin ? e - 1 : f->emin) - (f->p - 1);
	r = ldexp(rint(ldexp(a, -e)), e);
	if (r > f->max) {
		r = INFINITY;
	}
	return copysign(r, x);
}

float tps_dtype_round_double(double x, enum tps_dtype d)
{
	return (float)round_generic(x, &formats[d]);
}

uint16_t tps_bf16_bits(float x)
{
	uint32_t b;
	memcpy(&b, &x, sizeof b);
	if ((b & 0x7fffffffu) > 0x7f800000u) {
		return (uint16_t)((b >> 16) | 0x40u); /* NaN stays quiet NaN */
	}
	/* Round to nearest even on the low 16 bits; a carry into the
	 * exponent is the next binade, or infinity. */
	b += 0x7fffu + ((b >> 16) & 1u);
	return (uint16_t)(b >> 16);
}

float tps_bf16_value(uint16_t bits)
{
	uint32_t b = (uint32_t)bits << 16;
	float x;
	memcpy(&x, &b, sizeof x);
	return x;
}

uint16_t tps_f16_bits(float x)
{
	double r = round_generic((double)x, &formats[TPS_DTYPE_F16]);
	uint16_t sign = signbit(r) ? 0x8000u : 0;
	double a = fabs(r);
	int e;
	if (isnan(r)) {
		return sign | 0x7e00u;
	}
	if (isinf(r)) {
		return sign | 0x7c00u;
	}
	if (a < 0x1p-14) { /* subnormal (or zero): a multiple of 2^-24 */
		return sign | (uint16_t)ldexp(a, 24);
	}
	frexp(a, &e); /* leading bit 2^(e-1), e - 1 in [-14, 15] */
	return sign | (uint16_t)((e - 1 + 15) << 10) |
	       (uint16_t)(ldexp(a, 11 - e) - 1024.0);
}

float tps_f16_value(uint16_t bits)
{
	int exp = (bits >> 10) & 0x1f, mant = bits & 0x3ff;
	double a;
	if (exp == 0x1f) {
		a = mant ? NAN : INFINITY;
	} else if (exp == 0) {
		a = ldexp(mant, -24);
	} else {
		a = ldexp(mant + 1024, exp - 25);
	}
	return (float)((bits & 0x8000u) ? -a : a);
}

float tps_dtype_round(float x, enum tps_dtype d)
{
	switch (d) {
	case TPS_DTYPE_F32: return x;
	case TPS_DTYPE_BF16: return tps_bf16_value(tps_bf16_bits(x));
	case TPS_DTYPE_F16: return tps_f16_value(tps_f16_bits(x));
	}
	assert(0 && "unknown dtype");
	return x;
}

void tps_dtype_round_array(float *x, int64_t n, enum tps_dtype d)
{
	if (d == TPS_DTYPE_F32) {
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		x[i] = tps_dtype_round(x[i], d);
	}
}
