/*
 * fmt_kernels.h: what fmt.c shares with its AVX2 kernels (fmt_avx2.c), for
 * fmt_floats_shortest's blocks. Not part of fmt.h's interface.
 *
 * A block's numbers go through three passes over arrays on the stack: the
 * decimals (the shortest decimal of each float as y, e and neg below), the
 * digits (y -> h, w), the layout (fmt.c, scalar). The kernels do four numbers
 * a vector where the CPU has AVX2 (fmt.c checks at run time) and return the
 * numbers they did; fmt.c does the rest one at a time, and is their twin.
 *
 * A number's decimal, for the digits: y = f9 FRAC_E8, where f9 is its nine
 * significant digits (f9 in [10^8, 10^9), trailing zeros allowed) and
 * FRAC_E8 = ceil(2^57 / 10^8), so that y / 2^57 is f9 / 10^8 in fixed
 * point; y = 0 for zero. e is the exponent of its first digit, neg its sign
 * bit. The digits: h = the first digit, w = the other eight as characters in
 * memory order (a word stored whole).
 *
 * Ownership: the kernels read and write caller buffers only; nothing is
 * allocated or kept. fmt_scales and fmt_scales_g are static, read-only.
 */
#ifndef COMMON_FMT_KERNELS_H
#define COMMON_FMT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#define FRAC57 ((UINT64_C(1) << 57) - 1)
#define FRAC_E8 UINT64_C(1441151881)	    /* ceil(2^57 / 10^8) */
#define ZEROS8 UINT64_C(0x3030303030303030) /* "00000000" */

/* Schubfach's scale per biased exponent (fmt.c says how it is built):
 * k = floor(log10(2^q)), the shift h, and g (fmt_scales_g). */
struct fmt_scale {
	int8_t k, h;
};
extern const struct fmt_scale fmt_scales[256];
extern const uint64_t fmt_scales_g[256];

/* fmt_floats_shortest with the vector kernels (simd != 0, only where
 * fmt_simd_available) or without: for tests, which compare the two. */
size_t fmt_floats_shortest_with(char *out, const float *x, size_t n, size_t *done, int simd);
/* 1 when the CPU has AVX2 (and the kernels are built), else 0. */
int fmt_simd_available(void);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FMT_HAVE_AVX2 1
/*
 * The decimals of x[0 .. 4 j) for the largest j with 4 j <= n such that
 * each number in them is zero or normal with a significand other than 2^23
 * (no NaN, infinity, subnormal, or lopsided rounding interval): y[i], e[i],
 * neg[i] as above. Returns 4 j.
 */
size_t fmt_decimals_avx2(const float *x, size_t n, uint64_t *y, int64_t *e, uint64_t *neg);
/* The digits of y[0 .. n) (y[i] != 0 or not, any): h[i], w[i]; returns the
 * numbers done, n rounded down to a multiple of 4. */
size_t fmt_digits_avx2(const uint64_t *y, uint64_t *h, uint64_t *w, size_t n);
#endif

#endif
