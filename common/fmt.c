/*
 * fmt.c: float32 to decimal text (see fmt.h).
 *
 * fmt_float_shortest uses Schubfach, after Raffaello Giulietti, "The Schubfach
 * way to render doubles" (2020, revised 2022), specialised to binary32 as in
 * his FloatToDecimal (OpenJDK 19+). Written here from the paper, with one
 * deliberate difference: Java prints at least two digits (Float.MIN_VALUE is
 * "1.4E-45") by scaling tiny subnormals by 10 and skipping the shorter
 * candidate when s < 100; we want the truly shortest ("1e-45", "1e-44"), so
 * tiny subnormals go through unscaled and the shorter candidate is always
 * tried (for normal numbers s >= 2^23 and the two agree).
 *
 * Layout, decided here (as JavaScript's Number::toString): with the decimal
 * d1.d2...dn x 10^E (n <= 9 significant digits, no trailing zeros),
 *   -6 <= E < 16   plain:    123.5   0.001   0.000001   1000000000000000
 *   otherwise      exponent: 1e16    1.5e-7  3.4028235e38  1e-45
 * (JavaScript switches at 1e21; attnd at 1e16, because strict JSON readers
 * such as jansson refuse integer literals past int64 and doubles stop holding
 * every integer past 2^53.)
 * the exponent with no '+' and no leading zeros. Zero is "0", negative zero
 * "-0". NaN and infinities, which callers must not pass, come out as "null".
 * Every output is a JSON number; note that plain integers of 19 or more digits
 * (|x| >= 1e18) exceed int64, and parsers that read integers as int64 (jansson
 * without JSON_DECODE_INT_AS_REAL) reject them.
 *
 * Speed (issue 15; bench/README.md has the numbers): Schubfach's scale and
 * g come from tables per exponent, its final choice from arithmetic and
 * selects, not branches, and there is no separate path for integers; the
 * nine digits come from one fixed-point fraction, two per multiplication
 * (digits9). fmt_floats_shortest works in blocks, a pass at a time, with
 * AVX2 kernels for the decimals and the digits (fmt_kernels.h,
 * fmt_avx2.c). Digits are written as 8-byte words, so out must have
 * FMT_FLOAT_MAX bytes even for a short number; bytes after the returned
 * length (at most out[0..22) in all) may have been overwritten.
 *
 * fmt_float_digits rounds the exact binary value to `digits` significant
 * digits, ties to even, as glibc's snprintf "%.*e" of the exactly converted
 * double does: by integer arithmetic in 128 bits (round_scaled) for all but
 * the extreme exponents, which still go to snprintf (its decimal point is
 * skipped, so the locale does not matter). It lays them out as above.
 */
#include "fmt.h"
#include "fmt_kernels.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* binary32: precision P = 24 bits, c = significand, x = c 2^q. */
#define FLT_P 24
#define FLT_Q_MIN (-149)
#define FLT_C_MIN (UINT32_C(1) << (FLT_P - 1))
#define MASK32 UINT64_C(0xffffffff)

__extension__ typedef unsigned __int128 u128;

/* A positive decimal f 10^e. */
struct dec {
	uint32_t f;
	int e;
};

/*
 * G[k - G_K_MIN] = floor(g / 2^63) + 1, where 10^-k = beta 2^r with
 * 2^125 <= beta < 2^126 and g = floor(beta) + 1 (the paper's appendix; Java's
 * float code uses the same g1(k) + 1). k runs over every value to_decimal
 * needs for binary32: flog10pow2(q) and flog10_3q_pow2(q), q in [-149, 104].
 * Generated with exact rational arithmetic by this Python:
 *   from fractions import Fraction as F
 *   import math
 *   for k in range(-45, 32):
 *       v = F(10) ** -k
 *       r = math.floor(math.log2(v)) - 125       # then fix r so that
 *       while v / F(2)**r >= 2**126: r += 1       #   2^125 <= beta < 2^126
 *       while v / F(2)**r < 2**125: r -= 1
 *       print(hex(((math.floor(v / F(2)**r) + 1) >> 63) + 1))
 * check_api_util's exhaustive ranges and random round trips check the result.
 */
#define G_K_MIN (-45)
#define G_K_MAX 31
/* X(a, k, g) for each k; a is passed through (G_OF's k) */
#define G_TABLE(X, a) \
	X(a, -45, 0x59aedfc10d7279c6ULL) X(a, -44, 0x47bf19673df52e38ULL) \
	X(a, -43, 0x72cb5bd86321e38dULL) X(a, -42, 0x5bd5e313828182d7ULL) \
	X(a, -41, 0x4977e8dc68679be0ULL) X(a, -40, 0x758ca7c70d7292ffULL) \
	X(a, -39, 0x5e0a1fd271287599ULL) X(a, -38, 0x4b3b4ca85a86c47bULL) \
	X(a, -37, 0x785ee10d5da46d91ULL) X(a, -36, 0x604be73de4838adaULL) \
	X(a, -35, 0x4d0985cb1d3608afULL) X(a, -34, 0x7b426fab61f00de4ULL) \
	X(a, -33, 0x629b8c891b267183ULL) X(a, -32, 0x4ee2d6d415b85acfULL) \
	X(a, -31, 0x7e37be2022c0914cULL) X(a, -30, 0x64f964e68233a770ULL) \
	X(a, -29, 0x50c783eb9b5c85f3ULL) X(a, -28, 0x409f9cbc7c4a04c3ULL) \
	X(a, -27, 0x6765c793fa10079eULL) X(a, -26, 0x52b7d2dcc80cd2e5ULL) \
	X(a, -25, 0x422ca8b0a00a4251ULL) X(a, -24, 0x69e10de76676d081ULL) \
	X(a, -23, 0x54b40b1f852bda01ULL) X(a, -22, 0x43c33c1937564801ULL) \
	X(a, -21, 0x6c6b935b8bbd4001ULL) X(a, -20, 0x56bc75e2d6310001ULL) \
	X(a, -19, 0x4563918244f40001ULL) X(a, -18, 0x6f05b59d3b200001ULL) \
	X(a, -17, 0x58d15e1762800001ULL) X(a, -16, 0x470de4df82000001ULL) \
	X(a, -15, 0x71afd498d0000001ULL) X(a, -14, 0x5af3107a40000001ULL) \
	X(a, -13, 0x48c2739500000001ULL) X(a, -12, 0x746a528800000001ULL) \
	X(a, -11, 0x5d21dba000000001ULL) X(a, -10, 0x4a817c8000000001ULL) \
	X(a, -9, 0x7735940000000001ULL) X(a, -8, 0x5f5e100000000001ULL) \
	X(a, -7, 0x4c4b400000000001ULL) X(a, -6, 0x7a12000000000001ULL) \
	X(a, -5, 0x61a8000000000001ULL) X(a, -4, 0x4e20000000000001ULL) \
	X(a, -3, 0x7d00000000000001ULL) X(a, -2, 0x6400000000000001ULL) \
	X(a, -1, 0x5000000000000001ULL) X(a, 0, 0x4000000000000001ULL) \
	X(a, 1, 0x6666666666666667ULL) X(a, 2, 0x51eb851eb851eb86ULL) \
	X(a, 3, 0x4189374bc6a7ef9eULL) X(a, 4, 0x68db8bac710cb296ULL) \
	X(a, 5, 0x53e2d6238da3c212ULL) X(a, 6, 0x431bde82d7b634dbULL) \
	X(a, 7, 0x6b5fca6af2bd215fULL) X(a, 8, 0x55e63b88c230e77fULL) \
	X(a, 9, 0x44b82fa09b5a52ccULL) X(a, 10, 0x6df37f675ef6eae0ULL) \
	X(a, 11, 0x57f5ff85e5925580ULL) X(a, 12, 0x465e6604b7a84466ULL) \
	X(a, 13, 0x709709a125da070aULL) X(a, 14, 0x5a126e1a84ae6c08ULL) \
	X(a, 15, 0x480ebe7b9d58566dULL) X(a, 16, 0x734aca5f6226f0aeULL) \
	X(a, 17, 0x5c3bd5191b525a25ULL) X(a, 18, 0x49c97747490eae84ULL) \
	X(a, 19, 0x760f253edb4ab0d3ULL) X(a, 20, 0x5e72843249088d76ULL) \
	X(a, 21, 0x4b8ed0283a6d3df8ULL) X(a, 22, 0x78e480405d7b9659ULL) \
	X(a, 23, 0x60b6cd004ac94514ULL) X(a, 24, 0x4d5f0a66a23a9daaULL) \
	X(a, 25, 0x7bcb43d769f762a9ULL) X(a, 26, 0x63090312bb2c4eeeULL) \
	X(a, 27, 0x4f3a68dbc8f03f25ULL) X(a, 28, 0x7ec3daf941806507ULL) \
	X(a, 29, 0x65697bfa9acd1da0ULL) X(a, 30, 0x51212ffbaf0a7e19ULL) \
	X(a, 31, 0x40e7599625a1fe7bULL)

#define G_ENTRY(a, k, g) g,
#define G_SELECT(a, k, g) (a) == (k) ? (g) :
static const uint64_t G[G_K_MAX - G_K_MIN + 1] = {G_TABLE(G_ENTRY, 0)};
/* G[k - G_K_MIN] as a constant expression, for fmt_scales_g */
#define G_OF(k) (G_TABLE(G_SELECT, k) 0)

/* "00" "01" ... "99": two digits per lookup. */
static const char DIGITS2[200] = "0001020304050607080910111213141516171819"
				 "2021222324252627282930313233343536373839"
				 "4041424344454647484950515253545556575859"
				 "6061626364656667686970717273747576777879"
				 "8081828384858687888990919293949596979899";

/* The paper's fixed-point floor-logs (exact over |e| < 10^6, far more than
 * the |e| <= 150 used here):
 * floor(log10(2^e)), floor(log10(3/4 2^e)), floor(log2(10^e)).
 * Right shifts of negative values are arithmetic on every compiler we use. */
#define FLOG10POW2(e) ((int)((int64_t)(e) * 661971961083LL >> 41))
#define FLOG2POW10(e) ((int)((int64_t)(e) * 913124641741LL >> 38))

static int flog10pow2(int e)
{
	return FLOG10POW2(e);
}

static int flog10_3q_pow2(int e)
{
	return (int)(((int64_t)e * 661971961083LL - 274743187321LL) >> 41);
}

static int flog2pow10(int e)
{
	return FLOG2POW10(e);
}

/* The paper's r_o': cp g 2^-95 rounded to odd, as an integer (figure 11). */
static uint64_t rop(uint64_t g, uint64_t cp)
{
	uint64_t x1 = (uint64_t)(((u128)g * cp) >> 64);
	uint64_t vbp = x1 >> 31;

	return vbp | (((x1 & MASK32) + MASK32) >> 32);
}

/*
 * The scale of pass 2 below for each biased exponent bq (0 .. 255; 0, the
 * subnormals, has the q of bq = 1): k = floor(log10(2^q)), the shift
 * h = q + floor(log2(10^-k)) + 33 and g = G[k - G_K_MIN] itself, so that a
 * number's k, h and g take loads side by side instead of two multiplications
 * and their shifts, then a load that waited for k (the floor-logs of
 * flog10pow2 and flog2pow10, and G_OF, as constant expressions; 2.5 KB).
 * Only the rare c = C_MIN (the gap below is half) computes its own.
 */
// clang-format off
/* (it would spread SCALE over four lines) */
#define SCALE_Q(bq) ((bq) < 1 ? FLT_Q_MIN : (bq) + FLT_Q_MIN - 1)
#define SCALE_K(bq) FLOG10POW2(SCALE_Q(bq))
#define SCALE_H(bq) (SCALE_Q(bq) + FLOG2POW10(-SCALE_K(bq)) + 33)
#define SCALE(bq) {SCALE_K(bq), SCALE_H(bq)}
#define SCALE_G(bq) G_OF(SCALE_K(bq))
#define X4(X, b) X(b), X((b) + 1), X((b) + 2), X((b) + 3)
#define X16(X, b) X4(X, b), X4(X, (b) + 4), X4(X, (b) + 8), X4(X, (b) + 12)
#define X64(X, b) X16(X, b), X16(X, (b) + 16), X16(X, (b) + 32), X16(X, (b) + 48)
#define X256(X) X64(X, 0), X64(X, 64), X64(X, 128), X64(X, 192)
// clang-format on

const struct fmt_scale fmt_scales[256] = {X256(SCALE)};
const uint64_t fmt_scales_g[256] = {X256(SCALE_G)};

/*
 * The shortest decimal in the rounding interval R of c 2^q (c > 0, q the
 * exponent of the biased bq, SCALE_Q), and the closest to it among the
 * shortest (ties to an even last digit). Figure 7 of the paper, in the variables of
 * its section 9: everything is scaled by 4 so that the interval bounds vbl,
 * vbr and v itself (vb) are integers.
 */
static inline __attribute__((always_inline)) struct dec to_decimal(uint32_t bq, uint32_t c)
{
	uint64_t out = c & 1; /* R is closed when c is even (ties to even) */
	uint64_t cb = (uint64_t)c << 2;
	uint64_t cbr = cb + 2;
	uint64_t cbl;
	uint64_t g;
	int k, h;

	/* pass 1: k = floor(log10(width of R)); at c = C_MIN the gap below is half */
	if (c != FLT_C_MIN || bq <= 1) {
		cbl = cb - 2;
		k = fmt_scales[bq].k;
		h = fmt_scales[bq].h;
		g = fmt_scales_g[bq];
	} else {
		int q = SCALE_Q((int)bq);

		cbl = cb - 1;
		k = flog10_3q_pow2(q);
		h = q + flog2pow10(-k) + 33;
		g = G[k - G_K_MIN];
	}

	/* pass 2: v, its bounds, all times 10^-k, times 4, rounded to odd */
	uint64_t vb = rop(g, cb << h);
	uint64_t vbl = rop(g, cbl << h);
	uint64_t vbr = rop(g, cbr << h);

	/*
	 * pass 3: the choice, by arithmetic and three selects (branches would
	 * mispredict: which case applies is random). R holds at most one
	 * multiple of 10^(k+1), sp10 or tp10 (R is narrower than 10^(k+1)); if
	 * so it is shortest.
	 * Else u = s 10^k or w = t 10^k, whichever is in R (at least one is: R
	 * is at least 10^k wide), or if both, the closer (ties to even: v - u
	 * is (vb & 3) quarters, so w is closer at 3, or at 2 when s is odd).
	 */
	uint64_t lo = vbl + out, hi = vbr - out; /* R = [lo, hi] scaled by 4 */
	uint64_t s = vb >> 2, t = s + 1;
	uint64_t sp10 = s / 10 * 10, tp10 = sp10 + 10;
	/* s, or t when w is in R and closer (arithmetic: a select here became
	 * a branch) */
	uint64_t r = s + ((t << 2 <= hi) & ((vb & 3) + (s & 1) > 2));

	r = lo <= s << 2 ? r : t;
	r = lo <= sp10 << 2 ? sp10 : r;
	r = tp10 << 2 <= hi ? tp10 : r;
	return (struct dec){(uint32_t)r, k};
}

/*
 * Decodes a finite nonzero |x| (its bits without the sign) and runs
 * to_decimal, without branches: a subnormal (bq = 0) has c = t and the q of
 * bq = 1. No fast path for integers (the paper's sec. 8.3): its test cost a
 * tenth of a number, and to_decimal finds the same decimal for them (R is
 * narrower than 1, so holds no other decimal with as few digits), at most
 * with a trailing zero more, which write_decimal drops.
 */
static inline __attribute__((always_inline)) struct dec float_to_decimal(uint32_t bits)
{
	uint32_t bq = bits >> (FLT_P - 1);
	uint32_t c = (bits & (FLT_C_MIN - 1)) | (uint32_t)(bq != 0) << (FLT_P - 1);

	return to_decimal(bq, c);
}

/* 10^i, i = 0..9 */
static const uint32_t POW10[10] = {
	1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000,
};

/* The number of decimal digits of f > 0: floor(log10(2^bits)) from the bit
 * length (1233 / 4096 ~ log10 2), then one more if f reaches the next power. */
static int decimal_len(uint32_t f)
{
	uint32_t t = ((uint32_t)(32 - __builtin_clz(f)) * 1233) >> 12;

	return (int)(t + (f >= POW10[t]));
}

/*
 * Digits travel as words of 8 characters in memory order, built and shifted
 * in registers and stored whole: storing pieces to a scratch array and
 * loading them back would stall store forwarding, and exact-length copies
 * would be calls.
 */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define WORD_BIG_ENDIAN 1
#else
#define WORD_BIG_ENDIAN 0
#endif

/* The two characters of i < 100 as a word, in memory order. */
static uint64_t pair(uint64_t i)
{
	uint16_t v;

	memcpy(&v, DIGITS2 + 2 * i, sizeof v);
	return v;
}

/*
 * The nine digits of f9 in [10^8, 10^9): the first as *h, the other eight as
 * one word of characters, from y = f9 FRAC_E8, f9 / 10^8 as a fixed-point
 * number with a 57-bit fraction (callers fold the scaling of f to nine digits
 * into that multiplication: MUL9). Each two digits are then the
 * integer part of the fraction times 100. Rounding up the constant errs by
 * under f9 0.25 / 2^57 < 1.8e-9, below the fraction's step of 10^-8, and the
 * multiplications by 100 are exact (< 2^64), so every digit is exact. Four
 * dependent multiply-and-masks, where dividing by 10^8, 10^4, 100 and 10
 * in turn (quotient, then remainder) chained eight multiplications.
 */
#define FRAC_E8 UINT64_C(1441151881) /* ceil(2^57 / 10^8) */

/* FRAC_E8 10^i, i = 0..8: y for f of 9 - i digits (< 2^58) */
static const uint64_t MUL9[9] = {
	FRAC_E8,	    FRAC_E8 * 10,	FRAC_E8 * 100,	      FRAC_E8 * 1000,
	FRAC_E8 * 10000,    FRAC_E8 * 100000,	FRAC_E8 * 1000000,    FRAC_E8 * 10000000,
	FRAC_E8 * 100000000,
};

static inline __attribute__((always_inline)) uint64_t digits9(uint64_t y, uint32_t *h)
{
	uint64_t y1 = (y & FRAC57) * 100, y2 = (y1 & FRAC57) * 100;
	uint64_t y3 = (y2 & FRAC57) * 100, y4 = (y3 & FRAC57) * 100;
	uint64_t p1 = pair(y1 >> 57), p2 = pair(y2 >> 57);
	uint64_t p3 = pair(y3 >> 57), p4 = pair(y4 >> 57);

	*h = (uint32_t)(y >> 57);
	if (WORD_BIG_ENDIAN)
		return p1 << 48 | p2 << 32 | p3 << 16 | p4;
	return p1 | p2 << 16 | p3 << 32 | p4 << 48;
}

/* The number of '0's ending the 8 characters of w (w != ZEROS8): '0' bytes
 * xor to zero, and the last character is the most significant byte on a
 * little-endian machine. One instruction where a loop would mispredict. */
static int trailing_zeros8(uint64_t w)
{
	w ^= ZEROS8;
	if (WORD_BIG_ENDIAN)
		return __builtin_ctzll(w) / 8;
	return __builtin_clzll(w) / 8;
}

/* w without its first i characters (0 <= i < 8). */
static uint64_t skip_chars(uint64_t w, int i)
{
	if (WORD_BIG_ENDIAN)
		return w << (8 * i);
	return w >> (8 * i);
}

static void store8(char *p, uint64_t w)
{
	memcpy(p, &w, sizeof w);
}

/* Writes "e" and the exponent e (|e| < 100). */
static char *write_exponent(char *p, int e)
{
	*p++ = 'e';
	if (e < 0) {
		*p++ = '-';
		e = -e;
	}
	if (e >= 10) {
		memcpy(p, DIGITS2 + e * 2, 2);
		return p + 2;
	}
	*p++ = (char)('0' + e);
	return p;
}

/*
 * Writes f 10^k (0 < f < 10^9 of len digits, trailing zeros allowed, given as
 * y = f MUL9[9 - len]) after a '-' when neg,
 * laid out as in the comment at the top; returns the length, at most
 * 1 + 21 = 22. Words are stored whole, so bytes
 * of out past the returned length, never past out[FMT_FLOAT_MAX - 1], may be
 * overwritten; each case notes its bound.
 */
static inline __attribute__((always_inline)) size_t write_layout(char *out, uint32_t neg,
								 uint32_t h, uint64_t w, int e);

static inline __attribute__((always_inline)) size_t write_digits(char *out, uint32_t neg,
								 uint64_t y, int len, int k)
{
	uint32_t h;
	uint64_t w = digits9(y, &h);

	return write_layout(out, neg, h, w, k + len - 1);
}

/* The layout of h.w 10^e (h the first digit, w the other eight characters). */
static inline __attribute__((always_inline)) size_t write_layout(char *out, uint32_t neg,
								 uint32_t h, uint64_t w, int e)
{
	int n = w == ZEROS8 ? 1 : 9 - trailing_zeros8(w);
	char *p = out + neg;

	out[0] = '-';
	if (e < -6 || e >= 16) { /* 1.5e-7: out[0..11), then the exponent */
		p[0] = (char)('0' + h);
		p[1] = '.';
		store8(p + 2, w);
		p += n > 1 ? n + 1 : 1;
		return (size_t)(write_exponent(p, e) - out);
	}
	if (e < 0) { /* 0.00015: p <= out + 8 after the zeros, out[0..17) */
		memcpy(p, "0.000000", 8);
		p += 1 - e;
		p[0] = (char)('0' + h);
		store8(p + 1, w);
		return (size_t)(p + n - out);
	}
	if (e + 1 >= n) { /* 1500: out[0..22) */
		p[0] = (char)('0' + h);
		store8(p + 1, w);
		if (e > 8)
			memset(p + 9, '0', (size_t)e - 8);
		return (size_t)(p + e + 1 - out);
	}
	/* 1.5: e <= 7; all 8, then those after the point moved right, out[0..18) */
	p[0] = (char)('0' + h);
	store8(p + 1, w);
	store8(p + e + 2, skip_chars(w, e));
	p[e + 1] = '.';
	return (size_t)(p + n + 1 - out);
}

/* write_digits of f with decimal_len digits. */
static inline __attribute__((always_inline)) size_t write_decimal(char *out, uint32_t neg,
								  uint32_t f, int k)
{
	int len = decimal_len(f);

	return write_digits(out, neg, f * MUL9[9 - len], len, k);
}

/* Zero, NaN or an infinity (|x|'s bits abs): "0", "-0", or "null". */
static size_t write_special(char *out, uint32_t neg, uint32_t abs)
{
	if (abs != 0) {
		memcpy(out, "null", 4);
		return 4;
	}
	out[0] = '-';
	out[neg] = '0';
	return 1 + neg;
}

/* fmt_float_shortest of a finite x, its bits: one number's whole work,
 * inlined into both entry points (a call per number was a tenth of it). */
/*
 * The digit count of decimal f (of the float whose bits without the sign are
 * abs) in *len, and the multiplier that makes f times it the fixed-point
 * fraction write_digits reads. A normal number's f >= 2^23 - 9 (s >= c): 7, 8
 * or 9 digits, two compares and masks (branches mispredict) off the chain of
 * decimal_len's clz, multiply and load.
 */
static inline __attribute__((always_inline)) uint64_t digits_scale(uint32_t abs, uint32_t f,
								    int *len)
{
	if (__builtin_expect(abs >= FLT_C_MIN, 1)) {
		uint64_t ge7 = f >= 10000000, ge8 = f >= 100000000;

		*len = 7 + (int)ge7 + (int)ge8;
		return FRAC_E8 * 100 - (-ge7 & FRAC_E8 * 90) - (-ge8 & FRAC_E8 * 9);
	}
	*len = decimal_len(f);
	return MUL9[9 - *len];
}

static inline __attribute__((always_inline)) size_t shortest(char *out, uint32_t bits)
{
	uint32_t neg = bits >> 31;
	uint32_t abs = bits & 0x7fffffffu;

	if (abs == 0)
		return write_special(out, neg, abs);

	/* f < 1.7e8: s = c 2^q / 10^k < 2^24 10 (2^q / 10^k < 10 by pass 1 of
	 * to_decimal), and f is at most s + 10 */
	struct dec v = float_to_decimal(abs);
	int len;
	uint64_t mul = digits_scale(abs, v.f, &len);

	return write_digits(out, neg, v.f * mul, len, v.e);
}

size_t fmt_float_shortest(char *out, float x)
{
	uint32_t bits;

	memcpy(&bits, &x, sizeof bits);
	if ((bits & 0x7fffffffu) >= 0x7f800000u)
		return write_special(out, bits >> 31, bits & 0x7fffffffu);
	return shortest(out, bits);
}

enum { BLOCK = 32 };

/*
 * The decimals of x[0 .. n) (fmt_kernels.h) up to the first NaN or
 * infinity; returns its index, or n. fmt_decimals_avx2's twin.
 */
static size_t decimals_block(const float *x, size_t n, uint64_t *y, int64_t *e, uint64_t *neg)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t bits, abs;
		struct dec v;
		int len;
		uint64_t mul;

		memcpy(&bits, &x[i], sizeof bits);
		abs = bits & 0x7fffffffu;
		if (abs >= 0x7f800000u)
			return i;
		neg[i] = bits >> 31;
		y[i] = 0;
		if (abs == 0)
			continue;
		v = float_to_decimal(abs);
		mul = digits_scale(abs, v.f, &len);
		y[i] = v.f * mul;
		e[i] = v.e + len - 1;
	}
	return n;
}

/* The same with fmt_decimals_avx2 where it can (simd): it leaves vectors
 * of four it cannot do, which go through decimals_block. */
static size_t decimals(const float *x, size_t n, uint64_t *y, int64_t *e, uint64_t *neg, int simd)
{
	size_t i = 0;

	while (i < n) {
		size_t m = n - i, stop;

#ifdef FMT_HAVE_AVX2
		if (simd) {
			i += fmt_decimals_avx2(x + i, n - i, y + i, e + i, neg + i);
			m = n - i < 4 ? n - i : 4;
		}
#endif
		stop = decimals_block(x + i, m, y + i, e + i, neg + i);
		i += stop;
		if (stop < m)
			return i;
	}
	return n;
}

/* The digits of y[0 .. n): h[i], w[i] (fmt_digits_avx2's twin). */
static void digits_block(const uint64_t *y, uint64_t *h, uint64_t *w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t hi;

		w[i] = digits9(y[i], &hi);
		h[i] = hi;
	}
}

int fmt_simd_available(void)
{
#ifdef FMT_HAVE_AVX2
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") != 0; /* a nonzero mask, not 1 */
#else
	return 0;
#endif
}

/*
 * In blocks of BLOCK numbers, three passes (fmt_kernels.h): the decimals,
 * the digits, the layout. One number's work is a chain of about a dozen
 * dependent multiplications, too long for the processor to overlap more
 * than one or two numbers; passes over a block take them apart, and the
 * vector kernels do four numbers in about the instructions of one.
 */
static inline __attribute__((always_inline)) size_t
floats_shortest(char *out, const float *x, size_t n, size_t *done, int simd, struct fmt_nest *nest)
{
	char *p = out;
	size_t i = 0;

	while (i < n) {
		uint64_t y[BLOCK], h[BLOCK], w[BLOCK], neg[BLOCK];
		int64_t e[BLOCK];
		size_t m = n - i < BLOCK ? n - i : BLOCK, stop, j = 0;

		stop = decimals(x + i, m, y, e, neg, simd);
#ifdef FMT_HAVE_AVX2
		if (simd)
			j = fmt_digits_avx2(y, h, w, stop);
#endif
		digits_block(y + j, h + j, w + j, stop - j);
		for (j = 0; j < stop; j++) {
			if (y[j] == 0)
				p += write_special(p, (uint32_t)neg[j], 0);
			else
				p += write_layout(p, (uint32_t)neg[j], (uint32_t)h[j], w[j], (int)e[j]);
			if (nest != NULL)
				p = fmt_nest_sep(p, nest);
			else
				*p++ = ',';
		}
		i += stop;
		if (stop < m)
			break;
	}
	*done = i;
	return (size_t)(p - out);
}

size_t fmt_floats_shortest_with(char *out, const float *x, size_t n, size_t *done, int simd)
{
	return floats_shortest(out, x, n, done, simd, NULL);
}

size_t fmt_floats_shortest(char *out, const float *x, size_t n, size_t *done)
{
	return floats_shortest(out, x, n, done, fmt_simd_available(), NULL);
}

size_t fmt_floats_shortest_nested(char *out, const float *x, size_t n, struct fmt_nest *s,
				  size_t *done)
{
	return floats_shortest(out, x, n, done, fmt_simd_available(), s);
}

void fmt_nest_init(struct fmt_nest *s, size_t rank, const size_t *shape)
{
	s->rank = rank;
	for (size_t a = 0; a < rank; a++) {
		s->shape[a] = shape[a];
		s->at[a] = 0;
	}
}

/* A row just ended (at[rank - 1] == shape[rank - 1]): carry into the outer
 * axes as an odometer does, one "]" and one "[" for each axis that wrapped;
 * past the last number (axis 0 ended too) only the ','. */
char *fmt_nest_close(char *p, struct fmt_nest *s)
{
	size_t a = s->rank - 1, wrapped = 0;

	while (a > 0 && s->at[a] == s->shape[a]) {
		s->at[a] = 0;
		s->at[--a]++;
		wrapped++;
	}
	if (s->at[a] == s->shape[a]) { /* a == 0: the tensor's end */
		*p++ = ',';
		return p;
	}
	for (size_t i = 0; i < wrapped; i++)
		*p++ = ']';
	*p++ = ',';
	for (size_t i = 0; i < wrapped; i++)
		*p++ = '[';
	return p;
}

/* 5^k, k = 0 .. 27 (5^27 < 2^63) */
static const uint64_t POW5[28] = {
	1ULL, 5ULL, 25ULL, 125ULL, 625ULL, 3125ULL, 15625ULL, 78125ULL, 390625ULL, 1953125ULL,
	9765625ULL, 48828125ULL, 244140625ULL, 1220703125ULL, 6103515625ULL, 30517578125ULL,
	152587890625ULL, 762939453125ULL, 3814697265625ULL, 19073486328125ULL,
	95367431640625ULL, 476837158203125ULL, 2384185791015625ULL, 11920928955078125ULL,
	59604644775390625ULL, 298023223876953125ULL, 1490116119384765625ULL,
	7450580596923828125ULL,
};

/* The bit length of v (0 for 0). */
static int bits128(u128 v)
{
	uint64_t hi = (uint64_t)(v >> 64), lo = (uint64_t)v;

	return hi ? 128 - __builtin_clzll(hi) : lo ? 64 - __builtin_clzll(lo) : 0;
}

/*
 * round(c 2^q 10^k), ties to even, computed exactly as num / den with
 * num = c 2^max(q+k, 0) 5^max(k, 0) and den = 2^max(-q-k, 0) 5^max(-k, 0),
 * in 128 bits (a shift when den is a power of two): 0, or -1 when they do
 * not fit (|k| > 54, or more than 127 bits; the caller then asks snprintf).
 */
static int round_scaled(uint32_t c, int q, int k, uint64_t *r)
{
	int s2 = q + k, ak = k < 0 ? -k : k;
	u128 p5, num = c, den = 1, quo, rem, half;

	if (ak > 54)
		return -1;
	p5 = ak <= 27 ? (u128)POW5[ak] : (u128)POW5[27] * POW5[ak - 27]; /* < 2^126 */
	if (k >= 0) {
		if (bits128(p5) + bits128(num) > 127)
			return -1;
		num *= p5;
	} else {
		den = p5;
	}
	if (s2 >= 0) {
		if (bits128(num) + s2 > 127)
			return -1;
		num <<= s2;
	} else {
		if (bits128(den) - s2 > 127)
			return -1;
		den <<= -s2;
	}
	if (k >= 0) { /* den = 2^max(-s2, 0) */
		quo = num >> (s2 < 0 ? -s2 : 0);
		rem = num & (den - 1);
	} else {
		quo = num / den;
		rem = num % den;
	}
	/* above half, or a tie (only with den even) to an odd quo */
	half = den >> 1;
	if (rem > half || (rem == half && (den & 1) == 0 && (quo & 1) != 0))
		quo++;
	*r = (uint64_t)quo;
	return 0;
}

/* fmt_float_digits's slow path and its twin: the C library's exactly
 * rounded digits (finite nonzero x, digits in 1..9). */
static size_t digits_snprintf(char *out, float x, uint32_t neg, int digits)
{
	char tmp[48];
	uint32_t f = 0;
	int nd = 0;
	const char *p;
	int e;

	/* "-d.ddde-XX": the digits (whatever the decimal point), then the exponent */
	snprintf(tmp, sizeof tmp, "%.*e", digits - 1, (double)x);
	for (p = tmp; *p != 'e' && *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			continue;
		f = f * 10 + (uint32_t)(*p - '0');
		nd++;
	}
	e = *p == 'e' ? (int)strtol(p + 1, NULL, 10) : 0;
	if (f == 0) /* not for a finite nonzero x; kept out of write_decimal anyway */
		return write_special(out, neg, 0);
	return write_decimal(out, neg, f, e - (nd - 1));
}

/*
 * |x| = c 2^q, c normalised to 24 bits, lies in [2^(q+23), 2^(q+24)), so its
 * decimal exponent E is E0 = floor(log10 2^(q+23)) or E0 + 1. Scaled by
 * 10^(digits - 1 - E0) and rounded, it has digits or digits + 1 digits; in
 * the second case (E = E0 + 1, or a round-up to 10^digits) it is scaled
 * again by one power less. snprintf only when the exact quotient needs
 * more than 128 bits (the smallest subnormals at 8 or 9 digits).
 */
size_t fmt_float_digits(char *out, float x, int digits)
{
	uint32_t bits, neg, abs, c;
	uint64_t r;
	int q, k;

	memcpy(&bits, &x, sizeof bits);
	neg = bits >> 31;
	abs = bits & 0x7fffffffu;
	if (abs == 0 || abs >= 0x7f800000u)
		return write_special(out, neg, abs);
	if (digits < 1)
		digits = 1;
	if (digits > 9)
		digits = 9;
	c = abs & (FLT_C_MIN - 1);
	q = (int)(abs >> (FLT_P - 1));
	if (q == 0) { /* subnormal: normalise c to 24 bits */
		int lz = __builtin_clz(c) - 8;

		c <<= lz;
		q = FLT_Q_MIN - lz;
	} else {
		c |= FLT_C_MIN;
		q += FLT_Q_MIN - 1;
	}
	k = digits - 1 - flog10pow2(q + FLT_P - 1);
	/* the arithmetic on c's odd part: fewer bits to carry */
	int tz = __builtin_ctz(c);

	c >>= tz;
	q += tz;
	if (round_scaled(c, q, k, &r) != 0)
		return digits_snprintf(out, x, neg, digits);
	if (r >= POW10[digits]) {
		k--;
		if (round_scaled(c, q, k, &r) != 0)
			return digits_snprintf(out, x, neg, digits);
		if (r == POW10[digits]) { /* rounded up to the next power of ten */
			r /= 10;
			k--;
		}
	}
	return write_decimal(out, neg, (uint32_t)r, -k);
}

size_t fmt_float_digits_ref(char *out, float x, int digits)
{
	uint32_t bits;

	memcpy(&bits, &x, sizeof bits);
	if ((bits & 0x7fffffffu) == 0 || (bits & 0x7fffffffu) >= 0x7f800000u)
		return write_special(out, bits >> 31, bits & 0x7fffffffu);
	return digits_snprintf(out, x, bits >> 31, digits < 1 ? 1 : digits > 9 ? 9 : digits);
}
