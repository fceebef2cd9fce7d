/*
 * decfloat.h: decimal to binary64, correctly rounded, without strtod.
 *
 * decfloat_to_double gives the double nearest m 10^e10 (ties to even), the
 * value glibc's strtod returns for the same decimal, by Clinger's fast path
 * when both operands are exact doubles and otherwise by the Eisel-Lemire
 * algorithm (Lemire, "Number parsing at a gigabyte per second", 2021, as in
 * fast_float). When the caller dropped digits after m's 19th (`truncated`:
 * the true significand lies in (m, m + 1)), the answer is taken only if m and
 * m + 1 round to the same double. It returns -1, not deciding, in the rare
 * cases the algorithm cannot settle (a 128-bit product too close to a
 * rounding boundary, or a truncated value between two doubles' halfway
 * point); the caller then asks strtod. Overflow gives +inf, underflow +0,
 * like strtod (errno is never touched).
 *
 * decfloat_lex reads the JSON number grammar from text (see below).
 * Pure functions: no allocation, no locale, no global state.
 */
#ifndef COMMON_DECFLOAT_H
#define COMMON_DECFLOAT_H

#include <stddef.h>
#include <stdint.h>

/* m 10^e10 (m >= 0) rounded to a double into *out: 0, or -1 (undecided,
 * *out unchanged). Clinger's case inline (the common one: few digits, a
 * small exponent), the rest in decfloat.c. */
static inline int decfloat_to_double(uint64_t m, long e10, int truncated, double *out);

/* 10^k, k = 0 .. 22: exact doubles (10^22 = 5^22 2^22, 5^22 < 2^53). */
extern const double DECFLOAT_POW10[23];

/* decfloat_to_double past Clinger's case: Eisel-Lemire. */
int decfloat_to_double_el(uint64_t m, long e10, int truncated, double *out);

static inline int decfloat_to_double(uint64_t m, long e10, int truncated, double *out)
{
	/* one correctly rounded operation on exact operands: m <= 2^53 and
	 * |e10| <= 22 (Clinger, "How to read floating point numbers
	 * accurately", PLDI 1990, the fast path) */
	if (!truncated && m <= (UINT64_C(1) << 53) && e10 >= -22 && e10 <= 22) {
		double v = (double)m;

		*out = e10 < 0 ? v / DECFLOAT_POW10[-e10] : v * DECFLOAT_POW10[e10];
		return 0;
	}
	return decfloat_to_double_el(m, e10, truncated, out);
}

/*
 * A JSON number token -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? as
 * +-m 10^e10, m its first 19 significant digits.
 *   truncated  a nonzero digit was dropped after m's 19th; m 10^e10 is then
 *              below the value, (m + 1) 10^e10 above it
 *   digits     digits written in the significand (integer part and
 *              fraction, leading and trailing zeros included)
 *   is_real    written with a fraction or an exponent
 * An exponent part past 100000 stops growing (below 10^6; it decides nothing
 * then: the value is 0 or infinite).
 */
struct decfloat_number {
	uint64_t m;
	long e10;
	size_t digits;
	int truncated, neg, is_real;
};

/* Reads the number at s[0 .. n) into x; returns its length, or 0 when no
 * JSON number starts there (the token may be followed by anything). */
size_t decfloat_lex(const char *s, size_t n, struct decfloat_number *x);

#endif
