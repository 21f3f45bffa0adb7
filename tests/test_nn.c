/*
 * nn: the modules under their styles, one event per step.
 *
 * These tests drive nn directly (no config, no model): they check which
 * events each style emits, in which layout each output lands, and that
 * errors keep their status.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "tpsim/nn.h"

static struct tps_mesh tp_mesh(int n)
{
	struct tps_mesh m;
	const char *names[1] = {"tp"};
	ck_assert_int_eq(tps_mesh_init(&m, 1, &n, names, NULL), TPS_OK);
	return m;
}

/* A (rows, cols) tensor of 1, 2, 3, ... */
static struct tps_tensor arange(int64_t rows, int64_t cols)
{
	struct tps_tensor t;
	int64_t dims[2] = {rows, cols};
	struct tps_shape s = tps_shape_make(2, dims);
	ck_assert_int_eq(tps_tensor_init(&t, &s, NULL), TPS_OK);
	for (int64_t i = 0; i < rows * cols; i++) {
		t.data[i] = (float)(i + 1);
	}
	return t;
}

START_TEST(redistribute_keeps_its_status_without_err)
{
	/* replicate -> partial is not a redistribution tpsim does: the status
	 * is TPS_ERR_UNSUPPORTED with or without an error to fill. */
	struct tps_mesh m = tp_mesh(2);
	struct tps_tensor g = arange(2, 4);
	struct tps_placement rep = tps_placement_replicate();
	struct tps_placement part = tps_placement_partial();
	struct tps_dtensor x;
	struct tps_nn_context ctx = {&m, 0, {NULL, NULL}, 0, TPS_PHASE_FORWARD};
	struct tps_error err = {0};

	ck_assert_int_eq(tps_dtensor_distribute(&x, &m, &g, &rep, NULL),
			 TPS_OK);
	ck_assert_int_eq(
		tps_nn_redistribute(&ctx, &x, &part, "fc", "fc.in", NULL, NULL),
		TPS_ERR_UNSUPPORTED);
	ck_assert_int_eq(
		tps_nn_redistribute(&ctx, &x, &part, "fc", "fc.in", NULL, &err),
		TPS_ERR_UNSUPPORTED);
	ck_assert_str_eq(err.message,
			 "fc: fc.in: redistribute replicate -> partial on "
			 "mesh dim \"tp\" is not supported");
	tps_dtensor_free(&x);
	tps_tensor_free(&g);
}
END_TEST

static Suite *nn_suite(void)
{
	Suite *s = suite_create("nn");
	TCase *layout = tcase_create("layout");
	tcase_add_test(layout, redistribute_keeps_its_status_without_err);
	suite_add_tcase(s, layout);
	return s;
}

int main(void)
{
	return tu_run_suite(nn_suite());
}
