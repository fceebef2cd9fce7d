/*
 * prng.h: the portable pseudo-random generator behind seeded weights.
 *
 * SplitMix64 (Steele, Lea, Flood 2014; the reference code is public domain):
 *   state += 0x9E3779B97F4A7C15
 *   z = state; z = (z ^ z >> 30) * 0xBF58476D1CE4E5B9;
 *   z = (z ^ z >> 27) * 0x94D049BB133111EB; return z ^ z >> 31
 * A uniform double in [0, 1) is (next >> 11) * 2^-53; a normal draw is
 * Box-Muller on two uniforms, taking the cosine branch only (one normal per two
 * uniforms), so sequences never depend on cached state. Integer arithmetic and
 * correctly rounded IEEE operations only, except the log / sqrt / cos of
 * Box-Muller, so uniform weights are bit-identical on every machine.
 *
 * The generator is a plain value owned by its caller; no globals.
 */
#ifndef ATTN_PRNG_H
#define ATTN_PRNG_H

#include <stdint.h>

struct attn_prng {
	uint64_t state;
};

static inline void attn_prng_seed(struct attn_prng *g, uint64_t seed)
{
	g->state = seed;
}

static inline uint64_t attn_prng_next(struct attn_prng *g)
{
	uint64_t z;

	g->state += UINT64_C(0x9E3779B97F4A7C15);
	z = g->state;
	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* Uniform in [0, 1) with 53 random bits. */
static inline double attn_prng_uniform(struct attn_prng *g)
{
	return (double)(attn_prng_next(g) >> 11) * 0x1.0p-53;
}

/* Uniform in [-bound, bound), rounded once to float. */
static inline float attn_prng_symmetric(struct attn_prng *g, double bound)
{
	return (float)((2.0 * attn_prng_uniform(g) - 1.0) * bound);
}

/* Standard normal (Box-Muller, cosine branch). */
double attn_prng_normal(struct attn_prng *g);

#endif
