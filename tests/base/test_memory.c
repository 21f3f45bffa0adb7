/*
 * memory: calloc and malloc with huge-page advice. The advice cannot be
 * seen from a test (the kernel may decline it); what can is that the
 * blocks behave as calloc's and malloc's: zeroed, writable, freeable.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "memory.h"

START_TEST(calloc_gives_zeroed_writable_blocks_of_every_size)
{
	/* Small heap blocks, heap blocks past a 2 MiB boundary, and blocks
	 * large enough to be their own mapping; twice, so that the second
	 * round reuses freed memory (which calloc must zero again). */
	static const size_t sizes[] = {1,	100,	 4096,	  65536,
				       1 << 20, 3 << 20, 40 << 20};
	for (int round = 0; round < 2; round++) {
		for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
			unsigned char *p = tps_memory_calloc(sizes[i], 1);
			ck_assert_ptr_nonnull(p);
			for (size_t b = 0; b < sizes[i]; b += 511) {
				ck_assert_msg(p[b] == 0, "size %zu byte %zu",
					      sizes[i], b);
			}
			memset(p, 0xab, sizes[i]);
			free(p);
		}
	}
}
END_TEST

START_TEST(malloc_gives_writable_blocks)
{
	char *p = tps_memory_malloc(5 << 20);
	ck_assert_ptr_nonnull(p);
	memset(p, 1, 5 << 20);
	ck_assert_int_eq(p[(5 << 20) - 1], 1);
	free(p);
}
END_TEST

static Suite *memory_suite(void)
{
	Suite *s = suite_create("memory");
	TCase *tc = tcase_create("blocks");
	tcase_add_test(tc, calloc_gives_zeroed_writable_blocks_of_every_size);
	tcase_add_test(tc, malloc_gives_writable_blocks);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(memory_suite());
}
