/*
 * decfloat.c: decimal to binary64 without strtod (see decfloat.h).
 *
 * Eisel-Lemire, after Daniel Lemire, "Number parsing at a gigabyte per
 * second", Software: Practice and Experience 51(8), 2021, and its reference
 * code fast_float (decimal_to_binary.h), written here for binary64 only.
 * For w 10^q (w < 2^64): normalise w so its top bit is set, multiply by the
 * 128-bit T(q) ~ 5^q 2^-k of pow5_table.c, keep the top 64 bits of the
 * product (one more 64x64 multiplication when the bits below the 55 kept
 * ones are all ones and a carry could reach them), and round those to 53
 * bits; the power of two comes from q's floor(log2(10^q)) and the shifts.
 * The only case left open, an exact-looking product (low word all ones), is
 * returned as undecided rather than argued (fast_float since 2023 proves it
 * cannot mislead; we keep the older, cheaper-to-trust check).
 */
#include "decfloat.h"

#include <math.h>
#include <string.h>

#include "pow5_table.h"

__extension__ typedef unsigned __int128 u128;

#define MANT_BITS 52 /* binary64's explicit significand bits */
#define EXP_BIAS 1023
#define EXP_INF 0x7ff

const double DECFLOAT_POW10[23] = {1e0,	 1e1,  1e2,  1e3,  1e4,	 1e5,  1e6,  1e7,
				   1e8,	 1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
				   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
const double DECFLOAT_POW10_NEG[23] = {1e-0,  1e-1,  1e-2,  1e-3,  1e-4,  1e-5,	 1e-6,	1e-7,
				       1e-8,  1e-9,  1e-10, 1e-11, 1e-12, 1e-13, 1e-14, 1e-15,
				       1e-16, 1e-17, 1e-18, 1e-19, 1e-20, 1e-21, 1e-22};

const double DECFLOAT_POW10_NEG_SIGNED[2][19] = {
    {1e-0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12, 1e-13, 1e-14,
     1e-15, 1e-16, 1e-17, 1e-18},
    {-1e-0, -1e-1, -1e-2, -1e-3, -1e-4, -1e-5, -1e-6, -1e-7, -1e-8, -1e-9, -1e-10, -1e-11, -1e-12,
     -1e-13, -1e-14, -1e-15, -1e-16, -1e-17, -1e-18}};

#ifdef DECFLOAT_SSE2
const uint8_t DECFLOAT_KEEP[32] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				   0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
#endif

const uint64_t DECFLOAT_POW10_U64[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};

static double from_bits(uint64_t u)
{
	double d;

	memcpy(&d, &u, sizeof d);
	return d;
}

/*
 * w 10^q rounded to the nearest double (ties to even) into *out: 0, or -1
 * when the 128-bit product cannot decide. The passes follow fast_float's
 * compute_float (binary_format<double>).
 */
static int eisel_lemire(uint64_t w, long q, double *out)
{
	if (w == 0 || q < POW5_Q_MIN) { /* w < 2^64, 10^-343 2^64 < min subnormal / 2 */
		*out = 0.0;
		return 0;
	}
	if (q > POW5_Q_MAX) {
		*out = INFINITY;
		return 0;
	}

	/* pass 1: w normalised, times T(q); enough bits are the top 55 */
	int lz = __builtin_clzll(w);
	const uint64_t *t = POW5_128[q - POW5_Q_MIN];
	u128 first = (u128)(w << lz) * t[0];
	uint64_t hi = (uint64_t)(first >> 64), lo = (uint64_t)first;

	if ((hi & 0x1ff) == 0x1ff) { /* the bits below the 55 might take a carry */
		uint64_t second_hi = (uint64_t)(((u128)(w << lz) * t[1]) >> 64);

		lo += second_hi;
		hi += second_hi > lo;
	}
	if (lo == UINT64_MAX)
		return -1;

	/* pass 2: 54 bits (53 and a rounding bit) and the biased exponent;
	 * floor(log2(10^q)) = (217706 q >> 16) exactly for |q| <= 342 */
	int upper = (int)(hi >> 63);
	int shift = upper + 64 - MANT_BITS - 3;
	uint64_t mant = hi >> shift;
	int power2 = (int)((217706 * q) >> 16) + 63 + upper - lz + EXP_BIAS;

	if (power2 <= 0) { /* pass 3a: a subnormal (or zero), rounded once */
		if (-power2 + 1 >= 64) {
			*out = 0.0;
			return 0;
		}
		mant >>= -power2 + 1;
		mant += mant & 1;
		mant >>= 1;
		power2 = mant < (UINT64_C(1) << MANT_BITS) ? 0 : 1;
		*out = from_bits(mant | (uint64_t)power2 << MANT_BITS);
		return 0;
	}

	/* pass 3b: round to nearest; an exact tie (possible only for
	 * -4 <= q <= 23, where 5^|q| fits the product exactly) goes to even */
	if (lo <= 1 && q >= -4 && q <= 23 && (mant & 3) == 1 && (mant << shift) == hi)
		mant &= ~UINT64_C(1);
	mant += mant & 1;
	mant >>= 1;
	if (mant >= UINT64_C(2) << MANT_BITS) { /* rounded up to the next binade */
		mant = UINT64_C(1) << MANT_BITS;
		power2++;
	}
	mant &= ~(UINT64_C(1) << MANT_BITS);
	if (power2 >= EXP_INF) {
		*out = INFINITY;
		return 0;
	}
	*out = from_bits(mant | (uint64_t)power2 << MANT_BITS);
	return 0;
}

int decfloat_to_double_el(uint64_t m, long e10, int truncated, double *out)
{
	double lo, hi;

	if (!truncated)
		return eisel_lemire(m, e10, out);
	/* the value lies strictly between m 10^e10 and (m + 1) 10^e10 (m < 10^19,
	 * so m + 1 does not wrap): if both round alike, so does it */
	if (eisel_lemire(m, e10, &lo) != 0 || eisel_lemire(m + 1, e10, &hi) != 0 ||
	    memcmp(&lo, &hi, sizeof lo) != 0)
		return -1;
	*out = lo;
	return 0;
}

/* ---- lexing -------------------------------------------------------------- */

static int is_digit(char c)
{
	return (unsigned char)(c - '0') < 10;
}

/*
 * Reads the run of digits at *p into *m (m = m 10^k + the run, wrapping past
 * 19 digits: the caller then reads them again) and moves *p past it; returns
 * its length. While 8 bytes remain, their leading digits are counted at
 * once and read at once, 8 of them or fewer.
 */
static inline __attribute__((always_inline)) size_t digit_run(const char **p, const char *end,
							      uint64_t *m)
{
	const char *q = *p;
	uint64_t acc = *m;

	while (end - q >= 8) {
		uint64_t v = decfloat_load8(q);
		int k = decfloat_leading8(v);

		if (k == 8) {
			acc = acc * 100000000 + decfloat_parse8(v);
			q += 8;
			continue;
		}
		acc = acc * DECFLOAT_POW10_U64[k] + decfloat_parse_leading(v, k);
		q += k;
		goto done;
	}
	for (; q < end && is_digit(*q); q++) /* the buffer's last bytes */
		acc = acc * 10 + (uint64_t)(*q - '0');
done:;
	size_t n = (size_t)(q - *p);

	*m = acc;
	*p = q;
	return n;
}

/*
 * The significand of more than 19 digits at s[0 .. end) (digits and at most
 * one '.'): its first 19 significant digits into x, *e the power of ten
 * they are scaled by (before the exponent part).
 */
static void significand_long(const char *s, const char *end, struct decfloat_number *x, long *e)
{
	uint64_t m = 0;
	int sig = 0, frac = 0;

	*e = 0;
	for (; s < end; s++) {
		if (*s == '.') {
			frac = 1;
			continue;
		}
		if (sig == 19) { /* dropped: scales m when before the point */
			*e += !frac;
			x->truncated |= *s != '0';
			continue;
		}
		*e -= frac;
		if (m == 0 && *s == '0')
			continue; /* a leading zero */
		m = m * 10 + (uint64_t)(*s - '0');
		sig++;
	}
	x->m = m;
}

size_t decfloat_lex_general(const char *s, size_t n, struct decfloat_number *x)
{
	const char *p = s, *end = s + n, *digits, *frac;
	uint64_t m = 0;
	long e10 = 0;
	size_t nd;

	if (n == 0)
		return 0;
	x->neg = *p == '-'; /* no branch: the sign of a random number is random */
	p += x->neg;
	x->is_real = 0;
	x->truncated = 0;

	/* pass 1: the integer part, no leading zero; mostly a digit or two,
	 * cheaper one by one */
	digits = p;
	for (; p < end && is_digit(*p); p++)
		m = m * 10 + (uint64_t)(*p - '0');
	nd = (size_t)(p - digits);
	if (nd == 0 || (nd > 1 && *digits == '0'))
		return 0;

	/* pass 2: the fraction */
	if (p < end && *p == '.') {
		x->is_real = 1;
		frac = ++p;
		if (digit_run(&p, end, &m) == 0)
			return 0;
		e10 = -(long)(p - frac);
		nd += (size_t)(p - frac);
	}
	x->digits = nd;
	if (nd > 19)
		significand_long(digits, p, x, &e10);
	else
		x->m = m;

	/* pass 3: the exponent, held below 10^6 */
	if (p < end && (*p | 0x20) == 'e') {
		long e = 0;
		int eneg = 0;

		x->is_real = 1;
		if (++p < end && (*p == '+' || *p == '-'))
			eneg = *p++ == '-';
		if (p >= end || !is_digit(*p))
			return 0;
		for (; p < end && is_digit(*p); p++)
			if (e < 100000)
				e = e * 10 + (*p - '0');
		e10 += eneg ? -e : e;
	}
	x->e10 = e10;
	return (size_t)(p - s);
}
