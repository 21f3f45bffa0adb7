/* numfmt: shortest round-trip float32 decimals, locale-free. */
#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "tpsim/numfmt.h"
#include "tpsim/rng.h"

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
		{0.1f, "0.1"},
		{30.0f, "30"},
		{1.0f, "1"},
		{-2.5f, "-2.5"},
		{0.0f, "0"},
		{-0.0f, "-0"},
		{1e-45f, "1e-45"},
		{3.4028235e38f, "3.4028235e38"},
		{16777216.0f, "16777216"},
		{123456789.0f, "123456790"},
		{1e9f, "1e9"},
		{1e-5f, "0.00001"},
		{1e-6f, "1e-6"},
		{1.0f / 3.0f, "0.33333334"},
		{70.0f, "70"},
	};
	char buf[TPS_NUMFMT_MAX];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tps_format_float(cases[i].v, buf);
		ck_assert_str_eq(buf, cases[i].want);
	}
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

static Suite *numfmt_suite(void)
{
	Suite *s = suite_create("numfmt");
	TCase *tc = tcase_create("shortest");
	tcase_add_test(tc, known_values_print_shortest);
	tcase_add_test(tc, random_floats_round_trip_in_at_most_9_digits);
	tcase_add_test(tc, doubles_round_trip);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(numfmt_suite());
}
