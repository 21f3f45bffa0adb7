/*
 * numfmt: shortest round-trip float32 decimals, locale-free.
 *
 * tps_format_float (Schubfach) must print every finite float32 exactly as
 * tps_format_float_exact (the snprintf/strtof oracle, numfmt_internal.h)
 * does. These tests check the special values, every binary exponent, and a
 * fixed-seed sample of bit patterns: TPSIM_NUMFMT_SAMPLES of them (default
 * 2,000,000, ~3 s at -O2; 200,000 under AddressSanitizer, which is ~5 times
 * slower; meson's valgrind setup sets 20,000). tools/numfmt_exhaustive
 * checks all 2^32 patterns.
 */
#include <check.h>
#include <errno.h>
#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numfmt_internal.h"
#include "testutil.h"
#include "numfmt.h"
#include "rng.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifdef SANITIZED
#define DEFAULT_SAMPLES 200000
#else
#define DEFAULT_SAMPLES 2000000
#endif

static float from_bits(uint32_t bits)
{
	float v;
	memcpy(&v, &bits, sizeof v);
	return v;
}

static uint32_t to_bits(float v)
{
	uint32_t bits;
	memcpy(&bits, &v, sizeof bits);
	return bits;
}

/* New and old formatter agree byte for byte, and the text reads back with
 * strtof to the same bits (-0 included). Returns false, after printing
 * why, so that loops can count failures and report them all. */
static bool matches_oracle(float v)
{
	char got[TPS_NUMFMT_MAX], want[TPS_NUMFMT_MAX];
	size_t got_len = tps_format_float(v, got);
	size_t want_len = tps_format_float_exact(v, want);
	char *end;
	float back;

	if (strcmp(got, want) != 0 || got_len != want_len ||
	    got_len != strlen(got)) {
		fprintf(stderr,
			"0x%08x: new \"%s\" (%zu), oracle \"%s\" (%zu)\n",
			(unsigned)to_bits(v), got, got_len, want, want_len);
		return false;
	}
	back = strtof(got, &end);
	if (*end != '\0' || to_bits(back) != to_bits(v)) {
		fprintf(stderr, "0x%08x: \"%s\" reads back as 0x%08x\n",
			(unsigned)to_bits(v), got, (unsigned)to_bits(back));
		return false;
	}
	return true;
}

/* Significant digits of a plain or exponent decimal: leading zeros never
 * count, trailing zeros of an integer ("185828080") do not either. */
static int significant_digits(const char *s)
{
	int n = 0, trailing_zeros = 0, leading = 1;
	bool point = false;
	for (; *s && *s != 'e'; s++) {
		if (*s == '.') {
			point = true;
		}
		if (*s < '0' || *s > '9') {
			continue;
		}
		if (*s != '0') {
			leading = 0;
		}
		if (!leading) {
			n++;
			trailing_zeros = *s == '0' ? trailing_zeros + 1 : 0;
		}
	}
	return point ? n : n - trailing_zeros;
}

START_TEST(known_values_print_shortest)
{
	static const struct {
		float v;
		const char *want;
	} cases[] = {
		{0.0f, "0"},
		{-0.0f, "-0"},
		{FLT_TRUE_MIN, "1e-45"},
		{-FLT_TRUE_MIN, "-1e-45"},
		{0x1p-148f, "3e-45"},
		{0x3p-149f, "4e-45"},
		{0x7p-149f, "1e-44"},
		{0x0.fffffep-126f, "1.1754942e-38"}, /* largest subnormal */
		{FLT_MIN, "1.1754944e-38"},
		{-FLT_MIN, "-1.1754944e-38"},
		{FLT_MAX, "3.4028235e38"},
		{-FLT_MAX, "-3.4028235e38"},
		{0x1p127f, "1.7014118e38"},
		{1e38f, "1e38"},
		{1.0f, "1"},
		{30.0f, "30"},
		{70.0f, "70"},
		{100.0f, "100"},
		{-2.5f, "-2.5"},
		{0.1f, "0.1"},
		{0.3f, "0.3"},
		{1.0f / 3.0f, "0.33333334"},
		{123456.7f, "123456.7"},
		/* Integers: below 2^24 all digits, above it the shortest. */
		{1e7f, "10000000"},
		{16777215.0f, "16777215"},
		{16777216.0f, "16777216"},
		{16777218.0f, "16777218"},
		{16777220.0f, "16777220"},
		{33554430.0f, "33554430"},
		{99999992.0f, "99999990"},
		{123456792.0f, "123456790"},
		{123456789012.0f, "1.2345679e11"},
		/* Plain for decimal exponents in [-5, 9), else e notation. */
		{1e-4f, "0.0001"},
		{1e-5f, "0.00001"},
		{0x1.4f8b5ap-17f, "0.000010000001"}, /* 1e-5 + 1 ulp */
		{0x1.4f8b56p-17f, "9.999999e-6"},    /* 1e-5 - 1 ulp */
		{0.00001234f, "0.00001234"},
		{0x1p-14f, "0.000061035156"},
		{1e-6f, "1e-6"},
		{0x1.0c6f7cp-20f, "1.0000001e-6"},
		{-1e-7f, "-1e-7"},
		{1e8f, "100000000"},
		{100000008.0f, "100000010"},
		{999999936.0f, "999999940"},
		{1e9f, "1e9"},
		{0x1.dcd652p+29f, "1.00000006e9"},
		/* Powers of two whose interval is lopsided (the predecessor is
		 * twice as close): the closer 8-digit decimal falls outside it,
		 * so the oracle, and with it the new code, needs 9 digits. */
		{0x1p-96f, "1.26217745e-29"},
		{0x1p87f, "1.54742505e26"},
		{0x1p90f, "1.23794004e27"},
	};
	char buf[TPS_NUMFMT_MAX];
	int failed = 0;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tps_format_float(cases[i].v, buf);
		if (strcmp(buf, cases[i].want) != 0) {
			fprintf(stderr, "%a: got \"%s\", want \"%s\"\n",
				(double)cases[i].v, buf, cases[i].want);
			failed++;
		}
		failed += !matches_oracle(cases[i].v);
	}
	ck_assert_int_eq(failed, 0);
}
END_TEST

/* x.25 and x.75 in [2^21, 2^22): 8 digits read back, and the two 8-digit
 * decimals around the value are equally close. glibc's printf, and so the
 * oracle, rounds such exact ties to the even digit. */
START_TEST(ties_between_shortest_decimals_go_to_the_even_digit)
{
	static const struct {
		float v;
		const char *want;
	} cases[] = {
		{2097152.25f, "2097152.2"}, {2097152.75f, "2097152.8"},
		{3000000.25f, "3000000.2"}, {3000001.25f, "3000001.2"},
		{4194303.75f, "4194303.8"}, {-2097153.75f, "-2097153.8"},
	};
	char buf[TPS_NUMFMT_MAX];
	int failed = 0;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tps_format_float(cases[i].v, buf);
		ck_assert_str_eq(buf, cases[i].want);
		ck_assert(matches_oracle(cases[i].v));
	}
	/* Such values across [2^21, 2^22): fraction bits m odd (2^-2 ulp),
	 * stepping by 2 * 509 so that m mod 4 alternates (.25, .75). */
	for (uint32_t m = 1; m < (UINT32_C(1) << 23); m += 2 * 509) {
		failed += !matches_oracle(from_bits((148u << 23) | m));
	}
	ck_assert_int_eq(failed, 0);
}
END_TEST

/* Each biased exponent 0..254 (0: subnormals) with the fraction bits 0, 1,
 * a middle one and all ones, either sign. Fraction 0 at exponents 2..254 is
 * the lopsided case that has its own code path: all of it is here. */
START_TEST(every_exponent_matches_the_oracle)
{
	static const uint32_t fractions[] = {0,	       1,	 2,
					     0x400000, 0x7ffffe, 0x7fffff};
	int failed = 0, checked = 0;
	for (uint32_t sign = 0; sign < 2; sign++) {
		for (uint32_t e = 0; e < 255; e++) {
			for (size_t i = 0; i < 6; i++) {
				uint32_t bits =
					sign << 31 | e << 23 | fractions[i];
				failed += !matches_oracle(from_bits(bits));
				checked++;
			}
		}
	}
	ck_assert_int_eq(checked, 2 * 255 * 6);
	ck_assert_int_eq(failed, 0);
}
END_TEST

/* 10^k for every k a float reaches, 2^n for every n, and their two
 * neighbours: the ends of digit lengths and of the k drawers. */
START_TEST(powers_of_ten_and_two_match_the_oracle)
{
	int failed = 0;
	for (int k = -45; k <= 38; k++) {
		char text[16];
		float v;
		snprintf(text, sizeof text, "1e%d", k);
		v = strtof(text, NULL);
		failed += !matches_oracle(v);
		failed += !matches_oracle(nextafterf(v, 0.0f));
		failed += !matches_oracle(nextafterf(v, INFINITY));
	}
	for (int n = -149; n <= 127; n++) {
		float v = ldexpf(1.0f, n);
		failed += !matches_oracle(v);
		failed += !matches_oracle(nextafterf(v, 0.0f));
		if (n < 127) {
			failed += !matches_oracle(nextafterf(v, INFINITY));
		}
	}
	ck_assert_int_eq(failed, 0);
}
END_TEST

/* The integer path (below 2^24, every digit) and its edge: every float in
 * [2^24 - 2^12, 2^24 + 2^14], and every integer up to 2^14, either sign. */
START_TEST(integers_around_2_to_the_24_match_the_oracle)
{
	int failed = 0;
	for (float v = 16777216.0f - 4096.0f; v <= 16777216.0f + 16384.0f;
	     v = nextafterf(v, INFINITY)) {
		failed += !matches_oracle(v);
		failed += !matches_oracle(-v);
	}
	for (int i = 0; i <= 16384; i++) {
		failed += !matches_oracle((float)i);
		failed += !matches_oracle(-(float)i);
	}
	ck_assert_int_eq(failed, 0);
}
END_TEST

static long sample_count(void)
{
	const char *text = getenv("TPSIM_NUMFMT_SAMPLES");
	char *end;
	long n;
	if (text == NULL || *text == '\0') {
		return DEFAULT_SAMPLES;
	}
	errno = 0;
	n = strtol(text, &end, 10);
	ck_assert_msg(errno == 0 && *end == '\0' && n >= 0,
		      "TPSIM_NUMFMT_SAMPLES=%s: expected a count", text);
	return n;
}

START_TEST(no_float_text_is_longer_than_the_stated_maximum)
{
	/* TPS_NUMFMT_FLOAT_LEN_MAX bounds the trace size estimate: every
	 * exponent, negative, with random mantissas, and the longest form. */
	struct tps_rng rng;
	char buf[TPS_NUMFMT_MAX];
	size_t longest = 0;
	tps_rng_seed(&rng, 20251201);
	for (uint32_t e = 0; e < 0xff; e++) {
		for (int k = 0; k < 256; k++) {
			uint32_t m = (uint32_t)(tps_rng_next(&rng) >> 41);
			size_t n = tps_format_float(
				from_bits(0x80000000u | e << 23 | m), buf);
			longest = n > longest ? n : longest;
		}
	}
	printf("longest sampled float text: %zu bytes\n", longest);
	ck_assert_uint_le(longest, TPS_NUMFMT_FLOAT_LEN_MAX);
	ck_assert_uint_eq(tps_format_float(-1.23659975e-5f, buf),
			  TPS_NUMFMT_FLOAT_LEN_MAX);
	ck_assert_str_eq(buf, "-0.0000123659975");
}
END_TEST

START_TEST(sizes_read_in_binary_units)
{
	static const struct {
		int64_t bytes;
		int digits;
		const char *want;
	} cases[] = {
		{0, 3, "0 bytes"},
		{100, 3, "100 bytes"},
		{1023, 3, "1023 bytes"},
		{1024, 3, "1 KiB"},
		{1536, 3, "1.5 KiB"},
		{(int64_t)8 << 30, 3, "8 GiB"},
		{12616957952, 3, "11.8 GiB"}, /* 11.7505 GiB */
		{12616957952, 6, "11.7505 GiB"},
		{(int64_t)1000 << 30, 3, "1000 GiB"},
		{(int64_t)1023 << 20, 2, "1023 MiB"},
		{(int64_t)1 << 40, 3, "1 TiB"},
		{INT64_MAX, 3, "8 EiB"},
		{-5, 3, "-5 bytes"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char buf[TPS_NUMFMT_MAX];
		tps_format_bytes_digits(cases[i].bytes, cases[i].digits, buf);
		ck_assert_str_eq(buf, cases[i].want);
	}
}
END_TEST

START_TEST(sampled_bit_patterns_match_the_oracle)
{
	struct tps_rng rng;
	long n = sample_count(), checked = 0, failed = 0;
	tps_rng_seed(&rng, 20240605);
	while (checked < n && failed < 20) {
		uint32_t bits = (uint32_t)(tps_rng_next(&rng) >> 32);
		if (((bits >> 23) & 0xff) == 0xff) {
			continue; /* NaN, Inf: never in a trace */
		}
		failed += !matches_oracle(from_bits(bits));
		checked++;
	}
	fprintf(stderr, "numfmt: %ld sampled patterns, %ld mismatches\n",
		checked, failed);
	ck_assert_int_eq(failed, 0);
}
END_TEST

/* One double both ways; prints the first few disagreements. */
static bool double_matches_search(double v, long *failed)
{
	char fast[TPS_NUMFMT_MAX], slow[TPS_NUMFMT_MAX];
	tps_format_double(v, fast);
	tps_format_double_exact(v, slow);
	if (strcmp(fast, slow) == 0) {
		return true;
	}
	if (++*failed <= 5) {
		fprintf(stderr, "double %a: %s, the search gives %s\n", v, fast,
			slow);
	}
	return false;
}

START_TEST(doubles_match_the_digit_search)
{
	/* The one-conversion path for <= 15 digits against the binary
	 * search: decimals of 1 to 17 digits read with strtod (config
	 * numbers), random bit patterns, the normal/subnormal edge, and
	 * integers past 2^53. */
	const double edges[] = {DBL_MIN,
				nextafter(DBL_MIN, 0),
				nextafter(DBL_MIN, 1),
				DBL_MAX,
				DBL_TRUE_MIN,
				9007199254740993.0,
				1e23,
				5e-324,
				0.1,
				1.0 / 3.0,
				123456789012345.0,
				1234567890123456.7};
	struct tps_rng rng;
	long failed = 0, checked = 0;
	tps_rng_seed(&rng, 99);
	for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
		double_matches_search(edges[i], &failed);
		double_matches_search(-edges[i], &failed);
		checked += 2;
	}
	for (int i = 0; i < 60000; i++) {
		char text[64];
		int digits = 1 + (int)(tps_rng_next(&rng) % 17);
		int exp10 = (int)(tps_rng_next(&rng) % 80) - 40;
		double mant = 1.0 + (double)(tps_rng_next(&rng) >> 11) /
					    9007199254740992.0 * 9.0;
		uint64_t bits = tps_rng_next(&rng);
		double v;
		snprintf(text, sizeof text, "%.*fe%d", digits - 1, mant, exp10);
		double_matches_search(strtod(text, NULL), &failed);
		memcpy(&v, &bits, sizeof v);
		if (isfinite(v)) {
			double_matches_search(v, &failed);
			checked++;
		}
		checked++;
	}
	fprintf(stderr, "numfmt: %ld doubles, %ld mismatches\n", checked,
		failed);
	ck_assert_int_eq(failed, 0);
}
END_TEST

START_TEST(random_floats_round_trip_in_at_most_9_digits)
{
	struct tps_rng rng;
	char buf[TPS_NUMFMT_MAX], shorter[TPS_NUMFMT_MAX];
	tps_rng_seed(&rng, 1);
	for (int i = 0; i < 50000; i++) {
		uint32_t bits = (uint32_t)tps_rng_next(&rng);
		float v;
		int digits;
		memcpy(&v, &bits, 4);
		if (!isfinite(v)) {
			continue;
		}
		tps_format_float(v, buf);
		ck_assert_msg(strtof(buf, NULL) == v || (v == 0 && buf[0]),
			      "%s does not read back as %a", buf, (double)v);
		digits = significant_digits(buf);
		ck_assert_int_le(digits, 9);
		/* One digit fewer never reads back: it is the shortest. */
		if (digits > 1) {
			snprintf(shorter, sizeof shorter, "%.*e", digits - 2,
				 (double)v);
			ck_assert_msg(strtof(shorter, NULL) != v,
				      "%s is shorter than %s", shorter, buf);
		}
		ck_assert_ptr_null(strchr(buf, ','));
	}
}
END_TEST

START_TEST(doubles_round_trip)
{
	char buf[TPS_NUMFMT_MAX];
	tps_format_double(0.1, buf);
	ck_assert_str_eq(buf, "0.1");
	tps_format_double(1e-5, buf);
	ck_assert_str_eq(buf, "0.00001");
	tps_format_double(2.0, buf);
	ck_assert_str_eq(buf, "2");
	tps_format_double(1.0 / 3.0, buf);
	ck_assert(strtod(buf, NULL) == 1.0 / 3.0);
}
END_TEST

START_TEST(doubles_print_alike_in_a_comma_locale)
{
	/* A program embedding tpsim may set LC_NUMERIC to a decimal comma;
	 * the trace's doubles (the normalised config's lr, atol, ...) must
	 * not change with it. It printed 0.01 as 0.010000000000000000208:
	 * strtod read back "0.01" as 0 and the search ran to 17 digits. */
	static const double values[] = {0.01,	 1e-5,	 0.1,	  -0.5,
					2.5e-7,	 1e21,	 123.456, 1.0 / 3.0,
					DBL_MAX, 5e-324, 3e-310,  100.0};
	enum { N = sizeof values / sizeof values[0] };
	char c_text[N][TPS_NUMFMT_MAX], buf[TPS_NUMFMT_MAX];
	const char *dir = tu_tempdir();
	const char *comma = tu_comma_locale(dir);
	for (int i = 0; i < N; i++) {
		tps_format_double(values[i], c_text[i]);
	}
	/* The whole process's, as setlocale sets it. */
	ck_assert_ptr_nonnull(setlocale(LC_NUMERIC, comma));
	snprintf(buf, sizeof buf, "%g", 0.5);
	ck_assert_str_eq(buf, "0,5"); /* the locale is in force */
	for (int i = 0; i < N; i++) {
		tps_format_double(values[i], buf);
		ck_assert_str_eq(buf, c_text[i]);
	}
	/* The thread's own locale is given back. */
	snprintf(buf, sizeof buf, "%g", 0.5);
	ck_assert_ptr_nonnull(setlocale(LC_NUMERIC, "C"));
	ck_assert_str_eq(buf, "0,5");
	tu_rmtree(dir);
}
END_TEST

/*
 * Exact arithmetic for the Schubfach helpers: a 512-bit unsigned integer
 * in 32-bit limbs, least significant first, with just what the checks need.
 */
#define BIG_LIMBS 16

struct big {
	uint32_t limb[BIG_LIMBS];
};

static void big_mul(struct big *b, uint32_t m)
{
	uint64_t carry = 0;
	for (int i = 0; i < BIG_LIMBS; i++) {
		uint64_t x = (uint64_t)b->limb[i] * m + carry;
		b->limb[i] = (uint32_t)x;
		carry = x >> 32;
	}
	ck_assert(carry == 0);
}

/* b = floor(b / d) */
static void big_div(struct big *b, uint32_t d)
{
	uint64_t rem = 0;
	for (int i = BIG_LIMBS - 1; i >= 0; i--) {
		uint64_t x = rem << 32 | b->limb[i];
		b->limb[i] = (uint32_t)(x / d);
		rem = x % d;
	}
}

/* b = m 2^twos 10^tens */
static void big_make(struct big *b, uint32_t m, int twos, int tens)
{
	memset(b, 0, sizeof *b);
	b->limb[0] = m;
	for (int i = 0; i < twos; i++) {
		big_mul(b, 2);
	}
	for (int i = 0; i < tens; i++) {
		big_mul(b, 10);
	}
}

static int big_cmp(const struct big *a, const struct big *b)
{
	for (int i = BIG_LIMBS - 1; i >= 0; i--) {
		if (a->limb[i] != b->limb[i]) {
			return a->limb[i] < b->limb[i] ? -1 : 1;
		}
	}
	return 0;
}

/* Sign of m 2^a - 10^k, exactly: multiplied by 2^max(-a, 0) and
 * 10^max(-k, 0), both sides are integers. */
static int cmp_pow2_pow10(uint32_t m, int a, int k)
{
	struct big lhs, rhs;
	big_make(&lhs, m, a > 0 ? a : 0, k < 0 ? -k : 0);
	big_make(&rhs, 1, a < 0 ? -a : 0, k > 0 ? k : 0);
	return big_cmp(&lhs, &rhs);
}

/* For every float exponent q: 10^k <= 2^q < 10^(k+1), and the same for
 * 3/4 2^q = 3 2^(q-2); for every e = -k of the table:
 * 2^b <= 10^e < 2^(b+1). */
START_TEST(log_helpers_match_their_definitions)
{
	for (int q = -149; q <= 104; q++) {
		int k = tps_numfmt_flog10_pow2(q);
		int k34 = tps_numfmt_flog10_three_quarters_pow2(q);
		ck_assert_int_ge(cmp_pow2_pow10(1, q, k), 0);
		ck_assert_int_lt(cmp_pow2_pow10(1, q, k + 1), 0);
		ck_assert_int_ge(cmp_pow2_pow10(3, q - 2, k34), 0);
		ck_assert_int_lt(cmp_pow2_pow10(3, q - 2, k34 + 1), 0);
		ck_assert_int_ge(k34, TPS_NUMFMT_K_MIN + 1);
		ck_assert_int_le(k, TPS_NUMFMT_K_MAX);
	}
	for (int e = -TPS_NUMFMT_K_MAX; e <= -TPS_NUMFMT_K_MIN; e++) {
		int b = tps_numfmt_flog2_pow10(e);
		ck_assert_int_le(cmp_pow2_pow10(1, b, e), 0);
		ck_assert_int_gt(cmp_pow2_pow10(1, b + 1, e), 0);
	}
}
END_TEST

/* g(k) = floor(10^-k 2^(62 - b)) + 1 with b = floor(log2(10^-k)): computed
 * as m 2^max(62-b, 0) 10^max(-k, 0), then floor-divided by 2^max(b-62, 0)
 * and 10^max(k, 0) (successive floors are the floor of the quotient). */
START_TEST(pow10_table_matches_its_definition)
{
	for (int k = TPS_NUMFMT_K_MIN; k <= TPS_NUMFMT_K_MAX; k++) {
		int b = tps_numfmt_flog2_pow10(-k);
		struct big n;
		uint64_t want, got = tps_numfmt_pow10_g(k);
		big_make(&n, 1, 62 - b > 0 ? 62 - b : 0, k < 0 ? -k : 0);
		for (int i = 0; i < b - 62; i++) {
			big_div(&n, 2);
		}
		for (int i = 0; i < k; i++) {
			big_div(&n, 10);
		}
		for (int i = 2; i < BIG_LIMBS; i++) {
			ck_assert_uint_eq(n.limb[i], 0);
		}
		want = ((uint64_t)n.limb[1] << 32 | n.limb[0]) + 1;
		ck_assert_msg(got == want, "g(%d) = 0x%016llx, want 0x%016llx",
			      k, (unsigned long long)got,
			      (unsigned long long)want);
		ck_assert(want > UINT64_C(1) << 62 && want <= UINT64_C(1)
								      << 63);
	}
}
END_TEST

/* Sizes for people: the table's figures by hand (1 KiB = 1024 bytes, three
 * significant digits, half up). */
START_TEST(sizes_print_in_binary_units_with_three_digits)
{
	static const struct {
		int64_t bytes;
		const char *human, *exact;
	} cases[] = {
		{0, "0 bytes", "0 bytes"},
		{1, "1 byte", "1 byte"},
		{768, "768 bytes", "768 bytes"},
		{1023, "1023 bytes", "1023 bytes"},
		{-5, "-5 bytes", "-5 bytes"},
		{1024, "1 KiB", "1 KiB (1024 bytes)"},
		{1536, "1.5 KiB", "1.5 KiB (1536 bytes)"},
		/* 10239 / 1024 = 9.999: rounds to 10.00, written 10. */
		{10239, "10 KiB", "10 KiB (10239 bytes)"},
		/* 1048575 / 1024 = 1023.999 KiB: the next unit's 1. */
		{1048575, "1 MiB", "1 MiB (1048575 bytes)"},
		/* 2359296 = 2.25 * 2^20: the SP block's all_gather. */
		{2359296, "2.25 MiB", "2.25 MiB (2359296 bytes)"},
		/* 7425024 / 2^20 = 7.0810546875. */
		{7425024, "7.08 MiB", "7.08 MiB (7425024 bytes)"},
		/* 939524096 = 896 * 2^20: issue 15's comm --summary figure. */
		{939524096, "896 MiB", "896 MiB (939524096 bytes)"},
		/* 87623270400 / 2^30 = 81.6058...: GPT-3's parameters. */
		{87623270400, "81.6 GiB", "81.6 GiB (87623270400 bytes)"},
		{1649267441664, "1.5 TiB", "1.5 TiB (1649267441664 bytes)"},
		/* 2^63 - 1 = 8 EiB - 1 byte: 7.99999... rounds to 8. */
		{INT64_MAX, "8 EiB", "8 EiB (9223372036854775807 bytes)"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char human[TPS_NUMFMT_MAX], exact[TPS_NUMFMT_BYTES_MAX];
		size_t n = tps_format_bytes(cases[i].bytes, human);
		ck_assert_str_eq(human, cases[i].human);
		ck_assert_uint_eq(n, strlen(cases[i].human));
		n = tps_format_bytes_exact(cases[i].bytes, exact);
		ck_assert_str_eq(exact, cases[i].exact);
		ck_assert_uint_eq(n, strlen(cases[i].exact));
	}
}
END_TEST

static Suite *numfmt_suite(void)
{
	Suite *s = suite_create("numfmt");
	TCase *tc = tcase_create("shortest");
	TCase *oracle = tcase_create("oracle");
	TCase *helpers = tcase_create("schubfach_helpers");
	tcase_add_test(tc, known_values_print_shortest);
	tcase_add_test(tc, ties_between_shortest_decimals_go_to_the_even_digit);
	tcase_add_test(tc, random_floats_round_trip_in_at_most_9_digits);
	tcase_add_test(tc, doubles_round_trip);
	tcase_add_test(tc, doubles_print_alike_in_a_comma_locale);
	tcase_add_test(tc, sizes_print_in_binary_units_with_three_digits);
	tcase_add_test(tc, no_float_text_is_longer_than_the_stated_maximum);
	tcase_add_test(tc, sizes_read_in_binary_units);
	suite_add_tcase(s, tc);
	tcase_add_test(oracle, every_exponent_matches_the_oracle);
	tcase_add_test(oracle, powers_of_ten_and_two_match_the_oracle);
	tcase_add_test(oracle, integers_around_2_to_the_24_match_the_oracle);
	tcase_add_test(oracle, sampled_bit_patterns_match_the_oracle);
	tcase_add_test(oracle, doubles_match_the_digit_search);
	suite_add_tcase(s, oracle);
	tcase_add_test(helpers, log_helpers_match_their_definitions);
	tcase_add_test(helpers, pow10_table_matches_its_definition);
	suite_add_tcase(s, helpers);
	return s;
}

int main(void)
{
	return tu_run_suite(numfmt_suite());
}
