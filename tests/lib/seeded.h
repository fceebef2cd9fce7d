/*
 * seeded.h - seeded random data and the engine's tolerance, for the suites
 * that compare the engine's fast paths with their twins (check_engine,
 * check_kernels).
 *
 * test_randn returns a malloc'd buffer the caller frees; the asserts end the
 * test through Check. Nothing is kept between calls.
 */
#ifndef ATTN_TESTS_SEEDED_H
#define ATTN_TESTS_SEEDED_H

#include <stddef.h>

#include "engine/prng.h"

/* |fast - ref| <= TEST_TOL_ABS + TEST_TOL_REL |ref| (the tolerance) */
#define TEST_TOL_ABS 1e-5
#define TEST_TOL_REL 1e-4

/* n standard normal floats from g (a buffer of at least one float). */
float *test_randn(struct attn_prng *g, size_t n);

/* A size in [lo, hi] from g. */
size_t test_pick(struct attn_prng *g, size_t lo, size_t hi);

/* got [n] within the tolerance of want [n]; infinities must match exactly.
 * what and iter name the failing case. */
void test_assert_close(const float *got, const float *want, size_t n, const char *what,
		       int iter);

#endif
