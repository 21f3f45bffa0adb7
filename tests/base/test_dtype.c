/*
 * Tests of the bfloat16 and float16 roundings (dtype.h) against bit
 * patterns worked out by hand, and of their shortest decimals (numfmt.h).
 *
 * A float32 is s eeeeeeee mmm...(23); bfloat16 keeps s, e and the top 7
 * bits of m, so its pattern is the float's top 16 bits, rounded on the low
 * 16: below 0x8000 down, above up, at exactly 0x8000 to the even one.
 * float16 is s eeeee mmmmmmmmmm, bias 15: 1.0 is 0x3c00, 2^-14 (the
 * smallest normal) 0x0400, 2^-24 (the smallest subnormal) 0x0001, 65504
 * (the largest finite) 0x7bff.
 */
#include "dtype.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numfmt.h"
#include "testutil.h"

static float from_bits(uint32_t b)
{
	float x;
	memcpy(&x, &b, sizeof x);
	return x;
}

START_TEST(bf16_rounds_to_nearest_even_by_hand)
{
	static const struct {
		uint32_t f32;
		uint16_t bf16;
		const char *why;
	} cases[] = {
		{0x3f800000u, 0x3f80u, "1.0 exact"},
		{0x3f808000u, 0x3f80u, "1 + 2^-8: a tie, to the even 0x3f80"},
		{0x3f818000u, 0x3f82u, "1 + 3 2^-8: a tie, to the even 0x3f82"},
		{0x3f808001u, 0x3f81u, "just above the tie: up"},
		{0x3f807fffu, 0x3f80u, "just below the tie: down"},
		{0x40490fdbu, 0x4049u, "pi: low bits 0x0fdb, down to 3.140625"},
		{0x3dcccccdu, 0x3dcdu, "0.1f: low bits 0xcccd, up"},
		{0x7f7f7fffu, 0x7f7fu, "below half an ulp past the largest"},
		{0x7f7f8000u, 0x7f80u, "a tie at the top: even is infinity"},
		{0x7f7fffffu, 0x7f80u, "FLT_MAX rounds to infinity"},
		{0x7f800000u, 0x7f80u, "infinity"},
		{0xff800000u, 0xff80u, "-infinity"},
		{0x80000000u, 0x8000u, "-0"},
		{0x00010000u, 0x0001u, "2^-133, the smallest bf16 subnormal"},
		{0x00008000u, 0x0000u, "2^-134: a tie, to the even 0"},
		{0x00018000u, 0x0002u, "3 2^-134: a tie, to the even 0x0002"},
		{0x00000001u, 0x0000u, "the smallest float subnormal: 0"},
		{0x807fffffu, 0x8080u, "the largest float subnormal, negative: "
				       "up into the smallest normal"},
		{0x7fc00000u, 0x7fc0u, "a quiet NaN"},
		{0x7f800001u, 0x7fc0u, "a signalling NaN becomes quiet"},
		{0xff800001u, 0xffc0u, "a negative signalling NaN keeps its sign"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		float x = from_bits(cases[i].f32);
		ck_assert_msg(tps_bf16_bits(x) == cases[i].bf16,
			      "%s: %08x -> %04x, want %04x", cases[i].why,
			      cases[i].f32, tps_bf16_bits(x), cases[i].bf16);
		if (!isnan(x)) {
			float r = tps_dtype_round(x, TPS_DTYPE_BF16);
			float g = tps_dtype_round_double((double)x,
							 TPS_DTYPE_BF16);
			ck_assert_msg(memcmp(&r, &g, sizeof r) == 0,
				      "%s: the bit path %a, the generic %a",
				      cases[i].why, r, g);
		}
	}
	ck_assert(tps_bf16_value(0x3f80u) == 1.0f);
	ck_assert(tps_bf16_value(0x4049u) == 3.140625f);
	ck_assert(tps_bf16_value(0x0001u) == ldexpf(1.0f, -133));
}
END_TEST

START_TEST(f16_rounds_to_nearest_even_by_hand)
{
	static const struct {
		float x;
		uint16_t f16;
		const char *why;
	} cases[] = {
		{1.0f, 0x3c00u, "1.0"},
		{-2.0f, 0xc000u, "-2"},
		{0x1.002p0f, 0x3c00u, "1 + 2^-11: a tie, to the even 0x3c00"},
		{0x1.006p0f, 0x3c02u, "1 + 3 2^-11: a tie, to the even 0x3c02"},
		{0x1.0021p0f, 0x3c01u, "just above the tie: up"},
		{0.1f, 0x2e66u, "0.1f: 1.6 2^-4, mantissa 614.4 -> 614"},
		{65504.0f, 0x7bffu, "the largest finite"},
		{65519.0f, 0x7bffu, "below the halfway point 65520"},
		{65520.0f, 0x7c00u, "65520, a tie: the even one is infinity"},
		{1e5f, 0x7c00u, "overflow"},
		{0x1p-14f, 0x0400u, "the smallest normal"},
		{0x1p-24f, 0x0001u, "the smallest subnormal"},
		{0x1p-25f, 0x0000u, "2^-25: a tie, to the even 0"},
		{0x1.8p-24f, 0x0002u, "3 2^-25: a tie, to the even 0x0002"},
		{0x1.ff8p-15f, 0x03ffu, "the largest subnormal"},
		{-0.0f, 0x8000u, "-0"},
		{INFINITY, 0x7c00u, "infinity"},
		{NAN, 0x7e00u, "NaN, quiet"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint16_t got = tps_f16_bits(cases[i].x);
		ck_assert_msg(got == cases[i].f16, "%s: %a -> %04x, want %04x",
			      cases[i].why, cases[i].x, got, cases[i].f16);
	}
	ck_assert(tps_f16_value(0x3c00u) == 1.0f);
	ck_assert(tps_f16_value(0x7bffu) == 65504.0f);
	ck_assert(tps_f16_value(0x0001u) == 0x1p-24f);
	ck_assert(tps_f16_value(0x2e66u) == 0x1.998p-4f);
	ck_assert(isinf(tps_f16_value(0x7c00u)));
	ck_assert(isnan(tps_f16_value(0x7e00u)));
}
END_TEST

START_TEST(every_value_of_a_dtype_is_its_own_rounding)
{
	/* All 65536 patterns of each: decode, round, encode back. */
	for (uint32_t b = 0; b < 0x10000u; b++) {
		float bf = tps_bf16_value((uint16_t)b);
		float h = tps_f16_value((uint16_t)b);
		if (!isnan(bf)) {
			ck_assert_msg(tps_bf16_bits(bf) == b, "bf16 %04x", b);
			ck_assert(tps_dtype_round(bf, TPS_DTYPE_BF16) == bf);
		}
		if (!isnan(h)) {
			ck_assert_msg(tps_f16_bits(h) == b, "f16 %04x", b);
			ck_assert(tps_dtype_round(h, TPS_DTYPE_F16) == h);
		}
	}
	ck_assert(tps_dtype_unit_roundoff(TPS_DTYPE_F32) == 0x1p-24);
	ck_assert(tps_dtype_unit_roundoff(TPS_DTYPE_BF16) == 0x1p-8);
	ck_assert(tps_dtype_unit_roundoff(TPS_DTYPE_F16) == 0x1p-11);
}
END_TEST

START_TEST(dtype_values_print_as_their_shortest_decimal)
{
	static const struct {
		uint16_t bits;
		enum tps_dtype d;
		const char *want;
	} cases[] = {
		/* 0.10009765625: "0.1" reads back as 1.6 2^-4, mantissa
		 * 0.6 x 128 = 76.8 -> 77, this value. */
		{0x3dcdu, TPS_DTYPE_BF16, "0.1"},
		/* 3.140625: "3.1" is 1.55 x 2, 70.4 -> 70, 3.09375; "3.14"
		 * is 1.57 x 2, 72.96 -> 73, this value. */
		{0x4049u, TPS_DTYPE_BF16, "3.14"},
		/* 33024 = 1.0078125 2^15, spacing 256: 33000 is 24 away, the
		 * neighbours 232 and 256: two digits do, "33000". */
		{0x4701u, TPS_DTYPE_BF16, "33000"},
		{0x3f80u, TPS_DTYPE_BF16, "1"},
		{0xc000u, TPS_DTYPE_BF16, "-2"},
		{0x0001u, TPS_DTYPE_BF16, "9e-41"},
		{0x2e66u, TPS_DTYPE_F16, "0.1"},
		{0x7bffu, TPS_DTYPE_F16, "65500"},
		{0x0001u, TPS_DTYPE_F16, "6e-8"},
		{0x3c01u, TPS_DTYPE_F16, "1.001"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char buf[TPS_NUMFMT_MAX];
		float v = cases[i].d == TPS_DTYPE_BF16
				  ? tps_bf16_value(cases[i].bits)
				  : tps_f16_value(cases[i].bits);
		tps_format_dtype(v, cases[i].d, buf);
		ck_assert_msg(strcmp(buf, cases[i].want) == 0,
			      "%s %04x (%a): \"%s\", want \"%s\"",
			      tps_dtype_names[cases[i].d], cases[i].bits, v,
			      buf, cases[i].want);
	}
}
END_TEST

/* The significant digits of a decimal: "1.001" 4, "33000" 2, "0.1" 1. */
static int significant_digits(const char *text)
{
	char d[TPS_NUMFMT_MAX];
	int n = 0, first = 0;
	for (const char *c = text; *c && *c != 'e'; c++) {
		if (*c >= '0' && *c <= '9') {
			d[n++] = *c;
		}
	}
	while (first < n && d[first] == '0') {
		first++;
	}
	while (n > first && d[n - 1] == '0') {
		n--;
	}
	return n - first;
}

START_TEST(every_dtype_decimal_reads_back_and_is_shortest)
{
	/* Every finite pattern of both: the decimal reads back (strtod,
	 * then one rounding) to the same value, and one digit fewer does
	 * not. */
	for (int d = TPS_DTYPE_BF16; d <= TPS_DTYPE_F16; d++) {
		for (uint32_t b = 0; b < 0x10000u; b++) {
			char buf[TPS_NUMFMT_MAX], sci[TPS_NUMFMT_MAX];
			float v = d == TPS_DTYPE_BF16
					  ? tps_bf16_value((uint16_t)b)
					  : tps_f16_value((uint16_t)b);
			int digits = 0;
			if (!isfinite(v) || v == 0.0f) {
				continue;
			}
			tps_format_dtype(v, (enum tps_dtype)d, buf);
			ck_assert_msg(tps_dtype_round_double(
					      strtod(buf, NULL),
					      (enum tps_dtype)d) == v,
				      "%04x: %s", b, buf);
			digits = significant_digits(buf);
			if (digits > 1) {
				snprintf(sci, sizeof sci, "%.*e", digits - 2,
					 (double)v);
				ck_assert_msg(tps_dtype_round_double(
						      strtod(sci, NULL),
						      (enum tps_dtype)d) != v,
					      "%04x: %s, but %s reads back too",
					      b, buf, sci);
			}
		}
	}
}
END_TEST

static Suite *dtype_suite(void)
{
	Suite *s = suite_create("dtype");
	TCase *tc = tcase_create("rounding");
	tcase_add_test(tc, bf16_rounds_to_nearest_even_by_hand);
	tcase_add_test(tc, f16_rounds_to_nearest_even_by_hand);
	tcase_add_test(tc, every_value_of_a_dtype_is_its_own_rounding);
	suite_add_tcase(s, tc);
	tc = tcase_create("decimals");
	tcase_add_test(tc, dtype_values_print_as_their_shortest_decimal);
	tcase_add_test(tc, every_dtype_decimal_reads_back_and_is_shortest);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(dtype_suite());
}
