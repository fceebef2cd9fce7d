/*
 * check_calloc.c: the daemon's calloc (server/calloc.c), linked in: zeroed
 * blocks of every size, small ones from the thread cache (the block a free
 * of the same size just gave back, which glibc 2.36's own calloc never
 * takes), large ones from glibc's calloc, and an overflowing count x size
 * refused with ENOMEM, never a short block.
 *
 * Sanitizer builds link no calloc of ours (the Makefile: their runtimes
 * bring their own, and it defines OWN_CALLOC only where ours is linked in);
 * there the suite checks that theirs zeroes.
 */
#include <check.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/light.h"
#include "tests/lib/suite_main.h"

/* 0 unless every one of bytes bytes at p is zero */
static int all_zero(const unsigned char *p, size_t bytes)
{
	for (size_t i = 0; i < bytes; i++)
		if (p[i] != 0)
			return 0;
	return 1;
}

/* The allocator (and memset) called through volatile pointers, so that the
 * compiler cannot use what it knows of them to drop or fold the very calls
 * these tests are about: GCC 12 -O2 drops a memset before free as a dead
 * store (the block went back clean: a calloc that cleared size bytes, not
 * count x size, passed), and clang 14 -O2 drops a malloc, free and calloc
 * whose blocks only meet in a comparison, which it folds to false (the
 * thread cache test failed with CC=clang). */
static void *(*volatile fill)(void *, int, size_t) = memset;
static void *(*volatile malloc_p)(size_t) = malloc;
static void *(*volatile calloc_p)(size_t, size_t) = calloc;
static void (*volatile free_p)(void *) = free;

/* A block of bytes, written full and freed, then calloc'd again: zeroed
 * whichever block the allocator hands back. */
static void check_zeroed_after_dirty_free(size_t count, size_t size)
{
	size_t bytes = count * size;
	unsigned char *dirty = malloc_p(bytes);
	unsigned char *p;

	ck_assert_ptr_nonnull(dirty);
	fill(dirty, 0xab, bytes);
	free_p(dirty);
	p = calloc_p(count, size);
	ck_assert_ptr_nonnull(p);
	ck_assert_msg(all_zero(p, bytes), "calloc(%zu, %zu) is not zeroed", count, size);
	free_p(p);
}

START_TEST(test_small_blocks_zeroed)
{
	for (size_t bytes = 1; bytes <= 1100; bytes += 7)
		check_zeroed_after_dirty_free(1, bytes);
	check_zeroed_after_dirty_free(3, 24); /* count x size, not size alone */
	check_zeroed_after_dirty_free(128, 8);
}
END_TEST

START_TEST(test_large_blocks_zeroed)
{
	check_zeroed_after_dirty_free(1, 2048);
	check_zeroed_after_dirty_free(1, 64 * 1024);
	check_zeroed_after_dirty_free(1024, 1024); /* past the mmap threshold */
}
END_TEST

START_TEST(test_zero_bytes_freeable)
{
	void *p = calloc_p(0, 16), *q = calloc_p(16, 0);

	free_p(p);
	free_p(q);
}
END_TEST

#ifdef OWN_CALLOC
/* Sanitizers abort on an overflowing calloc, and valgrind's calloc, which
 * replaces every calloc (ours too), returns NULL but leaves errno: so these
 * tests are about ours alone, and return at once under valgrind. */
START_TEST(test_overflow_refused)
{
	volatile size_t half = SIZE_MAX / 2, three = 3; /* not folded at compile time */

	if (test_under_valgrind())
		return;
	errno = 0;
	ck_assert_ptr_null(calloc_p(half, three));
	ck_assert_int_eq(errno, ENOMEM);
	errno = 0;
	ck_assert_ptr_null(calloc_p(three, half));
	ck_assert_int_eq(errno, ENOMEM);
}
END_TEST

/* The point of server/calloc.c: a small calloc takes the block a free of
 * its size just put in the thread cache, as malloc would. */
START_TEST(test_small_calloc_from_thread_cache)
{
	if (test_under_valgrind())
		return;
	for (size_t bytes = 16; bytes <= 1024; bytes *= 2) {
		void *p = malloc_p(bytes), *q;
		uintptr_t freed = (uintptr_t)p; /* p itself is not to be used once freed */

		ck_assert_ptr_nonnull(p);
		free_p(p);
		q = calloc_p(1, bytes);
		ck_assert_msg((uintptr_t)q == freed, "calloc(1, %zu) did not reuse the block just freed", bytes);
		free_p(q);
	}
}
END_TEST
#endif

static Suite *calloc_suite(void)
{
	Suite *s = suite_create("calloc");
	TCase *tc = tcase_create("calloc");

	tcase_add_test(tc, test_small_blocks_zeroed);
	tcase_add_test(tc, test_large_blocks_zeroed);
	tcase_add_test(tc, test_zero_bytes_freeable);
#ifdef OWN_CALLOC
	tcase_add_test(tc, test_overflow_refused);
	tcase_add_test(tc, test_small_calloc_from_thread_cache);
#endif
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, calloc_suite, NULL);
}
