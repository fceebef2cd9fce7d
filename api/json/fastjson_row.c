/*
 * fastjson_row.c: the numbers of a possible row read into the pool
 * (fastjson.h): the row loop that fastjson.c's grammar walk hands a row to
 * as soon as it opens, and each number read as the jansson path reads it.
 *
 * Numbers. The jansson path reads a literal with a fraction or exponent with
 * strtod, an integer literal with strtoll (then (double)); read_elem then
 * takes (float) of that double. Here an integer literal of at most 18 digits
 * is read the same way; a real is read by common/decfloat.h's
 * decfloat_to_float, which gives (float) of the correctly rounded double
 * (what glibc's strtod returns), double rounding included, as on the jansson
 * path: by one multiplication where that provably gives the same float, else
 * by Clinger's fast path or Eisel-Lemire for up to 19 significant digits, and
 * for more when the digits after the 19th cannot change the result; the rare
 * rest goes to strtod itself. The row loop reads the common shape -?D.F by
 * decfloat_read_short, which gives the same float or declines (scan_row_loop).
 * jansson reads the decimal point locale-independently; so, in a locale
 * whose decimal point is not '.', nothing is pooled (fastjson_scan checks).
 */
#include "api/json/fastjson_ctx.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/json/commas.h"
#include "common/decfloat.h"

enum { NUMBER_TOKEN_MAX = 64 };

/* ---- numbers ----------------------------------------------------------- */

/*
 * The float the jansson path gives the number token s[0 .. n) read as x
 * ((float) of its double; +-inf past FASTJSON_FLOAT32_BOUND, which is where
 * (float) overflows): 0, or -1 when it is left to jansson (an integer
 * literal of 19 or more digits, which strtoll may refuse; a token longer
 * than NUMBER_TOKEN_MAX).
 */
static inline __attribute__((always_inline)) int number_float(const struct decfloat_number *x,
							      const char *s, size_t n, float *out)
{
	char text[NUMBER_TOKEN_MAX + 1];

	if (n > NUMBER_TOKEN_MAX)
		return -1;
	if (!x->is_real) {
		if (x->digits > 18)
			return -1;
		/* strtoll, then (double), then (float); "-0" is the integer 0, so +0.0 */
		*out = (float)(double)(x->neg ? -(long long)x->m : (long long)x->m);
		return 0;
	}
	if (decfloat_to_float(x->m, x->e10, x->truncated, out) == 0) {
		static const float sign[2] = {1.0f, -1.0f}; /* no branch; -0.0 stays */

		*out *= sign[x->neg];
		return 0;
	}
	memcpy(text, s, n); /* the rare undecided case */
	text[n] = '\0';
	*out = (float)strtod(text, NULL);
	return 0;
}

/*
 * How many values the pool should hold when it is full at sc->i: the rest
 * of the body guessed to hold numbers as densely as the part read (at least
 * 2 bytes a number), and 1/16 more. So the rows of a large body take two
 * allocations (256 values, then the guess) instead of a chain of doublings,
 * each copying the values and touching fresh pages (at 9f19924 they were
 * most of the bench's time beyond the scan).
 */
static size_t values_wanted(const struct scan *sc)
{
	size_t n = sc->pool->n_values, rest = sc->len - sc->i, per, more;

	if (n == 0 || sc->i == 0)
		return n + 1;
	per = sc->i / n > 2 ? sc->i / n : 2; /* bytes a number so far */
	more = rest / per;
	return n + 1 + more + more / 16;
}

/* The number x (its token at sc->i, n bytes) joins the row f, or f is no row.
 * Inlined into the row loop, where the call was a tenth of a number's work. */
static inline __attribute__((always_inline)) void
pool_number(struct scan *sc, struct frame *f, const struct decfloat_number *x, size_t n)
{
	struct fastjson_pool *pool = sc->pool;
	float v;

	/* |v| < FASTJSON_FLOAT32_BOUND exactly when (float) stays finite */
	if (number_float(x, sc->s + sc->i, n, &v) != 0 || !isfinite(v) ||
	    (pool->n_values == pool->cap_values &&
	     fj_grow((void **)&pool->values, &pool->cap_values, values_wanted(sc),
		     sizeof *pool->values) != 0)) {
		not_a_row(sc, f);
		return;
	}
	pool->values[pool->n_values++] = v; /* read_elem's (float) */
	if (x->is_real && f->first_real == SIZE_MAX)
		f->first_real = f->count;
	f->count++;
}

/* pool_number out of line, for a number the grammar walk reads (read_scalar). */
void fj_pool_number(struct scan *sc, struct frame *f, const struct decfloat_number *x, size_t n)
{
	pool_number(sc, f, x, n);
}

/* ---- the row loop -------------------------------------------------------- */

/* The blanks of skip_blank as one test: all are at most ' ', and the
 * bits of 1 << c for c <= ' ' select them. */
static int is_blank(unsigned char c)
{
	return c <= ' ' && ((UINT64_C(1) << c) & (UINT64_C(1) << ' ' | UINT64_C(1) << '\t' |
						  UINT64_C(1) << '\n' | UINT64_C(1) << '\r'));
}

/* The row loop's end of the pool, kept in locals while it runs. */
struct row_tail {
	float *values;
	size_t n, cap;
};

/* The pool's end and the row's count and first real from the locals. */
static void row_sync(struct fastjson_pool *pool, struct frame *f, const struct row_tail *t,
		     size_t first)
{
	pool->n_values = t->n;
	f->count = t->n - f->mark;
	f->first_real = first == SIZE_MAX ? SIZE_MAX : first - f->mark;
}

/*
 * Numbers of the common shape (decfloat_read_short: no exponent, one integer
 * digit, at most 23 fraction digits, away from a float32 midpoint) each
 * followed straight by ',' (and blanks), from i: read into t while there is
 * room; returns where the first number it does not take starts (i if none).
 * Each number's position comes from a bitmap of the commas in 64-byte
 * blocks (at i, i + 64, ...: where they start depends on no number), one
 * bit cleared a number: a number's length is only compared with its comma,
 * a branch the CPU predicts, so the next number's lexing does not wait for
 * this one's (following the lengths, one number after the other, was the
 * row's critical path: about 20 cycles a number of loads, masks and ctz).
 * Blocks end at least 32 bytes before the body does, so every read here
 * (a number's, the byte after a comma) is inside it. One blank after a
 * comma is taken (", ", as Python's json.dumps writes); any other blanks
 * end the run, and the caller's loop reads on.
 */
static inline __attribute__((always_inline)) size_t row_short_run(const char *s, size_t i, size_t n,
								  struct row_tail *t, size_t *first)
{
	/* blocks end 32 bytes before n: decfloat_read_short_comma's reads */
	size_t base = i, start = t->n, last = n - 64 - DECFLOAT_LEX_SHORT_MIN; /* n > 96 */
	uint64_t commas;

	if (base > last)
		return i;
	commas = commas64(s + base);
	for (;;) {
		size_t c, len;

		while (commas == 0) { /* the next block; a number may span two */
			base += 64;
			if (base > last || base > i + 64)
				goto out;
			commas = commas64(s + base);
		}
		if (t->n == t->cap)
			break;
		c = base + (size_t)__builtin_ctzll(commas);
		len = decfloat_read_short_comma(s + i, &t->values[t->n]);
		if (len == 0 || i + len != c)
			break;
		t->n++;
		commas &= commas - 1;
		i = c + 1 + (s[c + 1] == ' '); /* ", " as Python's json writes */
	}
out:
	if (t->n != start && *first > start)
		*first = start; /* every one a real: the row's first? */
	return i;
}

/*
 * Comma runs only in a row whose first number has at most this many bytes.
 * A block holds 3 or 4 numbers of 17 digits, so its reload comes at no
 * steady rhythm and its branch mispredicts, while the numbers' own work
 * hides the chain of lengths: the run was slower for them (a harness,
 * 17 digits: 9.75 against 8.85 ns a number read; %.4f: 6.6 against 9.0).
 */
enum { ROW_MAP_MAX_LEN = 12 };

/*
 * The fast loop of a possible row just opened: number, blanks, ',' and
 * again, without going through step() for each byte. It returns at anything
 * else (the ']' among them, or a number the row cannot take) with f->expect
 * saying what was read, and step() goes on from there.
 *
 * Runs of the common shape go through row_short_run; a number after it
 * that has the shape but no comma straight after (the row's last, or one
 * before a blank) still goes straight to the pool's end, held in t; any
 * other number goes through decfloat_lex and pool_number, with the pool's
 * end written back first and read again after.
 */
static inline __attribute__((always_inline)) void scan_row_loop(struct scan *sc, struct frame *f,
								const int map)
{
	struct fastjson_pool *pool = sc->pool;
	const char *s = sc->s;
	size_t n = sc->len, i = skip_blank(s, sc->i, n), len;
	size_t short_end = n >= DECFLOAT_LEX_SHORT_MIN ? n - DECFLOAT_LEX_SHORT_MIN : 0;
	struct row_tail t = {pool->values, pool->n_values, pool->cap_values};
	struct decfloat_number x;
	enum expect expect = f->expect;
	/* pool index of the row's first real (f->first_real counts in the row) */
	size_t first = f->first_real == SIZE_MAX ? SIZE_MAX : f->mark + f->first_real;

	while (i < n) {
		size_t before = t.n;

		i = map ? row_short_run(s, i, n, &t, &first) : i;
		if (t.n != before)
			expect = X_VALUE; /* i is after a ',' and blanks */
		if (i >= n)
			break;
		if (i <= short_end && t.n < t.cap &&
		    (len = decfloat_read_short(s + i, &t.values[t.n])) != 0) {
			first = first < t.n ? first : t.n;
			t.n++;
			i += len; /* < n: the number ended before s + i + 32 */
		} else {
			len = decfloat_lex(s + i, n - i, &x); /* 0 at ']' and at a non-number */
			if (len == 0)
				break;
			row_sync(pool, f, &t, first);
			sc->i = i;
			pool_number(sc, f, &x, len);
			t = (struct row_tail){pool->values, pool->n_values, pool->cap_values};
			first = f->first_real == SIZE_MAX ? SIZE_MAX : f->mark + f->first_real;
			i += len;
			expect = X_COMMA_OR_CLOSE;
			if (!f->row || i >= n)
				break;
		}
		expect = X_COMMA_OR_CLOSE;
		if (s[i] != ',') {
			i = skip_blank(s, i, n);
			if (i >= n || s[i] != ',')
				break;
		}
		expect = X_VALUE;
		i++;
		if (i < n && is_blank((unsigned char)s[i]))
			i = skip_blank(s, i, n);
	}
	if (f->row)
		row_sync(pool, f, &t, first);
	if (expect != X_VALUE_OR_CLOSE)
		f->matrix = 0; /* it holds a number */
	f->expect = expect;
	sc->i = i;
}

/* scan_row_loop with the comma map when the row's first number is at most
 * ROW_MAP_MAX_LEN bytes (and the map is SIMD), without it otherwise: two
 * copies of the loop, each compiled for its case. */
void fj_scan_row(struct scan *sc, struct frame *f)
{
	const char *s = sc->s;
	size_t n = sc->len, i = skip_blank(s, sc->i, n);

	if (COMMAS64_FAST && n > 64 + DECFLOAT_LEX_SHORT_MIN && i <= n - 64 &&
	    __builtin_ctzll(commas64(s + i) | UINT64_C(1) << 63) <= ROW_MAP_MAX_LEN)
		scan_row_loop(sc, f, 1);
	else
		scan_row_loop(sc, f, 0);
}
