/* seeded.c - see seeded.h */
#include "seeded.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "expect.h"

float *test_randn(struct attn_prng *g, size_t n)
{
	float *x = malloc((n ? n : 1) * sizeof(float));

	ck_assert_ptr_nonnull(x);
	for (size_t i = 0; i < n; i++)
		x[i] = (float)attn_prng_normal(g);
	return x;
}

size_t test_pick(struct attn_prng *g, size_t lo, size_t hi)
{
	return lo + (size_t)(attn_prng_next(g) % (hi - lo + 1));
}

void test_assert_close(const float *got, const float *want, size_t n, const char *what,
		       int iter)
{
	for (size_t i = 0; i < n; i++) {
		double g = got[i], w = want[i];

		if (isinf(w) || isinf(g)) {
			EXPECT_MSG(g == w, "%s iter %d [%zu]: got %g want %g", what, iter, i, g, w);
			continue;
		}
		EXPECT_MSG(fabs(g - w) <= TEST_TOL_ABS + TEST_TOL_REL * fabs(w),
			   "%s iter %d [%zu]: got %.9g want %.9g", what, iter, i, g, w);
	}
}
