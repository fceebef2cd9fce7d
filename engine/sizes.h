/*
 * sizes.h: overflow-checked size arithmetic.
 *
 * Each helper stores the result in *out and returns 0, or returns -1 and leaves
 * *out untouched when the exact result does not fit. Pure functions, no state:
 * out is the caller's, written only on success; nothing is allocated.
 */
#ifndef ATTN_SIZES_H
#define ATTN_SIZES_H

#include <limits.h>
#include <stddef.h>

static inline int size_mul(size_t *out, size_t a, size_t b)
{
	size_t r;

	if (__builtin_mul_overflow(a, b, &r))
		return -1;
	*out = r;
	return 0;
}

static inline int size_add(size_t *out, size_t a, size_t b)
{
	size_t r;

	if (__builtin_add_overflow(a, b, &r))
		return -1;
	*out = r;
	return 0;
}

/* *out = a * b * c, checked. */
static inline int size_mul3(size_t *out, size_t a, size_t b, size_t c)
{
	size_t ab;

	if (size_mul(&ab, a, b) != 0)
		return -1;
	return size_mul(out, ab, c);
}

/* *out = a * b * c * d, checked. */
static inline int size_mul4(size_t *out, size_t a, size_t b, size_t c, size_t d)
{
	size_t abc;

	if (size_mul3(&abc, a, b, c) != 0)
		return -1;
	return size_mul(out, abc, d);
}

/* True when n can be passed to BLAS as an int dimension or leading dimension. */
static inline int size_fits_int(size_t n)
{
	return n <= (size_t)INT_MAX;
}

#endif
