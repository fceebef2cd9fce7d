/*
 * fmt.h: float32 to decimal text for JSON responses.
 *
 * fmt_float_shortest writes the shortest decimal string that strtof() reads
 * back to exactly the same float (Schubfach, as Ryu / JavaScript do),
 * JSON-valid: "-0" for negative zero; plain decimals for exponents in
 * [-6, 16) ("0.001", "123.5"), else exponent form without padding ("1.5e-7",
 * "3.4028235e38"). fmt.c says why 16. fmt_float_digits writes `digits` (1..9) significant digits, like
 * "%.*g". Neither handles NaN or infinities (callers write those as strings).
 * Both write at most FMT_FLOAT_MAX bytes, no NUL, and return the length.
 * Pure functions, no allocation, no locale (fmt_fixed's snprintf fallback
 * excepted, see below).
 */
#ifndef API_FMT_H
#define API_FMT_H

#include <stddef.h>

enum { FMT_FLOAT_MAX = 24 };

size_t fmt_float_shortest(char *out, float x);

/* x[0 .. n) as fmt_float_shortest writes each, each followed by ',', up to
 * the first NaN or infinity: returns the bytes written, *done the numbers
 * (n, or the index of that NaN or infinity). out must have room for
 * n * (FMT_FLOAT_MAX + 1) bytes. For rows of numbers: no call per number. */
size_t fmt_floats_shortest(char *out, const float *x, size_t n, size_t *done);

/*
 * The separators of a nested JSON array of numbers, the numbers taken in
 * row-major order: after each one ',' within a row, "],[" between rows,
 * "]],[[" between matrices and so on (2 * rank - 1 bytes at most), and ','
 * after the last (the caller closes the array). fmt_nest_init starts at the
 * first number of a tensor of `shape` (outermost first, rank 1 ..
 * FMT_NEST_MAX, every size > 0); each fmt_nest_sep writes the separator
 * after the next number and returns the end of what it wrote.
 */
enum { FMT_NEST_MAX = 8 };

struct fmt_nest {
	size_t rank;
	size_t shape[FMT_NEST_MAX]; /* outermost first */
	size_t at[FMT_NEST_MAX];    /* the next number's index along each axis */
};

void fmt_nest_init(struct fmt_nest *s, size_t rank, const size_t *shape);
char *fmt_nest_close(char *p, struct fmt_nest *s); /* fmt_nest_sep at a row's end */

static inline char *fmt_nest_sep(char *p, struct fmt_nest *s)
{
	if (++s->at[s->rank - 1] < s->shape[s->rank - 1]) { /* within a row */
		*p++ = ',';
		return p;
	}
	return fmt_nest_close(p, s);
}

/* fmt_floats_shortest with s's separators in place of the ','s: out must
 * have room for n * (FMT_FLOAT_MAX + 2 * rank) bytes. */
size_t fmt_floats_shortest_nested(char *out, const float *x, size_t n, struct fmt_nest *s,
				  size_t *done);
size_t fmt_float_digits(char *out, float x, int digits);

/* fmt_float_digits's naive twin, for tests: the same bytes, from snprintf's
 * "%.*e" digits (some hundred ns a number). */
size_t fmt_float_digits_ref(char *out, float x, int digits);

/*
 * Plain numbers for headers, logs and small JSON fields, without printf.
 * fmt_u64 writes v in decimal ("%llu"), at most FMT_U64_MAX bytes.
 * fmt_fixed writes x with `decimals` (0..9) digits after the point, exactly
 * as "%.*f" does (glibc: the exact binary value, ties to even; "-0.000" for
 * a small negative): by integer arithmetic when |x| < 2^52 / 10^decimals and
 * the rounding is clear, else through snprintf. At most FMT_FIXED_MAX bytes
 * (a larger result, |x| >= 1e300 or so, is cut there). NaN and infinities
 * come out as snprintf writes them ("nan", "inf"). Neither writes a NUL.
 */
enum { FMT_U64_MAX = 20, FMT_FIXED_MAX = 340 };

size_t fmt_u64(char *out, unsigned long long v);
size_t fmt_fixed(char *out, double x, int decimals);

#endif
