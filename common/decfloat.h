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
 * decfloat_to_float gives (float) of that double, by a cheaper route where
 * it provably agrees (below).
 *
 * decfloat_lex reads the JSON number grammar from text (see below).
 * Pure functions: no allocation, no locale, no global state.
 */
#ifndef COMMON_DECFLOAT_H
#define COMMON_DECFLOAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* m 10^e10 (m >= 0) rounded to a double into *out: 0, or -1 (undecided,
 * *out unchanged). Clinger's case inline (the common one: few digits, a
 * small exponent), the rest in decfloat.c. */
static inline int decfloat_to_double(uint64_t m, long e10, int truncated, double *out);

/* 10^k, k = 0 .. 22: exact doubles (10^22 = 5^22 2^22, 5^22 < 2^53). */
extern const double DECFLOAT_POW10[23];
/* 10^-k, k = 0 .. 22, each the double nearest (1e-1 ... 1e-22 as written). */
extern const double DECFLOAT_POW10_NEG[23];

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
 * (float) of the double decfloat_to_double gives, into *out: 0, or -1
 * (undecided, *out unchanged). This is what the jansson path reads a real
 * as ((float) of strtod's double, double rounding included), not strtof's
 * correctly rounded float: the two differ when the double lands exactly on a
 * float32 midpoint the decimal is not on.
 *
 * The fast path, for m < 2^63 and |e10| <= 22 (every %.4f and 17-digit
 * number of a tensor in [-1, 1)): v = (double)m times 10^e10 (exact) or
 * 10^e10 rounded (a multiplication: a division's latency was the largest
 * cost of a number), three roundings at most, so |v - value| < 3.01 u |value|
 * with u = 2^-53: at most 4 steps of the double grid in value's binade (a
 * step there is at least u |value|), 7 where v falls into the binade below
 * (its steps are half as large), and one more to the correct double: v's
 * bits are within 8 of its (consecutive positive doubles have consecutive
 * bit patterns). (float) of a positive double is
 * decided by its low 29 bits against the midpoint pattern 1 << 28 (also at
 * the overflow bound 0x1.ffffffp127, itself a midpoint); when v's are more
 * than 16 from it, v and the correct double round to the same float. The
 * float is normal here (|value| >= 10^-22). Otherwise, and past the range,
 * Eisel-Lemire as decfloat_to_double.
 */
static inline int decfloat_to_float(uint64_t m, long e10, int truncated, float *out)
{
	double v;

	if (!truncated && m < (UINT64_C(1) << 63) && e10 >= -22 && e10 <= 22) {
		uint64_t bits, near;

		v = (double)(int64_t)m * (e10 < 0 ? DECFLOAT_POW10_NEG[-e10] : DECFLOAT_POW10[e10]);
		memcpy(&bits, &v, sizeof bits);
		near = (bits - (UINT64_C(1) << 28) + 16) & ((UINT64_C(1) << 29) - 1);
		if (near > 32) { /* low 29 bits more than 16 from the midpoint */
			*out = (float)v;
			return 0;
		}
	}
	if (decfloat_to_double(m, e10, truncated, &v) != 0)
		return -1;
	*out = (float)v;
	return 0;
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
