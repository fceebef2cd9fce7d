/*
 * expect.h - an assertion for hot loops.
 *
 * Check records every assertion that passes (ck_assert_msg writes to the
 * suite's log each time), which made Check itself most of the time of the
 * suites that compare millions of elements. EXPECT_MSG(cond, fmt, ...) calls
 * Check only when cond fails (ck_abort_msg with the message), so it fails
 * the test exactly as ck_assert_msg would. Use it where an assertion runs
 * per element; elsewhere ck_assert_* reads better.
 */
#ifndef ATTN_TESTS_EXPECT_H
#define ATTN_TESTS_EXPECT_H

#include <check.h>

#define EXPECT_MSG(cond, ...)                                                   \
	do {                                                                    \
		if (!(cond))                                                    \
			ck_abort_msg(__VA_ARGS__);                              \
	} while (0)

#endif
