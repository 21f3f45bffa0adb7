/*
 * run: the comparison of a run with its reference. The whole of `tpsim run`
 * (config -> trace file) is exercised through the CLI in test_cli.c and
 * test_trace.c.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>

#include "testutil.h"
#include "tpsim/run.h"

static struct tps_tensor vec(int64_t n, const float *v)
{
	struct tps_tensor t;
	struct tps_shape s = tps_shape_make(1, &n);
	ck_assert_int_eq(tps_tensor_init(&t, &s, NULL), TPS_OK);
	for (int64_t i = 0; i < n; i++) {
		t.data[i] = v[i];
	}
	return t;
}

START_TEST(compare_of_unequal_shapes_is_inf_and_no_match)
{
	/* run.h promises +inf and match false, not an assert. */
	const float a[3] = {1, 2, 3};
	struct tps_tensor x = vec(3, a), y = vec(2, a);
	float diff = 0;
	bool match = true;
	tps_run_compare(&x, &y, 1e-5, 1e-5, &diff, &match);
	ck_assert(isinf(diff) && diff > 0);
	ck_assert(!match);
	tps_tensor_free(&x);
	tps_tensor_free(&y);
}
END_TEST

START_TEST(compare_tolerance_is_relative_to_the_largest_reference_value)
{
	/* max |a - b| = 0.002; max |b| = 100: rtol 1e-5 allows 0.001,
	 * rtol 3e-5 allows 0.003. */
	const float a[3] = {1.002f, -100.0f, 5.0f};
	const float b[3] = {1.0f, -100.0f, 5.0f};
	struct tps_tensor x = vec(3, a), y = vec(3, b);
	float diff;
	bool match;
	tps_run_compare(&x, &y, 0.0, 1e-5, &diff, &match);
	printf("max_abs_diff %g\n", (double)diff);
	ck_assert(fabsf(diff - 0.002f) < 1e-6f);
	ck_assert(!match);
	tps_run_compare(&x, &y, 0.0, 3e-5, &diff, &match);
	ck_assert(match);
	tps_run_compare(&x, &y, 0.0025, 0.0, &diff, &match);
	ck_assert(match);
	tps_tensor_free(&x);
	tps_tensor_free(&y);
}
END_TEST

static Suite *run_suite(void)
{
	Suite *s = suite_create("run");
	TCase *cmp = tcase_create("compare");
	tcase_add_test(cmp, compare_of_unequal_shapes_is_inf_and_no_match);
	tcase_add_test(
		cmp,
		compare_tolerance_is_relative_to_the_largest_reference_value);
	suite_add_tcase(s, cmp);
	return s;
}

int main(void)
{
	return tu_run_suite(run_suite());
}
