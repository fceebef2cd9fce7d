/*
 * check_decfloat.c: common/decfloat.h, decimal text to double without strtod.
 *
 *   lex      decfloat_lex accepts exactly JSON's number grammar, stops at the
 *            token's end, never reads past the buffer (exact-size copies),
 *            and splits significand and exponent as documented; its short
 *            path (32 bytes or more left) and its general one agree on
 *            every string below and on the short path's edges
 *   strtod   on millions of random decimal strings of every kind the API
 *            sees or could be sent (%.17g of random bit patterns, Python-repr
 *            style 17 digits, %.9g, %.4f, the shortest float text, long digit
 *            strings, huge and tiny exponents, subnormals, exact halfway
 *            cases between doubles, overflow and underflow), the lexed token
 *            converted by decfloat_to_double (strtod only where it says
 *            undecided) gives strtod's double bit for bit, hence the same
 *            (float); decfloat_to_float gives (float)strtod (its naive twin)
 *            bit for bit, also on decimals a few units of the 17th-19th
 *            digit from a float32 midpoint (its guard band: with the band
 *            narrowed to the midpoint itself, "float tie" and "tie near"
 *            fail); and undecided stays rare (counted, bounded per kind)
 *   short    decfloat_read_short (lexing and conversion in one step) against
 *            its naive twin, decfloat_lex then decfloat_to_float and the
 *            sign, and its SWAR and ','-after versions against it: the same
 *            length and float bits whenever they decide, on
 *            every string above and on fraction runs of 1 to 25 digits
 *            around its 8-byte words, each followed by every kind of byte,
 *            and on float32 ties written with 16 to 23 fraction digits
 *            and moved by a few units of the last (with the band narrowed
 *            to decfloat_to_float's 16, "tie fixed" fails);
 *            it declines (0) every other shape, a malformed one included,
 *            and decides almost all %.4f, repr and fixed-point strings
 *
 * Environment: ATTN_TEST_LIGHT=1 (the default under valgrind) runs about
 * 1/1000 of the random strings; ATTN_TEST_LIGHT=0 forces the full run.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/decfloat.h"
#include "common/fmt.h"
#include "engine/prng.h"
#include "tests/lib/expect.h"
#include "tests/lib/light.h"
#include "tests/lib/suite_main.h"

static double from_bits64(uint64_t u)
{
	double d;

	memcpy(&d, &u, sizeof d);
	return d;
}

static uint64_t bits64(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof u);
	return u;
}

/* Lexes s whole from an exact-size heap copy (so an overread is caught by
 * valgrind and ASan); returns the token length. */
static size_t lex_exact(const char *s, struct decfloat_number *x)
{
	size_t n = strlen(s);
	char *copy = malloc(n ? n : 1);
	size_t len;

	EXPECT_MSG(copy != NULL, "out of memory");
	memcpy(copy, s, n);
	len = decfloat_lex(copy, n, x);
	free(copy);
	return len;
}

/* Lexes s followed by ",123...": at least 32 bytes in all, so the common
 * shape takes decfloat_lex's short path (lex_exact's copies mostly do not). */
static size_t lex_padded(const char *s, struct decfloat_number *x)
{
	static const char pad[] = ",12345678901234567890123456789012";
	size_t n = strlen(s);
	char *copy = malloc(n + sizeof pad);
	size_t len;

	EXPECT_MSG(copy != NULL, "out of memory");
	memcpy(copy, s, n);
	memcpy(copy + n, pad, sizeof pad - 1);
	len = decfloat_lex(copy, n + sizeof pad - 1, x);
	free(copy);
	return len;
}

/* The short and the general path read s alike: length and every field. */
static void lex_paths_agree(const char *s)
{
	struct decfloat_number x, y;
	size_t a, b;

	memset(&x, 0, sizeof x);
	memset(&y, 0, sizeof y);
	a = lex_exact(s, &x);
	b = lex_padded(s, &y);
	EXPECT_MSG(a == b, "\"%s\": %zu bytes exact, %zu padded", s, a, b);
	if (a == 0)
		return;
	EXPECT_MSG(x.m == y.m && x.e10 == y.e10 && x.digits == y.digits &&
		       x.truncated == y.truncated && x.neg == y.neg && x.is_real == y.is_real,
		   "\"%s\": fields differ between the paths", s);
}

/* ---- read_short against its twin ---------------------------------------------- */

static uint32_t bits32(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof u);
	return u;
}

/* The portable version (decfloat_read_short_swar) and the one for a ','
 * after the token (decfloat_read_short_comma) against decfloat_read_short's
 * answer (len, got) on buf: where both decide, the same length and bits;
 * the SWAR one declines the same shapes (it may decide a different few
 * near-midpoints, never another float); the comma one, where the byte
 * after its token is a ',', decides exactly as decfloat_read_short does. */
static void read_short_variants_agree(const char *buf, const char *s, const char *tail, size_t len,
				      float got)
{
	float other = 0.0f;
	size_t len2 = decfloat_read_short_swar(buf, &other);

	if (len != 0 && len2 != 0)
		EXPECT_MSG(len == len2 && bits32(got) == bits32(other),
			   "\"%s\" + \"%s\": swar %zu bytes %a, sse2 %zu bytes %a", s, tail, len2,
			   (double)other, len, (double)got);
	len2 = decfloat_read_short_comma(buf, &other);
	if (len != 0 && buf[len] == ',')
		EXPECT_MSG(len2 == len && bits32(got) == bits32(other),
			   "\"%s\" + \"%s\": comma %zu bytes, %zu", s, tail, len2, len);
	if (len2 != 0 && buf[len2] == ',')
		EXPECT_MSG(len2 == len, "\"%s\" + \"%s\": comma %zu bytes, %zu", s, tail, len2,
			   len);
}

/*
 * decfloat_read_short on s followed by tail (and padding to 40 bytes, which
 * it needs) against decfloat_lex and (float)strtod, the jansson path's
 * reading, on the same bytes: when it decides, the same length and float
 * bits, and a well-formed token of its shape -?D.F; returns whether it
 * decided.
 */
static int read_short_agrees(const char *s, const char *tail)
{
	static char buf[1200];
	size_t n = strlen(s), t = strlen(tail), len, want_len;
	struct decfloat_number x;
	float got = 0.0f, want;
	char token[64];

	ck_assert_uint_lt(n + t + 40, sizeof buf);
	memcpy(buf, s, n);
	memcpy(buf + n, tail, t);
	memset(buf + n + t, ' ', 40);
	len = decfloat_read_short(buf, &got);
	read_short_variants_agree(buf, s, tail, len, got);
	if (len == 0)
		return 0;
	want_len = decfloat_lex(buf, n + t + 40, &x);
	EXPECT_MSG(len == want_len, "\"%s\" + \"%s\": read_short %zu bytes, lex %zu", s, tail, len,
		   want_len);
	ck_assert_uint_lt(len, sizeof token);
	memcpy(token, buf, len);
	token[len] = '\0';
	EXPECT_MSG(x.is_real && token[x.neg + 1] == '.' && strpbrk(token, "eE") == NULL &&
		       len - (size_t)x.neg - 2 <= 23,
		   "\"%s\" + \"%s\": read_short took a token of another shape", s, tail);
	want = (float)strtod(token, NULL);
	EXPECT_MSG(bits32(got) == bits32(want), "\"%s\": read_short %a, (float)strtod %a", s,
		   (double)got, (double)want);
	return 1;
}

/* What can follow a number: its end in a row, or more of a token. */
static const char *const TAILS[] = {",",  "]", " ", "\n", "}", "e5", "E-2", "x",
				    ".5", "0", "",  "-",  "+", "/",  ":"};

/* Fraction runs of 1 to 25 digits (the words hold 8 and 16, and count 7
 * more), every integer digit and sign, each run all 0s, all 9s or mixed,
 * before every tail: decided ones agree with the twin; a run of 24 or
 * more, an exponent after it, or a run past 16 digits of a number below
 * 0.01 (0.000...) is declined. */
START_TEST(test_read_short_runs)
{
	static const char fill[3][26] = {"0000000000000000000000000", "9999999999999999999999999",
					 "3141592653589793238462643"};
	char s[64];
	size_t decided = 0, tried = 0;

	for (int f = 1; f <= 25; f++)
		for (int d = 0; d <= 9; d++)
			for (int neg = 0; neg < 2; neg++)
				for (int k = 0; k < 3; k++)
					for (size_t t = 0; t < sizeof TAILS / sizeof TAILS[0];
					     t++) {
						int ok,
						    len = snprintf(s, sizeof s, "%s%d.%.*s",
								   neg ? "-" : "", d, f, fill[k]);

						int small = d == 0 && k == 0 && f > 16;

						ok = read_short_agrees(s, TAILS[t]);
						EXPECT_MSG(!ok || (f <= 23 && !small &&
								   TAILS[t][0] != 'e' &&
								   TAILS[t][0] != 'E'),
							   "\"%s%s\" taken", s, TAILS[t]);
						decided += (size_t)ok;
						tried +=
						    f <= 23 && !small &&
						    (TAILS[t][0] | 0x20) != 'e' &&
						    !(TAILS[t][0] >= '0' && TAILS[t][0] <= '9');
						(void)len;
					}
	/* all but the few near midpoints */
	ck_assert_msg(decided * 100 >= tried * 99, "%zu of %zu decided", decided, tried);
}
END_TEST

/* Shapes it must decline (decfloat_lex decides those, malformed or not). */
START_TEST(test_read_short_declines)
{
	static const char *const cases[] = {
	    "0.",
	    "1.e5",
	    "-.5",
	    ".5",
	    "00.5",
	    "10.5",
	    "-10.25",
	    "+1.5",
	    "1e5",
	    "1",
	    "-",
	    "--1.5",
	    "- 1.5",
	    "1,5",
	    "1..5",
	    "a.5",
	    "1.x",
	    "Infinity",
	    "",
	    "-0",
	    "9.999999999999999999999999", /* 24 fraction digits */
	    "0.123456789012345678901234", /* the same */
	    "0.00000000000000001",	  /* 17 digits of a number below 0.01 */
	    "-0.0099999999999999999",	  /* the same */
	};

	/* TAILS but those that would complete a number ("0." "5") */
	static const char *const ends[] = {",", "]", " ", "\n", "}", "e5", "E-2",
					   "x", "",  "-", "+",	"/", ":"};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		for (size_t t = 0; t < sizeof ends / sizeof ends[0]; t++)
			EXPECT_MSG(!read_short_agrees(cases[i], ends[t]), "\"%s%s\" taken",
				   cases[i], ends[t]);
}
END_TEST

/* ---- lex ------------------------------------------------------------------- */

START_TEST(test_lex_grammar)
{
	static const struct {
		const char *s;
		size_t len; /* 0: no number */
	} cases[] = {
	    {"0", 1},	    {"-0", 2},	     {"1.5", 3},
	    {"-1.5e-7", 7}, {"1E+3", 4},     {"12345678901234567890", 20},
	    {"1.5,", 3},    {"2]", 1},	     {"0.12345678,9", 10},
	    {"01", 0},	    {"-", 0},	     {"1.", 0},
	    {".5", 0},	    {"1e", 0},	     {"1e+", 0},
	    {"+1", 0},	    {"Infinity", 0}, {"-x", 0},
	    {"1.e5", 0},    {"00.5", 0},     {"1ee5", 0},
	    {"0x10", 1},    {"1.5e5.5", 5},  {"123456789012.12345678", 21},
	    {"", 0},
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct decfloat_number x;

		ck_assert_msg(lex_exact(cases[i].s, &x) == cases[i].len, "\"%s\": %zu, not %zu",
			      cases[i].s, lex_exact(cases[i].s, &x), cases[i].len);
		lex_paths_agree(cases[i].s);
	}
}
END_TEST

/* The short path's edges: fraction lengths 1 to 19 (18 is its last), an
 * exponent after each, a second digit before the point, no digit after it. */
START_TEST(test_lex_short_edges)
{
	static const char *const more[] = {
	    "0.",
	    "1.e5",
	    "-.5",
	    "00.5",
	    "10.5",
	    "-9.9",
	    "0.0",
	    "-0.0",
	    "9.999999999999999999",
	    "1.5E5",
	    "1.5e-5",
	    "0.12345678e",
	    "0.1234567.5",
	    "1.1234567812345678.5",
	};
	char s[64];

	for (int f = 1; f <= 19; f++) {
		for (int exp = 0; exp < 2; exp++) {
			int n = snprintf(s, sizeof s, "-7.");

			for (int i = 0; i < f; i++)
				s[n++] = (char)('0' + (i * 7 + 3) % 10);
			snprintf(s + n, sizeof s - (size_t)n, "%s", exp ? "e-3" : "");
			lex_paths_agree(s);
			lex_paths_agree(s + 1); /* without the sign */
		}
	}
	for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
		lex_paths_agree(more[i]);
}
END_TEST

START_TEST(test_lex_fields)
{
	struct decfloat_number x;

	ck_assert_uint_eq(lex_exact("-12.5e3", &x), 7);
	ck_assert(x.neg && x.is_real && !x.truncated);
	ck_assert_uint_eq(x.m, 125);
	ck_assert_int_eq(x.e10, 2);
	ck_assert_uint_eq(x.digits, 3);
	ck_assert_uint_eq(lex_exact("123", &x), 3);
	ck_assert(!x.neg && !x.is_real && x.m == 123 && x.e10 == 0);
	/* 20 digits: the first 19 significant ones, the dropped one scales */
	ck_assert_uint_eq(lex_exact("12345678901234567891", &x), 20);
	ck_assert(x.truncated && x.m == 1234567890123456789ULL && x.e10 == 1);
	ck_assert_uint_eq(x.digits, 20);
	ck_assert_uint_eq(lex_exact("12345678901234567890", &x), 20);
	ck_assert(!x.truncated && x.m == 1234567890123456789ULL && x.e10 == 1);
	/* leading zeros of a fraction are not significant */
	ck_assert_uint_eq(lex_exact("0.000000000001234567890123456789", &x), 32);
	ck_assert(!x.truncated && x.m == 1234567890123456789ULL && x.e10 == -30);
	ck_assert_uint_eq(lex_exact("0.0000000000012345678901234567891e-5", &x), 36);
	ck_assert(x.truncated && x.m == 1234567890123456789ULL && x.e10 == -35);
	/* the 8-digit steps of a fraction, and a digit run ending at the buffer */
	ck_assert_uint_eq(lex_exact("0.1234567812345678", &x), 18);
	ck_assert(x.m == 1234567812345678ULL && x.e10 == -16);
	ck_assert_uint_eq(lex_exact("1.23456789x", &x), 10);
	ck_assert(x.m == 123456789 && x.e10 == -8);
	/* a huge exponent is held, not wrapped */
	ck_assert_uint_eq(lex_exact("1e99999999999999999999999", &x), 25);
	ck_assert_int_eq(x.e10, 999999);
	ck_assert_uint_eq(lex_exact("1e-99999999999999999999999", &x), 26);
	ck_assert_int_eq(x.e10, -999999);
}
END_TEST

/* ---- against strtod ---------------------------------------------------------- */

/* decfloat_to_float against its naive twin (float)strtod; counts undecided */
static void check_float(const char *s, const struct decfloat_number *x, double want,
			size_t *undecided)
{
	float got;

	if (decfloat_to_float(x->m, x->e10, x->truncated, &got) != 0) {
		++*undecided;
		return;
	}
	got = x->neg ? -got : got;
	EXPECT_MSG(bits32(got) == bits32((float)want), "\"%s\": float %a, (float)strtod %a", s,
		   (double)got, (double)(float)want);
}

/* Whether s (a whole JSON number) reads as strtod does (and as (float)strtod
 * through decfloat_to_float; and decfloat_read_short agrees where it decides);
 * counts undecided, and the strings read_short decided. */
static void check_one(const char *s, size_t *undecided, size_t *short_decided)
{
	struct decfloat_number x;
	double want = strtod(s, NULL), got;
	size_t len = lex_exact(s, &x);

	EXPECT_MSG(len == strlen(s), "\"%s\" lexed to %zu bytes", s, len);
	lex_paths_agree(s);
	*short_decided += (size_t)read_short_agrees(s, ",");
	check_float(s, &x, want, undecided);
	if (decfloat_to_double(x.m, x.e10, x.truncated, &got) != 0) {
		++*undecided;
		return;
	}
	got = x.neg ? -got : got;
	EXPECT_MSG(bits64(got) == bits64(want), "\"%s\": %a, strtod %a", s, got, want);
	EXPECT_MSG(bits64((double)(float)got) == bits64((double)(float)want), "\"%s\" (float)", s);
}

/* n random digits into p (the first one nonzero when lead), NUL-terminated */
static char *put_digits(char *p, struct attn_prng *g, int n, int lead)
{
	for (int i = 0; i < n; i++)
		*p++ = (char)('0' + (i == 0 && lead ? 1 + attn_prng_next(g) % 9
						    : attn_prng_next(g) % 10));
	*p = '\0';
	return p;
}

/* A random finite double, every binary exponent alike. */
static double any_double(struct attn_prng *g)
{
	uint64_t u;

	do
		u = attn_prng_next(g);
	while ((u & 0x7ff0000000000000ULL) == 0x7ff0000000000000ULL);
	return from_bits64(u);
}

static float any_float(struct attn_prng *g)
{
	uint32_t u;
	float f;

	do
		u = (uint32_t)(attn_prng_next(g) >> 32);
	while ((u & 0x7f800000u) == 0x7f800000u);
	memcpy(&f, &u, sizeof f);
	return f;
}

enum kind {
	K_G17_BITS,  /* %.17g of random bit patterns */
	K_REPR,	     /* Python repr of uniform [-1, 1): 17 digits, point form */
	K_G9,	     /* %.9g of random floats */
	K_F4,	     /* %.4f in [-10, 10) */
	K_SHORTEST,  /* fmt_float_shortest of random float bits */
	K_LONG,	     /* 20 to 60 random digits, a point, a random exponent */
	K_EXTREME,   /* up to 19 digits times 10^[-360, 330]: subnormals, overflow */
	K_HALFWAY,   /* the exact midpoint of two neighbouring doubles */
	K_INT_TIE,   /* odd integers in [2^53, 2^64): ties in 16 to 20 digits */
	K_FLOAT_TIE, /* near a float32 tie, 15 to 18 digits */
	K_TIE_NEAR,  /* a float32 tie in [1e-4, 1e4) moved a few units of the
		      * 17th to 19th digit: decfloat_to_float's guard band */
	K_TIE_FIXED, /* the same in [2^-7, 10) written -?D.F, 16 to 23 fraction
		      * digits: decfloat_read_short's guard band, its digits
		      * after the 16th dropped (and below 0.01 declined) */
	K_NKINDS
};

static const char *const KIND_NAMES[K_NKINDS] = {
    "%.17g bits", "repr",    "%.9g",	"%.4f",	     "shortest", "long",
    "extreme",	  "halfway", "int tie", "float tie", "tie near", "tie fixed",
};

static void make_string(char *s, size_t cap, enum kind k, struct attn_prng *g)
{
	char *p = s;

	switch (k) {
	case K_G17_BITS:
		snprintf(s, cap, "%.17g", any_double(g));
		break;
	case K_REPR:
		snprintf(s, cap, "%.17g", 2.0 * attn_prng_uniform(g) - 1.0);
		break;
	case K_G9:
		snprintf(s, cap, "%.9g", (double)any_float(g));
		break;
	case K_F4:
		snprintf(s, cap, "%.4f", 20.0 * attn_prng_uniform(g) - 10.0);
		break;
	case K_SHORTEST:
		s[fmt_float_shortest(s, any_float(g))] = '\0';
		break;
	case K_LONG: {
		int n = 20 + (int)(attn_prng_next(g) % 41);
		int point = 1 + (int)(attn_prng_next(g) % (uint64_t)(n - 1));

		if (attn_prng_next(g) % 3 == 0) {
			memcpy(p, "0.", 2); /* leading zeros after the point */
			p = put_digits(p + 2, g, 1 + (int)(attn_prng_next(g) % 12), 0);
			point = 0;
		}
		p = put_digits(p, g, point, p == s);
		if (point > 0)
			*p++ = '.';
		p = put_digits(p, g, n - point, 0);
		snprintf(p, cap - (size_t)(p - s), "e%d", (int)(attn_prng_next(g) % 601) - 300);
		break;
	}
	case K_EXTREME:
		p = put_digits(p, g, 1 + (int)(attn_prng_next(g) % 19), 1);
		snprintf(p, cap - (size_t)(p - s), "e%d", (int)(attn_prng_next(g) % 691) - 360);
		break;
	case K_HALFWAY: {
		double d = fabs(any_double(g));
		long double mid;

		if (!(d < DBL_MAX))
			d = 1.0;
		/* long double holds the midpoint exactly (64-bit significand) */
		mid = ((long double)d + (long double)nextafter(d, INFINITY)) / 2;
		snprintf(s, cap, "%.*Le", 20 + (int)(attn_prng_next(g) % 200), mid);
		break;
	}
	case K_INT_TIE:
		snprintf(s, cap, "%llu",
			 (unsigned long long)((attn_prng_next(g) | (1ULL << 53)) | 1));
		break;
	case K_FLOAT_TIE: {
		float f = any_float(g);

		snprintf(s, cap, "%.*g", 15 + (int)(attn_prng_next(g) % 4),
			 ((double)f + (double)nextafterf(f, INFINITY)) / 2);
		break;
	}
	case K_TIE_NEAR: {
		/* f's exponent in [-14, 13]: 10^-4 <= |tie| < 10^4 or so */
		uint32_t u = (uint32_t)(attn_prng_next(g) >> 41) |
			     (uint32_t)(113 + attn_prng_next(g) % 28) << 23;
		float f;
		double tie;
		int digits = 17 + (int)(attn_prng_next(g) % 3), n;
		char *e;
		long long last;

		memcpy(&f, &u, sizeof f);
		tie = ((double)f + (double)nextafterf(f, INFINITY)) / 2;
		n = snprintf(s, cap, "%.*e", digits - 1, tie); /* d.ddd...e-XX */
		e = strchr(s, 'e');
		/* the last 3 digits before 'e', moved by -4 .. 4 (no carry out) */
		last = strtoll(e - 3, NULL, 10) + (long long)(attn_prng_next(g) % 9) - 4;
		if (last >= 0 && last <= 999) {
			char tmp[4];

			snprintf(tmp, sizeof tmp, "%03lld", last);
			memcpy(e - 3, tmp, 3);
		}
		(void)n;
		break;
	}
	case K_TIE_FIXED: {
		/* f's exponent in [-7, 3]: 2^-7 <= |tie| < 16, kept below 10 */
		uint32_t u = (uint32_t)(attn_prng_next(g) >> 41) |
			     (uint32_t)(120 + attn_prng_next(g) % 11) << 23;
		float f;
		double tie;
		int n;
		long long last;

		memcpy(&f, &u, sizeof f);
		tie = ((double)f + (double)nextafterf(f, INFINITY)) / 2;
		tie = (attn_prng_next(g) & 1 ? -1 : 1) * (tie < 10 ? tie : tie / 2);
		n = snprintf(s, cap, "%.*f", 16 + (int)(attn_prng_next(g) % 8), tie);
		/* the last 3 digits, moved by -4 .. 4 (no carry out) */
		last = strtoll(s + n - 3, NULL, 10) + (long long)(attn_prng_next(g) % 9) - 4;
		if (last >= 0 && last <= 999) {
			char tmp[4];

			snprintf(tmp, sizeof tmp, "%03lld", last);
			memcpy(s + n - 3, tmp, 3);
		}
		break;
	}
	case K_NKINDS:
		break;
	}
}

START_TEST(test_strtod_random)
{
	enum kind k = (enum kind)_i;
	size_t n = (size_t)test_scaled(k == K_HALFWAY ? 100000 : 500000), undecided = 0,
	       short_decided = 0;
	struct attn_prng g;
	static char s[1024];

	attn_prng_seed(&g, 0xdecf10a7u + (uint64_t)k);
	for (size_t i = 0; i < n; i++) {
		make_string(s, sizeof s, k, &g);
		check_one(s, &undecided, &short_decided);
	}
	/* halfway and long strings may be undecided (strtod reads them);
	 * everything of at most 19 digits almost never is */
	if (k != K_HALFWAY && k != K_LONG && k != K_INT_TIE)
		ck_assert_msg(undecided * 10000 <= n, "%s: %zu of %zu undecided", KIND_NAMES[k],
			      undecided, n);
	/* the shapes of the bodies take the short path (the rest of
	 * repr, about 1%: below 0.01, 19 or more fraction digits, or below
	 * 10^-4, in exponent form) */
	if (k == K_F4 || k == K_REPR)
		ck_assert_msg(short_decided * 100 >= n * 98, "%s: read_short decided %zu of %zu",
			      KIND_NAMES[k], short_decided, n);
	fprintf(stderr, "decfloat %-10s %8zu strings, %6zu undecided, %8zu by read_short\n",
		KIND_NAMES[k], n, undecided, short_decided);
}
END_TEST

/* Edges by hand: the limits of binary64 and of the table. */
START_TEST(test_strtod_edges)
{
	static const char *const cases[] = {
	    "0",
	    "-0",
	    "0.0",
	    "-0.0",
	    "0e999999",
	    "1e-400",
	    "1e400",
	    "-1e400",
	    "2.2250738585072011e-308",
	    "2.2250738585072014e-308",
	    "4.9406564584124654e-324",
	    "2.4703282292062327e-324",
	    "2.4703282292062328e-324",
	    "1.7976931348623157e308",
	    "1.7976931348623158e308",
	    "1.7976931348623159e308",
	    "9007199254740993",
	    "9007199254740992.5",
	    "18446744073709551615",
	    "18446744073709551616",
	    "1e-342",
	    "1e-343",
	    "9999999999999999999e-343",
	    "1e308",
	    "1e309",
	    "1e23",
	    "8.589973e9",
	    "3.4028235e38",
	    "3.4028236e38",
	    "3.40282357e38",
	    "1.4e-45",
	    "7e-46",
	    "7.1e-46",
	    "0.1",
	    "0.2",
	    "0.3",
	    "123456789012345678e-5",
	    "0.000000000000000000000000000000000000000000000001e48",
	};
	size_t undecided = 0, short_decided = 0;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		check_one(cases[i], &undecided, &short_decided);
	ck_assert_uint_le(undecided, 2);
}
END_TEST

static Suite *decfloat_suite(void)
{
	Suite *s = suite_create("decfloat");
	TCase *tl = tcase_create("lex"), *ts = tcase_create("strtod");

	tcase_add_test(tl, test_lex_grammar);
	tcase_add_test(tl, test_lex_fields);
	tcase_add_test(tl, test_lex_short_edges);
	tcase_add_test(tl, test_read_short_runs);
	tcase_add_test(tl, test_read_short_declines);
	suite_add_tcase(s, tl);
	tcase_set_timeout(ts, 300);
	tcase_add_test(ts, test_strtod_edges);
	tcase_add_loop_test(ts, test_strtod_random, 0, K_NKINDS);
	suite_add_tcase(s, ts);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, decfloat_suite, NULL);
}
