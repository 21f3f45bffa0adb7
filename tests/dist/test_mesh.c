/* mesh: row-major layout, groups per dim and flattened, local ranks. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "mesh.h"

static struct tps_mesh make(int ndim, const int *shape, const char **names)
{
	struct tps_mesh m;
	ck_assert_int_eq(tps_mesh_init(&m, ndim, shape, names, NULL), TPS_OK);
	return m;
}

static void assert_group(const struct tps_mesh *m, unsigned mask, int g,
			 const int *want, int n)
{
	int got[TPS_MAX_WORLD];
	ck_assert_int_eq(tps_mesh_group_size(m, mask), n);
	tps_mesh_group_members(m, mask, g, got);
	for (int i = 0; i < n; i++) {
		ck_assert_msg(got[i] == want[i], "group %d member %d: %d != %d",
			      g, i, got[i], want[i]);
	}
}

START_TEST(mesh_3x2_is_row_major)
{
	/* [[0,1],[2,3],[4,5]]: rank = r * 2 + c. */
	const int shape[2] = {3, 2};
	const char *names[2] = {"row", "col"};
	struct tps_mesh m = make(2, shape, names);
	int coord[2];
	ck_assert_int_eq(m.world_size, 6);
	tps_mesh_coord_of(&m, 5, coord);
	ck_assert_int_eq(coord[0], 2);
	ck_assert_int_eq(coord[1], 1);
	coord[0] = 1;
	coord[1] = 0;
	ck_assert_int_eq(tps_mesh_rank_of(&m, coord), 2);
}
END_TEST

START_TEST(mesh_groups_follow_pytorch_not_seed_004)
{
	/* docs/design.md: along row (dim 0, size 3) -> [0,2,4],[1,3,5]; along col
	 * (dim 1, size 2) -> [0,1],[2,3],[4,5]. Seed 004's first printout
	 * shows mesh['row'] = [0, 1] for rank 0: the dims swapped. */
	const int shape[2] = {3, 2};
	const char *names[2] = {"row", "col"};
	struct tps_mesh m = make(2, shape, names);
	const int row0[3] = {0, 2, 4}, row1[3] = {1, 3, 5};
	const int col0[2] = {0, 1}, col1[2] = {2, 3}, col2[2] = {4, 5};
	unsigned row = 1u << tps_mesh_dim_index(&m, "row");
	unsigned col = 1u << tps_mesh_dim_index(&m, "col");
	ck_assert_int_eq(tps_mesh_group_count(&m, row), 2);
	assert_group(&m, row, 0, row0, 3);
	assert_group(&m, row, 1, row1, 3);
	ck_assert_int_eq(tps_mesh_group_count(&m, col), 3);
	assert_group(&m, col, 0, col0, 2);
	assert_group(&m, col, 1, col1, 2);
	assert_group(&m, col, 2, col2, 2);
	/* Rank 3 is in row group 1 at local rank 1, col group 1 at 1. */
	ck_assert_int_eq(tps_mesh_group_index(&m, row, 3), 1);
	ck_assert_int_eq(tps_mesh_local_rank(&m, row, 3), 1);
	ck_assert_int_eq(tps_mesh_group_index(&m, col, 3), 1);
	ck_assert_int_eq(tps_mesh_local_rank(&m, col, 3), 1);
	ck_assert_int_eq(tps_mesh_local_rank(&m, row, 4), 2);
}
END_TEST

START_TEST(mesh_flattened_dims_give_design_groups)
{
	/* (2,2,2) mesh (dp,cp,tp): flattening (dp,cp) -> [0,2,4,6],[1,3,5,7].
	 */
	const int shape[3] = {2, 2, 2};
	const char *names[3] = {"dp", "cp", "tp"};
	struct tps_mesh m = make(3, shape, names);
	const int g0[4] = {0, 2, 4, 6}, g1[4] = {1, 3, 5, 7};
	const int tp0[2] = {0, 1}, tp3[2] = {6, 7};
	assert_group(&m, 0x3, 0, g0, 4);
	assert_group(&m, 0x3, 1, g1, 4);
	assert_group(&m, 0x4, 0, tp0, 2);
	assert_group(&m, 0x4, 3, tp3, 2);
	ck_assert_int_eq(tps_mesh_local_rank(&m, 0x3, 6), 3);
	/* The empty mask: every rank alone. */
	ck_assert_int_eq(tps_mesh_group_size(&m, 0), 1);
	ck_assert_int_eq(tps_mesh_group_count(&m, 0), 8);
}
END_TEST

START_TEST(mesh_every_rank_in_exactly_one_group_per_dim)
{
	const int shape[4] = {2, 3, 1, 4};
	const char *names[4] = {"a", "b", "c", "d"};
	struct tps_mesh m = make(4, shape, names);
	for (unsigned mask = 0; mask < 16; mask++) {
		int seen[24] = {0}, members[TPS_MAX_WORLD];
		int n = tps_mesh_group_size(&m, mask);
		for (int g = 0; g < tps_mesh_group_count(&m, mask); g++) {
			tps_mesh_group_members(&m, mask, g, members);
			for (int i = 0; i < n; i++) {
				seen[members[i]]++;
				ck_assert_int_eq(tps_mesh_group_index(
							 &m, mask, members[i]),
						 g);
				ck_assert_int_eq(tps_mesh_local_rank(
							 &m, mask, members[i]),
						 i);
			}
		}
		for (int r = 0; r < 24; r++) {
			ck_assert_int_eq(seen[r], 1);
		}
	}
}
END_TEST

START_TEST(mesh_bad_shapes_are_refused)
{
	const int zero[2] = {2, 0}, big[2] = {4096, 2}, ok[2] = {2, 2};
	const char *names[2] = {"x", "y"}, *same[2] = {"x", "x"};
	const char *empty[2] = {"x", ""};
	struct tps_mesh m;
	struct tps_error err = {0};
	ck_assert_int_eq(tps_mesh_init(&m, 2, zero, names, &err),
			 TPS_ERR_INPUT);
	ck_assert_int_eq(tps_mesh_init(&m, 2, big, names, &err), TPS_ERR_LIMIT);
	ck_assert_ptr_nonnull(strstr(err.message, "4096"));
	ck_assert_int_eq(tps_mesh_init(&m, 2, ok, same, &err), TPS_ERR_INPUT);
	ck_assert_ptr_nonnull(strstr(err.message, "\"x\""));
	ck_assert_int_eq(tps_mesh_init(&m, 2, ok, empty, &err), TPS_ERR_INPUT);
	ck_assert_int_eq(tps_mesh_init(&m, 5, ok, names, &err), TPS_ERR_LIMIT);
	ck_assert_int_eq(tps_mesh_init(&m, 2, ok, names, NULL), TPS_OK);
	ck_assert_int_eq(tps_mesh_dim_index(&m, "y"), 1);
	ck_assert_int_eq(tps_mesh_dim_index(&m, "z"), -1);
}
END_TEST

static Suite *mesh_suite(void)
{
	Suite *s = suite_create("mesh");
	TCase *layout = tcase_create("layout");
	TCase *groups = tcase_create("groups");
	TCase *bad = tcase_create("bad_input");
	tcase_add_test(layout, mesh_3x2_is_row_major);
	tcase_add_test(groups, mesh_groups_follow_pytorch_not_seed_004);
	tcase_add_test(groups, mesh_flattened_dims_give_design_groups);
	tcase_add_test(groups, mesh_every_rank_in_exactly_one_group_per_dim);
	tcase_add_test(bad, mesh_bad_shapes_are_refused);
	suite_add_tcase(s, layout);
	suite_add_tcase(s, groups);
	suite_add_tcase(s, bad);
	return s;
}

int main(void)
{
	return tu_run_suite(mesh_suite());
}
