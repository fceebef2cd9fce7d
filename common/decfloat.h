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
 * decfloat_lex reads the JSON number grammar from text (see below): its
 * common short path inline in this header, so a row of numbers makes no call
 * per number, the rest in decfloat.c.
 *
 * decfloat_read_short reads the common shape -?D.F (at most 23 fraction
 * digits, no exponent) straight to its float, lexing and decfloat_to_float's
 * fast path in one inline step (SSE2 on x86-64, SWAR words elsewhere); where
 * it declines, decfloat_lex and decfloat_to_float decide, so the float is
 * always theirs (tests/common/check_decfloat.c compares them).
 * Pure functions: no allocation, no locale, no global state.
 */
#ifndef COMMON_DECFLOAT_H
#define COMMON_DECFLOAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__) && defined(__x86_64__)
#include <emmintrin.h>
#define DECFLOAT_SSE2 1
#endif

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
/* Whether the double of bit pattern `bits` is within `guard` patterns of a
 * float32 midpoint (its low 29 bits 1 << 28): the band where (float) of it
 * may differ from (float) of a double that many patterns away. */
static inline __attribute__((always_inline)) int decfloat_near_midpoint(uint64_t bits,
									unsigned guard)
{
	return ((bits - (UINT64_C(1) << 28) + guard) & ((UINT64_C(1) << 29) - 1)) <= 2 * guard;
}

static inline int decfloat_to_float(uint64_t m, long e10, int truncated, float *out)
{
	double v;

	if (!truncated && m < (UINT64_C(1) << 63) && e10 >= -22 && e10 <= 22) {
		uint64_t bits;

		v = (double)(int64_t)m * (e10 < 0 ? DECFLOAT_POW10_NEG[-e10] : DECFLOAT_POW10[e10]);
		memcpy(&bits, &v, sizeof bits);
		if (!decfloat_near_midpoint(bits, 16)) {
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

/* decfloat_lex past the common shape below: the whole grammar, any length.
 * Out of line, so the short path pays none of its register saves. */
size_t decfloat_lex_general(const char *s, size_t n, struct decfloat_number *x);

/* ---- the short path, inline: a call per number and x through memory were
 * a tenth of a row's parse ---------------------------------------------------- */

/* The 8 bytes at p as a word whose first byte is the least significant. */
static inline uint64_t decfloat_load8(const char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

/*
 * The number of ASCII digits v starts with (0 .. 8; bytes in memory order,
 * first least significant): a byte is a digit when its high nibble is 3 and
 * stays 3 after adding 6. Borrows and carries only run towards later bytes,
 * so they can spoil the test only after the first non-digit.
 */
static inline __attribute__((always_inline)) int decfloat_leading8(uint64_t v)
{
	const uint64_t hi = UINT64_C(0xf0f0f0f0f0f0f0f0), threes = UINT64_C(0x3030303030303030);
	uint64_t bad = ((v & hi) ^ threes) | (((v + UINT64_C(0x0606060606060606)) & hi) ^ threes);

	return bad ? __builtin_ctzll(bad) / 8 : 8;
}

/* The value of 8 digits (first byte least significant in v), each byte a
 * digit's value 0 .. 9, in three multiplications: pairs, then quadruples,
 * then the whole. decfloat_parse8: the same of 8 ASCII digits. */
static inline __attribute__((always_inline)) uint32_t decfloat_parse8_values(uint64_t v)
{
	const uint64_t mask = UINT64_C(0x000000ff000000ff);
	const uint64_t mul1 = UINT64_C(100) + (UINT64_C(1000000) << 32);
	const uint64_t mul2 = UINT64_C(1) + (UINT64_C(10000) << 32);

	v = v * 10 + (v >> 8);
	return (uint32_t)((((v & mask) * mul1) + (((v >> 16) & mask) * mul2)) >> 32);
}

static inline __attribute__((always_inline)) uint32_t decfloat_parse8(uint64_t v)
{
	return decfloat_parse8_values(v - UINT64_C(0x3030303030303030));
}

/* 10^k, k = 0 .. 7 */
extern const uint64_t DECFLOAT_POW10_U64[8];

/* The value of the first k (0 .. 7) digits of v: moved to the word's end
 * after 8 - k '0's (each shift in two halves, so k = 0 needs no branch),
 * read as 8. */
static inline __attribute__((always_inline)) uint32_t decfloat_parse_leading(uint64_t v, int k)
{
	v = v << (4 * (8 - k)) << (4 * (8 - k)) |
	    UINT64_C(0x3030303030303030) >> (4 * k) >> (4 * k);
	return decfloat_parse8(v);
}

/*
 * The common shape, where at least DECFLOAT_LEX_SHORT_MIN bytes remain:
 * -?D.F with one integer digit D and 1 to 18 fraction digits F, no exponent ("0.1234",
 * "-0.12345678901234567"). Three words hold D's successor digits; no loop,
 * no bounds check (all reads are below s + 28). decfloat_lex_short and
 * decfloat_read_short return the length, or 0 for anything else, which
 * decfloat_lex then reads the general way (its answer decides, also on a
 * malformed token).
 */
enum { DECFLOAT_LEX_SHORT_MIN = 32 };

/* The digits of D.F at p (after the sign) as the integer DF into *m;
 * returns F's length (1 .. 18), or 0 when p holds no such D.F. The byte
 * after F, p[2 + length], is not a digit; the caller looks at it. */
static inline __attribute__((always_inline)) int decfloat_short_digits(const char *p, uint64_t *m)
{
	unsigned d0 = (unsigned char)p[0] - (unsigned)'0';
	uint64_t v = decfloat_load8(p + 2), v2, v3;
	int k = decfloat_leading8(v), k2, k3;

	if (d0 > 9 || p[1] != '.' || k == 0)
		return 0;
	if (k < 8) { /* up to 7 fraction digits */
		*m = d0 * DECFLOAT_POW10_U64[k] + decfloat_parse_leading(v, k);
		return k;
	}
	v2 = decfloat_load8(p + 10);
	k2 = decfloat_leading8(v2);
	if (k2 < 8) { /* 8 to 15 */
		*m = ((uint64_t)d0 * 100000000 + decfloat_parse8(v)) * DECFLOAT_POW10_U64[k2] +
		     decfloat_parse_leading(v2, k2);
		return 8 + k2;
	}
	v3 = decfloat_load8(p + 18); /* 16 to 18 */
	k3 = decfloat_leading8(v3);
	if (k3 > 2)
		return 0;
	*m = (((uint64_t)d0 * 100000000 + decfloat_parse8(v)) * 100000000 + decfloat_parse8(v2)) *
		 DECFLOAT_POW10_U64[k3] +
	     decfloat_parse_leading(v3, k3);
	return 16 + k3;
}

static inline __attribute__((always_inline)) size_t decfloat_lex_short(const char *s,
								       struct decfloat_number *x)
{
	int neg = *s == '-';
	const char *p = s + neg;
	uint64_t m;
	int k = decfloat_short_digits(p, &m);

	if (k == 0 || (p[2 + k] | 0x20) == 'e')
		return 0;
	x->m = m;
	x->e10 = -k;
	x->digits = (size_t)k + 1;
	x->truncated = 0;
	x->neg = neg;
	x->is_real = 1;
	return (size_t)(neg + 2 + k);
}

/* -10^-k and 10^-k, k = 0 .. 18, each the double nearest: [neg][k] */
extern const double DECFLOAT_POW10_NEG_SIGNED[2][19];

/* The digits' values of the first k (0 .. 7) ASCII digits of v, the bytes
 * after them 0: digits followed by zeros, so read as 8 digits, the value
 * times 10^(8 - k). A byte's borrow in the subtraction only runs to later
 * bytes, which the mask clears. */
static inline __attribute__((always_inline)) uint64_t decfloat_pad8(uint64_t v, int k)
{
	return (v - UINT64_C(0x3030303030303030)) & ((UINT64_C(1) << (8 * k)) - 1);
}

/*
 * The short path's guard band: a product d whose bit pattern is within
 * DECFLOAT_SHORT_GUARD of a float32 midpoint's (low 29 bits 1 << 28) is left
 * to decfloat_to_float. Outside it d and the correctly rounded double D of
 * the decimal V round to the same float, as long as no more than the guard's
 * doubles lie between them (the midpoints are 2^29 patterns apart). How far
 * d is: m's conversion, 10^-8 or 10^-16 and the product are rounded once
 * each, so |d - m 10^-e| < 3.01 u V (u = 2^-53); digits after the 16th, dropped
 * when m >= DECFLOAT_TRUNCATED_MIN, add less than 10^-16 <= V / m, at most
 * 90.1 u V. Together 93.1 u V: fewer than 94 steps of the double grid in
 * V's binade (a step there exceeds u V), fewer than 188 in the binade below
 * (half as large), one more to D: 189 < 256. A number lands in the band
 * with a chance of about 2^-20.
 */
enum { DECFLOAT_SHORT_GUARD = 256 };
#define DECFLOAT_TRUNCATED_MIN UINT64_C(100000000000000) /* 10^14: D.F >= 0.01 */

/* The fraction digits after the 16th, at q, counted (0 .. 7) for m, the
 * significand through the 16th; 8 where the short path declines: 8 or
 * more, or any for a number below 0.01. */
static inline __attribute__((always_inline)) int decfloat_digits_cut(const char *q, uint64_t m)
{
	int k = decfloat_leading8(decfloat_load8(q));

	return k != 0 && m < DECFLOAT_TRUNCATED_MIN ? 8 : k;
}

/*
 * The common shape at s (at least DECFLOAT_LEX_SHORT_MIN bytes readable)
 * read straight to its float, sign applied. Returns the length, or 0:
 * another shape (decfloat_lex_short's), or a product too near a float32
 * midpoint; then decfloat_lex and decfloat_to_float read it. When it
 * decides, the float is the one decfloat_to_float gives, (float) of strtod's
 * double (the naive twin in tests/common/check_decfloat.c), bit for bit: the
 * significand is padded with zeros to 8 or 16 fraction digits (no
 * multiplication by 10^k, and the padded decimal is the same number), or,
 * past 16, cut to its first 16 (for D.F >= 0.01: DECFLOAT_TRUNCATED_MIN),
 * then one multiplication by 10^-8 or 10^-16 rounded, and a guard band
 * around float32 midpoints wide enough for the digits cut
 * (DECFLOAT_SHORT_GUARD; decfloat_to_float's band, for its exact
 * significands, is 16). The float32 needs no more: 16 digits of a number
 * >= 0.01 hold it to within 90 doubles, 2^29 of which separate two float32
 * midpoints; reading the 17th and 18th digits as well cost about 6% of the
 * time of a 17-digit row (`bench_parse --numbers`). The sign rides on the
 * power of ten, so "-0.0" is -0.0. No struct through memory: the row loop
 * keeps everything in registers. decfloat_read_short_swar is the portable
 * version (words of 8 digits); decfloat_read_short the one used, the SSE2
 * version where the target has it (the two may decline different
 * near-midpoints, never disagree on a float). decfloat_read_short_comma
 * is decfloat_read_short for a caller that knows the byte after the token
 * is a ',' (it may skip the look for an exponent; a length that does not
 * reach that ',' is the caller's to reject).
 */
static inline __attribute__((always_inline)) size_t decfloat_read_short_swar(const char *s,
									     float *out)
{
	int neg = *s == '-';
	const char *p = s + neg;
	unsigned d0 = (unsigned char)p[0] - (unsigned)'0';
	uint64_t v = decfloat_load8(p + 2), m, bits;
	int k = decfloat_leading8(v), e;
	double d;

	if (d0 > 9 || p[1] != '.' || k == 0)
		return 0;
	if (k < 8) { /* 1 to 7 fraction digits, padded to 8 */
		m = (uint64_t)d0 * 100000000 + decfloat_parse8_values(decfloat_pad8(v, k));
		e = 8;
	} else {
		uint64_t v2 = decfloat_load8(p + 10);
		int k2 = decfloat_leading8(v2);

		m = (uint64_t)d0 * 100000000 + decfloat_parse8(v);
		if (k2 < 8) { /* 8 to 15, padded to 16 */
			m = m * 100000000 + decfloat_parse8_values(decfloat_pad8(v2, k2));
			k = 8 + k2;
			e = 16;
		} else { /* 16 to 23: the digits after the 16th only counted */
			int cut;

			m = m * 100000000 + decfloat_parse8(v2);
			cut = decfloat_digits_cut(p + 18, m);
			if (cut == 8)
				return 0;
			k = 16 + cut;
			e = 16;
		}
	}
	if ((p[2 + k] | 0x20) == 'e')
		return 0;
	d = (double)(int64_t)m * DECFLOAT_POW10_NEG_SIGNED[neg][e];
	memcpy(&bits, &d, sizeof bits);
	if (decfloat_near_midpoint(bits, DECFLOAT_SHORT_GUARD))
		return 0; /* decfloat_to_float decides */
	*out = (float)d;
	return (size_t)(neg + 2 + k);
}

#ifdef DECFLOAT_SSE2
/* 16 bytes of 0xff then 16 of 0: loaded at 16 - k, a mask of k bytes */
extern const uint8_t DECFLOAT_KEEP[32];

/*
 * The leading digits of the 16 bytes at q, at most 16 (their count k),
 * and into *m their value padded with zeros to 16 digits (the digits times
 * 10^(16 - k)). A byte is a digit when byte - '0' (wrapping) is at most 9,
 * which an unsigned saturating subtraction of 9 tells (0 then); the values are combined by three
 * multiply-adds of 16-bit pairs: digits to pairs, pairs to quadruples, quadruples to two halves
 * of 8.
 */
static inline __attribute__((always_inline)) int decfloat_digits16(const char *q, uint64_t *m)
{
	const __m128i zero = _mm_setzero_si128();
	__m128i d =
	    _mm_sub_epi8(_mm_loadu_si128((const __m128i *)(const void *)q), _mm_set1_epi8('0'));
	__m128i ok = _mm_cmpeq_epi8(_mm_subs_epu8(d, _mm_set1_epi8(9)), zero);
	int k = __builtin_ctz(~(unsigned)_mm_movemask_epi8(ok)); /* bit 16 is set */
	__m128i pairs, quads, halves;
	uint64_t both;

	d = _mm_and_si128(d,
			  _mm_loadu_si128((const __m128i *)(const void *)(DECFLOAT_KEEP + 16 - k)));
	/* [16] digits -> [8] pairs d0 * 10 + d1 -> [4] quadruples -> [2] halves */
	pairs =
	    _mm_packs_epi32(_mm_madd_epi16(_mm_unpacklo_epi8(d, zero), _mm_set1_epi32(0x1000a)),
			    _mm_madd_epi16(_mm_unpackhi_epi8(d, zero), _mm_set1_epi32(0x1000a)));
	quads = _mm_madd_epi16(pairs, _mm_set1_epi32(0x10064));
	halves = _mm_madd_epi16(_mm_packs_epi32(quads, quads), _mm_set1_epi32(0x12710));
	both = (uint64_t)_mm_cvtsi128_si64(halves);
	*m = (both & 0xffffffff) * 100000000 + (both >> 32);
	return k;
}

/* decfloat_read_short_swar's contract; F's first 16 digits in one vector,
 * padded to 16, those after them counted by a word as there. D and '.'
 * are checked as one 16-bit word: p[0] | p[1] << 8 minus "0." is at most 9
 * exactly when p[1] is '.' and p[0] a digit (its value). With end = 0 the
 * byte after the token is not looked at (the caller knows it is a ','). */
static inline __attribute__((always_inline)) size_t decfloat_short_sse2(const char *s, float *out,
									int end)
{
	int neg = *s == '-';
	const char *p = s + neg;
	uint16_t head;
	uint64_t m, bits;
	int k = decfloat_digits16(p + 2, &m);
	double d;

	memcpy(&head, p, sizeof head);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	head = __builtin_bswap16(head);
#endif
	head = (uint16_t)(head - ('.' << 8 | '0'));
	if (head > 9 || k == 0)
		return 0;
	m += (uint64_t)head * 10000000000000000;
	if (k == 16) { /* 16 to 23: the digits after the 16th only counted */
		int cut = decfloat_digits_cut(p + 18, m);

		if (cut == 8)
			return 0;
		k += cut;
	}
	if (end && (p[2 + k] | 0x20) == 'e')
		return 0;
	d = (double)(int64_t)m * DECFLOAT_POW10_NEG_SIGNED[neg][16];
	memcpy(&bits, &d, sizeof bits);
	if (decfloat_near_midpoint(bits, DECFLOAT_SHORT_GUARD))
		return 0;
	*out = (float)d;
	return (size_t)(neg + 2 + k);
}

static inline __attribute__((always_inline)) size_t decfloat_read_short(const char *s, float *out)
{
	return decfloat_short_sse2(s, out, 1);
}

static inline __attribute__((always_inline)) size_t decfloat_read_short_comma(const char *s,
									      float *out)
{
	return decfloat_short_sse2(s, out, 0);
}
#else
static inline __attribute__((always_inline)) size_t decfloat_read_short(const char *s, float *out)
{
	return decfloat_read_short_swar(s, out);
}

static inline __attribute__((always_inline)) size_t decfloat_read_short_comma(const char *s,
									      float *out)
{
	return decfloat_read_short_swar(s, out);
}
#endif

/* Reads the number at s[0 .. n) into x; returns its length, or 0 when no
 * JSON number starts there (the token may be followed by anything). */
static inline __attribute__((always_inline)) size_t decfloat_lex(const char *s, size_t n,
								 struct decfloat_number *x)
{
	size_t len = n >= DECFLOAT_LEX_SHORT_MIN ? decfloat_lex_short(s, x) : 0;

	return len != 0 ? len : decfloat_lex_general(s, n, x);
}

#endif
