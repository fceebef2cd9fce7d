/* prng.c: the one non-inline draw of the portable generator (see prng.h). */
#include "prng.h"

#include <math.h>

double attn_prng_normal(struct attn_prng *g)
{
	/* u1 in (0, 1] so log(u1) is finite; u2 in [0, 1). */
	double u1 = 1.0 - attn_prng_uniform(g);
	double u2 = attn_prng_uniform(g);

	return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}
