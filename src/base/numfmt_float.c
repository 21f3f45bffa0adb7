/*
 * tps_format_float: the shortest decimal that reads back to the same float32,
 * by Schubfach, on exact integers (no snprintf, no strtof, no locale).
 *
 * R. Giulietti, "The Schubfach way to render doubles" (2020), the algorithm
 * behind Java's Double.toString and Float.toString since JDK 19. Schubfach
 * (German: drawer) is named for the pigeonhole principle at its heart. This
 * is written from the paper's description; the output rules are those of
 * the formatter it replaced (numfmt_internal.h), not Java's.
 *
 * The value. A positive finite float is v = c 2^q with an integer c:
 * normal: c = 2^23 + fraction bits in [2^23, 2^24), q = biased exponent - 150;
 * subnormal: c = fraction bits in [1, 2^23), q = -149.
 *
 * The rounding interval R_v: the reals that strtof (round to nearest, ties
 * to even) reads as v. Its ends are the midpoints with v's neighbours:
 *   regular:   [v - 2^(q-1), v + 2^(q-1)], width 2^q;
 *   irregular: c = 2^23 and q > -149 (v a power of two whose predecessor is
 *              twice as close): [v - 2^(q-2), v + 2^(q-1)], width 3/4 2^q.
 * A midpoint is a tie and goes to the even significand: the ends belong to
 * R_v when c is even, and do not when c is odd.
 *
 * The drawers. Take k = floor(log10(width)), so that
 * 10^k <= width < 10^(k+1). Then R_v holds at least one multiple of 10^k
 * and at most one multiple of 10^(k+1). Let s = floor(v 10^-k), so that
 * s 10^k <= v < (s+1) 10^k, and s' = 10 floor(s/10), t' = s' + 10:
 * - if one of s' 10^k, t' 10^k lies in R_v, it is the only decimal of
 *   precision 10^(k+1) there (any other would make two), and the shortest;
 * - else the shortest have precision 10^k, and at least one of s 10^k,
 *   (s+1) 10^k lies in R_v (both are within 10^k of v). If both do, take
 *   the one closer to v, and on a tie the one with the even last digit.
 * That is the choice of the formatter this replaced (numfmt_internal.h): its
 * snprintf("%.{p-1}e") rounds the exact binary value correctly, glibc
 * rounding exact ties to even, and for a symmetric R_v the closest decimal
 * of a length is in R_v whenever any of that length is.
 *
 * Exact arithmetic (the paper's section 9 and appendix). Scale by 4 10^-k so
 * that v and the ends of R_v become integers plus quarters: vb = 4 v 10^-k = cb
 * 2^q 10^-k with cb = 4c; vbl, vbr the same for cbl = 4c - 2 (irregular: 4c -
 * 1) and cbr = 4c + 2. Each is computed as round-to-odd, rop(x) = floor(x) if x
 * is an integer, else floor(x) | 1: the last bit says "inexact", and
 * comparisons with even integers (4s, 2(s + t)) stay exact. 10^-k comes from a
 * table of 63-bit overestimates g(k) (numfmt_internal.h), so that with cp = cb
 * 2^h and h = q + floor(log2(10^-k)) + 33, cp g / 2^95 = 4 x 10^-k + err, 0 <
 * err < cp / 2^95 < 2^-33. The fractional parts of the exact quotients are
 * never within err of 0 or 1 (the paper's appendix bounds them; Java's
 * FloatToDecimal uses these g and h for every float), so the 95-bit shift, with
 * the bits below 2^64 dropped, gives rop exactly. tools/numfmt_exhaustive
 * checks the result on all 2^32 patterns.
 */
#include "numfmt.h"

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "numfmt_internal.h"

#define C_MIN (UINT32_C(1) << 23) /* smallest normal significand */
#define Q_MIN (-149)		  /* exponent of the subnormals and 2^-126 */

/* g(k) for k = TPS_NUMFMT_K_MIN .. TPS_NUMFMT_K_MAX, the k that floats need.
 * Generated with exact integers; test_numfmt.c recomputes every entry. */
static const uint64_t pow10_g[] = {
	UINT64_C(0x701a97b150cf1838), /* k = -46 */
	UINT64_C(0x59aedfc10d7279c6), /* k = -45 */
	UINT64_C(0x47bf19673df52e38), /* k = -44 */
	UINT64_C(0x72cb5bd86321e38d), /* k = -43 */
	UINT64_C(0x5bd5e313828182d7), /* k = -42 */
	UINT64_C(0x4977e8dc68679be0), /* k = -41 */
	UINT64_C(0x758ca7c70d7292ff), /* k = -40 */
	UINT64_C(0x5e0a1fd271287599), /* k = -39 */
	UINT64_C(0x4b3b4ca85a86c47b), /* k = -38 */
	UINT64_C(0x785ee10d5da46d91), /* k = -37 */
	UINT64_C(0x604be73de4838ada), /* k = -36 */
	UINT64_C(0x4d0985cb1d3608af), /* k = -35 */
	UINT64_C(0x7b426fab61f00de4), /* k = -34 */
	UINT64_C(0x629b8c891b267183), /* k = -33 */
	UINT64_C(0x4ee2d6d415b85acf), /* k = -32 */
	UINT64_C(0x7e37be2022c0914c), /* k = -31 */
	UINT64_C(0x64f964e68233a770), /* k = -30 */
	UINT64_C(0x50c783eb9b5c85f3), /* k = -29 */
	UINT64_C(0x409f9cbc7c4a04c3), /* k = -28 */
	UINT64_C(0x6765c793fa10079e), /* k = -27 */
	UINT64_C(0x52b7d2dcc80cd2e5), /* k = -26 */
	UINT64_C(0x422ca8b0a00a4251), /* k = -25 */
	UINT64_C(0x69e10de76676d081), /* k = -24 */
	UINT64_C(0x54b40b1f852bda01), /* k = -23 */
	UINT64_C(0x43c33c1937564801), /* k = -22 */
	UINT64_C(0x6c6b935b8bbd4001), /* k = -21 */
	UINT64_C(0x56bc75e2d6310001), /* k = -20 */
	UINT64_C(0x4563918244f40001), /* k = -19 */
	UINT64_C(0x6f05b59d3b200001), /* k = -18 */
	UINT64_C(0x58d15e1762800001), /* k = -17 */
	UINT64_C(0x470de4df82000001), /* k = -16 */
	UINT64_C(0x71afd498d0000001), /* k = -15 */
	UINT64_C(0x5af3107a40000001), /* k = -14 */
	UINT64_C(0x48c2739500000001), /* k = -13 */
	UINT64_C(0x746a528800000001), /* k = -12 */
	UINT64_C(0x5d21dba000000001), /* k = -11 */
	UINT64_C(0x4a817c8000000001), /* k = -10 */
	UINT64_C(0x7735940000000001), /* k = -9 */
	UINT64_C(0x5f5e100000000001), /* k = -8 */
	UINT64_C(0x4c4b400000000001), /* k = -7 */
	UINT64_C(0x7a12000000000001), /* k = -6 */
	UINT64_C(0x61a8000000000001), /* k = -5 */
	UINT64_C(0x4e20000000000001), /* k = -4 */
	UINT64_C(0x7d00000000000001), /* k = -3 */
	UINT64_C(0x6400000000000001), /* k = -2 */
	UINT64_C(0x5000000000000001), /* k = -1 */
	UINT64_C(0x4000000000000001), /* k = 0 */
	UINT64_C(0x6666666666666667), /* k = 1 */
	UINT64_C(0x51eb851eb851eb86), /* k = 2 */
	UINT64_C(0x4189374bc6a7ef9e), /* k = 3 */
	UINT64_C(0x68db8bac710cb296), /* k = 4 */
	UINT64_C(0x53e2d6238da3c212), /* k = 5 */
	UINT64_C(0x431bde82d7b634db), /* k = 6 */
	UINT64_C(0x6b5fca6af2bd215f), /* k = 7 */
	UINT64_C(0x55e63b88c230e77f), /* k = 8 */
	UINT64_C(0x44b82fa09b5a52cc), /* k = 9 */
	UINT64_C(0x6df37f675ef6eae0), /* k = 10 */
	UINT64_C(0x57f5ff85e5925580), /* k = 11 */
	UINT64_C(0x465e6604b7a84466), /* k = 12 */
	UINT64_C(0x709709a125da070a), /* k = 13 */
	UINT64_C(0x5a126e1a84ae6c08), /* k = 14 */
	UINT64_C(0x480ebe7b9d58566d), /* k = 15 */
	UINT64_C(0x734aca5f6226f0ae), /* k = 16 */
	UINT64_C(0x5c3bd5191b525a25), /* k = 17 */
	UINT64_C(0x49c97747490eae84), /* k = 18 */
	UINT64_C(0x760f253edb4ab0d3), /* k = 19 */
	UINT64_C(0x5e72843249088d76), /* k = 20 */
	UINT64_C(0x4b8ed0283a6d3df8), /* k = 21 */
	UINT64_C(0x78e480405d7b9659), /* k = 22 */
	UINT64_C(0x60b6cd004ac94514), /* k = 23 */
	UINT64_C(0x4d5f0a66a23a9daa), /* k = 24 */
	UINT64_C(0x7bcb43d769f762a9), /* k = 25 */
	UINT64_C(0x63090312bb2c4eee), /* k = 26 */
	UINT64_C(0x4f3a68dbc8f03f25), /* k = 27 */
	UINT64_C(0x7ec3daf941806507), /* k = 28 */
	UINT64_C(0x65697bfa9acd1da0), /* k = 29 */
	UINT64_C(0x51212ffbaf0a7e19), /* k = 30 */
	UINT64_C(0x40e7599625a1fe7b), /* k = 31 */
};

/* floor(x / 2^shift) for negative x too, without relying on >> of a
 * negative number (implementation-defined in C). */
static int64_t floor_shift(int64_t x, int shift)
{
	return x >= 0 ? x >> shift
		      : -((-x + (INT64_C(1) << shift) - 1) >> shift);
}

/* The multipliers are 2^41 log10(2), 2^41 log10(4/3) and 2^38 log2(10),
 * rounded as in the paper, which proves them exact far beyond the float
 * exponents; the tests check them on every exponent used here. */
int tps_numfmt_flog10_pow2(int q)
{
	return (int)floor_shift((int64_t)q * 661971961083, 41);
}

int tps_numfmt_flog10_three_quarters_pow2(int q)
{
	return (int)floor_shift((int64_t)q * 661971961083 - 274743187321, 41);
}

int tps_numfmt_flog2_pow10(int e)
{
	return (int)floor_shift((int64_t)e * 913124641741, 38);
}

uint64_t tps_numfmt_pow10_g(int k)
{
	assert(k >= TPS_NUMFMT_K_MIN && k <= TPS_NUMFMT_K_MAX);
	return pow10_g[k - TPS_NUMFMT_K_MIN];
}

/* floor(a b / 2^64), on 32-bit halves: a b = hh 2^64 + (hl + lh) 2^32 + ll. */
static uint64_t mul_high64(uint64_t a, uint64_t b)
{
	uint64_t a_lo = (uint32_t)a, a_hi = a >> 32;
	uint64_t b_lo = (uint32_t)b, b_hi = b >> 32;
	uint64_t ll = a_lo * b_lo, hl = a_hi * b_lo, lh = a_lo * b_hi;
	uint64_t hh = a_hi * b_hi;
	/* At most 2 (2^32 - 1) + (2^32 - 1)^2 = 2^64 - 1: no overflow. */
	uint64_t mid = (ll >> 32) + (uint32_t)hl + lh;
	return hh + (hl >> 32) + (mid >> 32);
}

/*
 * rop(cp g / 2^(64 + shift)): the bits below 2^64 hold only g's error and
 * are dropped; the next `shift` bits decide "inexact". Exact for shift = 31
 * and h in [33, 36] (see the top of the file).
 */
static uint64_t round_to_odd(uint64_t g, uint64_t cp, int shift)
{
	uint64_t x1 = mul_high64(g, cp);
	return (x1 >> shift) | ((x1 & ((UINT64_C(1) << shift) - 1)) != 0);
}

/* A decimal f 10^e. */
struct decimal {
	uint32_t f;
	int e;
};

/* The shortest decimal in a regular R_v, closest to v = c 2^q (c > 0). */
static struct decimal regular_decimal(uint32_t c, int q)
{
	uint64_t cb = (uint64_t)c << 2;
	int k = tps_numfmt_flog10_pow2(q);
	/* h in [33, 36]: cp < 2^26 2^36 fits, and vb < 40 c < 2^30. */
	int h = q + tps_numfmt_flog2_pow10(-k) + 33;
	uint64_t g = tps_numfmt_pow10_g(k);
	uint32_t vb = (uint32_t)round_to_odd(g, cb << h, 31);
	uint32_t vbl = (uint32_t)round_to_odd(g, (cb - 2) << h, 31);
	uint32_t vbr = (uint32_t)round_to_odd(g, (cb + 2) << h, 31);
	/* An odd c excludes the ends: x in R_v is vbl < 4x < vbr, which on
	 * integers is vbl + 1 <= 4x <= vbr - 1. */
	uint32_t out = c & 1;
	uint32_t s = vb >> 2, t = s + 1;
	uint32_t sp = s / 10 * 10, tp = sp + 10;
	/* sp = 0 is never in R_v: vbl >= 1. */
	bool sp_in = vbl + out <= sp << 2;
	bool tp_in = (tp << 2) + out <= vbr;
	bool s_in, t_in;

	/* R_v is symmetric about v: of two candidates around v, the closer
	 * one is in R_v whenever the other is, so "the one in R_v" is also
	 * "the closest", the oracle's choice. */
	if (sp_in != tp_in) {
		return (struct decimal){sp_in ? sp : tp, k};
	}
	s_in = vbl + out <= s << 2;
	t_in = (t << 2) + out <= vbr;
	if (s_in != t_in) {
		return (struct decimal){s_in ? s : t, k};
	}
	/* Both: vb against 4 (s + 1/2), the midpoint of s and t. */
	if (vb < 2 * (s + t) || (vb == 2 * (s + t) && s % 2 == 0)) {
		return (struct decimal){s, k};
	}
	return (struct decimal){t, k};
}

/*
 * v = 2^23 2^q, q > -149, whose R_v = [v - 2^(q-2), v + 2^(q-1)] is closed
 * and lopsided: the closest decimal of a length may lie outside R_v while a
 * farther one of the same length lies inside. Schubfach would take the one
 * inside; the oracle (closest correctly rounded p digits, else p + 1) does
 * not. So follow the oracle: for the precisions 10^(k+1), 10^k, 10^(k-1),
 * coarsest first, take the decimal closest to v (ties to even) if it lies
 * in R_v. 10^(k-1) always does: R_v reaches 1/3 of its width, at least
 * 10^k / 3, below v and more above it. This needs one more digit than the
 * regular case, so the scale is 4 10^-(k-1) and the shift 27, not 31 (cp
 * must fit in 64 bits). The paper's bound does not cover these parameters;
 * they are used by 253 values per sign only, which the tests check all
 * against the oracle (every_exponent_matches_the_oracle).
 */
static struct decimal irregular_decimal(int q)
{
	uint64_t cb = (uint64_t)C_MIN << 2;
	int k = tps_numfmt_flog10_three_quarters_pow2(q) - 1;
	/* q + floor(log2(10^-k)) is in [3, 7], h in [32, 36]: cp < 2^62. */
	int h = q + tps_numfmt_flog2_pow10(-k) + 29;
	uint64_t g = tps_numfmt_pow10_g(k);
	uint64_t vb = round_to_odd(g, cb << h, 27);
	uint64_t vbl = round_to_odd(g, (cb - 1) << h, 27);
	uint64_t vbr = round_to_odd(g, (cb + 2) << h, 27);
	uint64_t unit = 100;

	for (int i = 2; i >= 0; i--, unit /= 10) {
		/* d = the multiple of 10^(k+i) closest to v, in units of it:
		 * vb = 4 unit d + rem, 0 <= rem < 4 unit; a tie (rem = 2 unit,
		 * exact since rem is odd when inexact) goes to the even d. */
		uint64_t d = vb / (4 * unit);
		uint64_t rem = vb - 4 * unit * d;
		if (rem > 2 * unit || (rem == 2 * unit && d % 2 == 1)) {
			d++;
		}
		if (i == 0 || (vbl <= 4 * unit * d && 4 * unit * d <= vbr)) {
			return (struct decimal){(uint32_t)(d * unit), k};
		}
	}
	assert(0);
	return (struct decimal){0, 0};
}

/*
 * Writes f 10^e as the oracle does: its significant digits d1..dp (f without
 * trailing zeros) and x = e + p - 1 give "d1.d2..dp" x 10^x, written plain
 * when -5 <= x < 9 ("0.00001", "12.5", "120000000") and as "d1.d2..dpex"
 * otherwise ("1e-6", "3.4028235e38").
 */
static size_t write_decimal(char *buf, bool negative, struct decimal d)
{
	char digits[10];
	int p = 0, x, i;
	char *out = buf;

	assert(d.f > 0);
	while (d.f % 10 == 0) {
		d.f /= 10;
		d.e++;
	}
	for (uint32_t f = d.f; f > 0; f /= 10) {
		p++;
	}
	for (i = p - 1; i >= 0; i--) {
		digits[i] = (char)('0' + d.f % 10);
		d.f /= 10;
	}
	x = d.e + p - 1;
	if (negative) {
		*out++ = '-';
	}
	if (x >= -5 && x < 0) {
		*out++ = '0';
		*out++ = '.';
		for (i = 0; i < -x - 1; i++) {
			*out++ = '0';
		}
		memcpy(out, digits, (size_t)p);
		out += p;
	} else if (x >= 0 && x < 9) {
		for (i = 0; i <= x || i < p; i++) {
			if (i == x + 1) {
				*out++ = '.';
			}
			*out++ = i < p ? digits[i] : '0';
		}
	} else {
		int ax = x < 0 ? -x : x;
		*out++ = digits[0];
		if (p > 1) {
			*out++ = '.';
			memcpy(out, digits + 1, (size_t)p - 1);
			out += p - 1;
		}
		*out++ = 'e';
		if (x < 0) {
			*out++ = '-';
		}
		/* |x| <= 45 */
		if (ax >= 10) {
			*out++ = (char)('0' + ax / 10);
		}
		*out++ = (char)('0' + ax % 10);
	}
	*out = '\0';
	return (size_t)(out - buf);
}

size_t tps_format_float(float value, char *buf)
{
	uint32_t bits, fraction, biased;
	bool negative;
	uint32_t c;
	int q;

	memcpy(&bits, &value, sizeof bits);
	negative = bits >> 31;
	biased = (bits >> 23) & 0xff;
	fraction = bits & (C_MIN - 1);
	assert(biased != 0xff); /* the trace never holds NaN or Inf */
	if (biased == 0 && fraction == 0) {
		/* -0 keeps its sign: it reads back as -0. */
		char *out = buf;
		if (negative) {
			*out++ = '-';
		}
		*out++ = '0';
		*out = '\0';
		return (size_t)(out - buf);
	}
	if (biased == 0) {
		c = fraction;
		q = Q_MIN;
	} else {
		c = C_MIN | fraction;
		q = (int)biased - 150;
	}
	/* An integer below 2^24 (q in [-23, 0], no fraction bits left) is
	 * the shortest as it stands: its neighbours are at most 1 away, and
	 * any decimal with fewer significant digits is a different integer.
	 * The common case in teaching traces (arange), without a multiply. */
	if (q <= 0 && q >= -23 && (c & ((UINT32_C(1) << -q) - 1)) == 0) {
		return write_decimal(buf, negative,
				     (struct decimal){c >> -q, 0});
	}
	return write_decimal(buf, negative,
			     c == C_MIN && q > Q_MIN ? irregular_decimal(q)
						     : regular_decimal(c, q));
}
