/*
 * check_huge_alloc.c: common/huge_alloc.h's two ways.
 *
 *   large  HUGE_ALLOC_MIN bytes and more come aligned to 2 MiB, every byte
 *          writable, and free() takes them back (valgrind and ASan see it)
 *   small  below it, and zero bytes, a plain malloc: writable, freed alike
 *   mode   the kernel's transparent_hugepage/enabled texts: "always" and
 *          "madvise" offer 2 MiB pages, "never" and unknown texts do not
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/huge_alloc.h"

#include "tests/lib/suite_main.h"

START_TEST(test_large_aligned)
{
	static const size_t sizes[] = {HUGE_ALLOC_MIN, HUGE_ALLOC_MIN + 12345, 3 * HUGE_ALLOC_MIN};
	const size_t n = sizes[_i];
	unsigned char *p = huge_alloc(n);

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq((uintptr_t)p % (2u << 20), 0);
	memset(p, 0xA5, n);
	ck_assert_uint_eq(p[0], 0xA5);
	ck_assert_uint_eq(p[n - 1], 0xA5);
	free(p);
}
END_TEST

START_TEST(test_small_plain)
{
	unsigned char *zero = huge_alloc(0), *small = huge_alloc(HUGE_ALLOC_MIN - 1);

	ck_assert_ptr_nonnull(zero);
	ck_assert_ptr_nonnull(small);
	small[0] = 1;
	small[HUGE_ALLOC_MIN - 2] = 2;
	ck_assert_uint_eq(small[0] + small[HUGE_ALLOC_MIN - 2], 3);
	free(zero);
	free(small);
}
END_TEST

START_TEST(test_mode)
{
	ck_assert_int_eq(huge_pages_mode("[always] madvise never\n"), 1);
	ck_assert_int_eq(huge_pages_mode("always [madvise] never\n"), 1);
	ck_assert_int_eq(huge_pages_mode("always madvise [never]\n"), 0);
	ck_assert_int_eq(huge_pages_mode(""), 0);
	ck_assert_int_eq(huge_pages_mode("madvise"), 0); /* nothing selected */
}
END_TEST

static Suite *huge_alloc_suite(void)
{
	Suite *s = suite_create("huge_alloc");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_large_aligned, 0, 3);
	tcase_add_test(tc, test_small_plain);
	tcase_add_test(tc, test_mode);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, huge_alloc_suite, NULL);
}
