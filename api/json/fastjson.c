/*
 * fastjson.c: rows of plain numbers pooled before jansson (see fastjson.h).
 *
 * The scanner follows JSON's grammar as jansson's lexer and parser do
 * (load.c): whitespace is space, tab, newline and carriage return; a number
 * is -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?; a literal is a run of
 * letters; a string ends at the first '"' not escaped by '\'. It tracks what
 * may come next in each open container, so a row is only ever replaced where
 * jansson expects a value, and by a value of the same depth; anything it does
 * not expect stops the scan (the rows before stay pooled). So jansson accepts
 * the copy exactly when it accepts the body: the copy differs only inside
 * rows, each checked here to be a valid array.
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
 * decfloat_read_short, which gives the same float or declines (scan_row).
 * jansson reads the decimal point locale-independently; so, in a locale
 * whose decimal point is not '.', nothing is pooled.
 */
#include "fastjson.h"

#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/json/commas.h"
#include "common/base64.h"
#include "common/decfloat.h"
#include "common/fmt.h"

enum { NUMBER_TOKEN_MAX = 64, FIELD_PATH_MAX = 192 };

/* A placeholder up to its index as it is written; its key as jansson reads it. */
static const char PLACEHOLDER_OPEN[] = "{\"\\u0001\":";
static const char PLACEHOLDER_KEY[] = "\x01";
enum { PLACEHOLDER_MAX = 31 }; /* bytes: PLACEHOLDER_OPEN, 20 digits, '}' */

/* What may come next: at the top level, or in the innermost open container. */
enum expect {
	X_VALUE,	  /* at the start, after ':', after ',' in an array */
	X_VALUE_OR_CLOSE, /* after '[' */
	X_KEY,		  /* after ',' in an object */
	X_KEY_OR_CLOSE,	  /* after '{' */
	X_COLON,	  /* after a key */
	X_COMMA_OR_CLOSE, /* after a value in a container */
	X_END,		  /* after the top-level value: whitespace only */
};

struct frame {
	char type; /* '[' or '{' */
	enum expect expect;
	/* objects: chain = every container above is an object, so path[0 ..
	 * path_len) is this object's JSON pointer; key_ok = the current key is
	 * in path, which then runs to key_end */
	int chain, key_ok;
	size_t path_len, key_end;
	/* objects: tensor = this object is a field's value, so possibly a
	 * tensor object; base64_key = and the current key is "base64" */
	int tensor, base64_key;
	/* arrays: in_field = under one of the fields, through arrays only;
	 * row = still possibly a row: in a field, inside an array, numbers only */
	int in_field, row;
	size_t start;		  /* offset of the '[' */
	size_t mark;		  /* pool->n_values at the '[' */
	size_t count, first_real; /* numbers pooled so far; first one with . or e */
	/* arrays: matrix = still possibly a matrix: in a field, every element so
	 * far a pooled row of matrix_cols numbers; matrix_rows of them, the
	 * last entries of the pool; copy_at = where the '[' is in the copy,
	 * set at the first row */
	int matrix;
	size_t matrix_rows, matrix_cols, copy_at;
};

struct scan {
	const char *s;
	size_t len, i;
	const char *const *fields;
	struct fastjson_pool *pool;
	char *copy;	 /* made at the first row pooled */
	size_t copy_len; /* bytes in copy */
	size_t copy_cap; /* bytes allocated */
	size_t copied;	 /* body[0 .. copied) is in the copy */
	struct frame stack[FASTJSON_MAX_DEPTH];
	size_t depth;
	enum expect top; /* what may come next at depth 0 */
	char path[FIELD_PATH_MAX];
	int stop;
};

void fastjson_pool_release(struct fastjson_pool *pool)
{
	if (pool == NULL)
		return;
	free(pool->values);
	free(pool->rows);
	memset(pool, 0, sizeof(*pool));
}

/* The entry of any kind that the placeholder v stands for, or NULL. */
static const struct fastjson_row *placeholder_row(const struct fastjson_pool *pool, const json_t *v)
{
	const json_t *index;
	json_int_t k;

	if (pool == NULL || pool->n_rows == 0 || !json_is_object(v) || json_object_size(v) != 1)
		return NULL;
	index = json_object_get(v, PLACEHOLDER_KEY);
	if (!json_is_integer(index))
		return NULL;
	k = json_integer_value(index);
	if (k < 0 || (unsigned long long)k >= pool->n_rows)
		return NULL;
	return &pool->rows[k];
}

const struct fastjson_row *fastjson_row(const struct fastjson_pool *pool, const json_t *v)
{
	const struct fastjson_row *row = placeholder_row(pool, v);

	return row != NULL && row->base64_len == 0 && row->rows == 0 ? row : NULL;
}

const struct fastjson_row *fastjson_matrix(const struct fastjson_pool *pool, const json_t *v)
{
	const struct fastjson_row *row = placeholder_row(pool, v);

	return row != NULL && row->rows > 0 ? row : NULL;
}

float *fastjson_pool_take(struct fastjson_pool *pool)
{
	float *values = pool->values, *fit;

	if (values != NULL && pool->n_values > 0 && pool->n_values < pool->cap_values) {
		fit = realloc(values, pool->n_values * sizeof *values); /* shrinks in place */
		values = fit != NULL ? fit : values;
	}
	if (pool->n_values == 0) {
		free(values);
		values = NULL;
	}
	pool->values = NULL;
	pool->n_values = pool->cap_values = 0;
	pool->n_rows = 0;
	return values;
}

const struct fastjson_row *fastjson_base64(const struct fastjson_pool *pool, const json_t *v)
{
	const struct fastjson_row *row = placeholder_row(pool, v);

	return row != NULL && row->base64_len > 0 ? row : NULL;
}

/* ---- tokens ------------------------------------------------------------ */

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static size_t skip_blank(const char *s, size_t i, size_t n)
{
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	return i;
}

/*
 * The end of the string whose '"' is at s[i], or 0 if it never ends. memchr
 * finds the next '"' and whether a '\\' comes before it; only a string with
 * escapes is walked a byte at a time, from its first '\\'.
 */
static size_t string_end(const char *s, size_t i, size_t n, int *escaped)
{
	const char *quote = memchr(s + i + 1, '"', n - i - 1);
	const char *slash;

	*escaped = 0;
	if (quote == NULL)
		return 0;
	slash = memchr(s + i + 1, '\\', (size_t)(quote - (s + i + 1)));
	if (slash == NULL)
		return (size_t)(quote - s) + 1;
	*escaped = 1;
	for (size_t k = (size_t)(slash - s); k < n; k++) {
		if (s[k] == '"')
			return k + 1;
		if (s[k] == '\\')
			k++;
	}
	return 0;
}

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

/* ---- the pool ------------------------------------------------------------ */

/* Grows *p (of *cap elements of size) to hold need, at least doubling;
 * 0, or -1 out of memory. */
static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap <= SIZE_MAX / 2 ? (*cap ? 2 * *cap : 256) : SIZE_MAX;
	void *q;

	if (need <= *cap)
		return 0;
	n = need > n ? need : n;
	if (n > SIZE_MAX / size)
		return -1;
	q = realloc(*p, n * size);
	if (q == NULL)
		return -1;
	*p = q;
	*cap = n;
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

/* f is no row after all: its numbers leave the pool. */
static void not_a_row(struct scan *sc, struct frame *f)
{
	if (f->row)
		sc->pool->n_values = f->mark;
	f->row = 0;
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
	     grow((void **)&pool->values, &pool->cap_values, values_wanted(sc),
		  sizeof *pool->values) != 0)) {
		not_a_row(sc, f);
		return;
	}
	pool->values[pool->n_values++] = v; /* read_elem's (float) */
	if (x->is_real && f->first_real == SIZE_MAX)
		f->first_real = f->count;
	f->count++;
}

/* ---- the copy -------------------------------------------------------------- */

/*
 * Room in the copy for body[sc->copied .. upto) and `more` bytes after it:
 * 0, or -1 out of memory (nothing changed). The copy grows as it is
 * written, doubling from 4 KiB, rather than being made the body's length
 * at the first row: it is mostly much shorter (a [128, 512] matrix of
 * numbers leaves a few dozen bytes), and a transient buffer of the body's
 * size, freed at once, moved the top of malloc's heap (bench/README.md).
 */
static int copy_room(struct scan *sc, size_t upto, size_t more)
{
	size_t need = sc->copy_len + (upto - sc->copied) + more, cap;
	char *p;

	if (need <= sc->copy_cap)
		return 0;
	cap = sc->copy_cap > 0 ? 2 * sc->copy_cap : 4096;
	cap = need > cap ? need : cap;
	p = realloc(sc->copy, cap);
	if (p == NULL)
		return -1;
	sc->copy = p;
	sc->copy_cap = cap;
	return 0;
}

/* Appends body[sc->copied .. upto) to the copy, which has room for it. */
static void copy_through(struct scan *sc, size_t upto)
{
	memcpy(sc->copy + sc->copy_len, sc->s + sc->copied, upto - sc->copied);
	sc->copy_len += upto - sc->copied;
	sc->copied = upto;
}

/*
 * body[start .. after) becomes the placeholder of the next entry of the
 * pool in the copy: 0, or -1 out of memory (nothing changed). The copy
 * never outgrows the body: the callers replace spans longer than a
 * placeholder (at most 31 bytes): a row has at least 2 FASTJSON_MIN_ROW + 1
 * bytes, a base64 string FASTJSON_MIN_BASE64 + 2, a matrix two rows.
 */
static int put_placeholder(struct scan *sc, size_t start, size_t after)
{
	struct fastjson_pool *pool = sc->pool;
	char *p;

	if (copy_room(sc, start, PLACEHOLDER_MAX) != 0 ||
	    grow((void **)&pool->rows, &pool->cap_rows, pool->n_rows + 1, sizeof *pool->rows) != 0)
		return -1;
	copy_through(sc, start);
	p = sc->copy + sc->copy_len;
	memcpy(p, PLACEHOLDER_OPEN, sizeof PLACEHOLDER_OPEN - 1);
	p += sizeof PLACEHOLDER_OPEN - 1;
	p += fmt_u64(p, pool->n_rows);
	*p++ = '}';
	sc->copy_len = (size_t)(p - sc->copy);
	sc->copied = after;
	return 0;
}

/* f, an array closing at sc->i, is a row: pooled, and its placeholder goes
 * into the copy in its place (0), or out of memory, no row (-1). parent is
 * the array around f. */
static int commit_row(struct scan *sc, struct frame *parent, struct frame *f)
{
	struct fastjson_pool *pool = sc->pool;

	/* the parent's first row: nothing in it is replaced yet, so its '['
	 * goes into the copy at the end of what is there, plus the bytes up to it */
	if (parent->matrix && parent->matrix_rows == 0)
		parent->copy_at = sc->copy_len + (parent->start - sc->copied);
	if (put_placeholder(sc, f->start, sc->i + 1) != 0) {
		not_a_row(sc, f);
		return -1;
	}
	pool->rows[pool->n_rows++] = (struct fastjson_row){
	    f->mark, f->count, f->first_real < f->count ? f->first_real : f->count, 0, 0};
	return 0;
}

/*
 * The string at sc->i is the value of a tensor object's "base64" member:
 * decoded into the pool and replaced by a placeholder when it decodes cleanly
 * to whole float32 values (returns 1, sc->i past the string); otherwise
 * nothing changes (returns 0) and it is read as any string. A '\\' is not
 * base64, so the first '"' ends a string that decodes.
 */
static int pool_base64(struct scan *sc)
{
	struct fastjson_pool *pool = sc->pool;
	const char *text = sc->s + sc->i + 1;
	const char *quote = memchr(text, '"', sc->len - sc->i - 1);
	size_t chars, room, bad;
	long long got;

	if (quote == NULL || (size_t)(quote - text) < FASTJSON_MIN_BASE64)
		return 0;
	chars = (size_t)(quote - text);
	room = (chars / 4 * 3 + sizeof(float) - 1) / sizeof(float); /* floats the bytes fill */
	if (grow((void **)&pool->values, &pool->cap_values, pool->n_values + room,
		 sizeof *pool->values) != 0)
		return 0;
	got = base64_decode((uint8_t *)(pool->values + pool->n_values), text, chars, &bad);
	if (got < 0 || got % sizeof(float) != 0 ||
	    put_placeholder(sc, sc->i, (size_t)(quote - sc->s) + 1) != 0)
		return 0;
	base64_f32_from_le(pool->values + pool->n_values, (size_t)got / sizeof(float));
	pool->rows[pool->n_rows++] = (struct fastjson_row){
	    pool->n_values, (size_t)got / sizeof(float), (size_t)got / sizeof(float), chars, 0};
	pool->n_values += (size_t)got / sizeof(float);
	sc->i = (size_t)(quote - sc->s) + 1;
	return 1;
}

/*
 * f, an array closing at sc->i, holds only pooled rows of one length, at
 * least 2 of them (f->matrix): they become one matrix, an entry after
 * theirs (the last f->matrix_rows of the pool), and one placeholder in the
 * copy from f's '[' on (f->copy_at), where theirs were. Out of memory, the
 * rows stay as they are.
 */
static void commit_matrix(struct scan *sc, struct frame *f)
{
	struct fastjson_pool *pool = sc->pool;
	size_t rows = f->matrix_rows, cols = f->matrix_cols, first = pool->n_rows - rows;
	size_t copy_len = sc->copy_len, copied = sc->copied, first_real = rows * cols;

	for (size_t r = 0; r < rows && first_real == rows * cols; r++)
		if (pool->rows[first + r].first_real < cols)
			first_real = r * cols + pool->rows[first + r].first_real;
	sc->copy_len = f->copy_at; /* back to the '[', the rows' placeholders dropped */
	sc->copied = f->start;
	if (put_placeholder(sc, f->start, sc->i + 1) != 0) {
		sc->copy_len = copy_len;
		sc->copied = copied;
		return;
	}
	pool->rows[pool->n_rows++] =
	    (struct fastjson_row){pool->rows[first].offset, rows * cols, first_real, 0, rows};
}

/* An element of the array f ended: a pooled row of cols numbers, or
 * anything else (cols 0). f stays a possible matrix while its elements are
 * rows of one length. */
static void matrix_element(struct frame *f, size_t cols)
{
	if (cols == 0 || (f->matrix_rows > 0 && cols != f->matrix_cols)) {
		f->matrix = 0;
		return;
	}
	f->matrix_cols = cols;
	f->matrix_rows++;
}

/* ---- the scanner --------------------------------------------------------- */

static struct frame *innermost(struct scan *sc)
{
	return sc->depth > 0 ? &sc->stack[sc->depth - 1] : NULL;
}

/* A value just ended: what its container (or the top level) expects now. */
static void after_value(struct scan *sc)
{
	struct frame *f = innermost(sc);

	if (f == NULL)
		sc->top = X_END;
	else
		f->expect = X_COMMA_OR_CLOSE;
}

/* Is path[0 .. len) one of the fields? */
static int is_field(const struct scan *sc, size_t len)
{
	for (size_t i = 0; sc->fields[i] != NULL; i++)
		if (strlen(sc->fields[i]) == len && memcmp(sc->fields[i], sc->path, len) == 0)
			return 1;
	return 0;
}

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
 * digit, at most 18 fraction digits, away from a float32 midpoint) each
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
static void scan_row(struct scan *sc, struct frame *f)
{
	const char *s = sc->s;
	size_t n = sc->len, i = skip_blank(s, sc->i, n);

	if (COMMAS64_FAST && n > 64 + DECFLOAT_LEX_SHORT_MIN && i <= n - 64 &&
	    __builtin_ctzll(commas64(s + i) | UINT64_C(1) << 63) <= ROW_MAP_MAX_LEN)
		scan_row_loop(sc, f, 1);
	else
		scan_row_loop(sc, f, 0);
}

static void open_container(struct scan *sc, char type)
{
	struct frame *parent = innermost(sc), *f;

	if (sc->depth == FASTJSON_MAX_DEPTH) {
		sc->stop = 1;
		return;
	}
	if (parent != NULL && parent->type == '[')
		not_a_row(sc, parent); /* it holds a container: not innermost */
	f = &sc->stack[sc->depth++];
	memset(f, 0, sizeof(*f));
	f->type = type;
	f->start = sc->i;
	f->mark = sc->pool->n_values;
	f->first_real = SIZE_MAX;
	if (type == '{') {
		f->expect = X_KEY_OR_CLOSE;
		f->chain =
		    parent == NULL || (parent->type == '{' && parent->chain && parent->key_ok);
		f->path_len = parent != NULL ? parent->key_end : 0;
		f->tensor = parent != NULL && parent->type == '{' && f->chain &&
			    is_field(sc, parent->key_end);
	} else {
		f->expect = X_VALUE_OR_CLOSE;
		if (parent != NULL && parent->type == '[')
			f->in_field = parent->in_field;
		else if (parent != NULL)
			f->in_field =
			    parent->chain && parent->key_ok && is_field(sc, parent->key_end);
		f->row = parent != NULL && parent->type == '[' && f->in_field;
		f->matrix = f->in_field;
	}
	sc->i++;
	if (f->row)
		scan_row(sc, f);
}

static void close_container(struct scan *sc)
{
	struct frame *f = innermost(sc), *parent = sc->depth > 1 ? f - 1 : NULL;
	int pooled = 0;

	if (f->row && f->count >= FASTJSON_MIN_ROW)
		pooled = commit_row(sc, parent, f) == 0; /* a row has an array around it */
	else
		not_a_row(sc, f);
	if (f->type == '[' && f->matrix && f->matrix_rows >= 2)
		commit_matrix(sc, f);
	if (parent != NULL && parent->type == '[')
		matrix_element(parent, pooled ? f->count : 0);
	sc->depth--;
	sc->i++;
	after_value(sc);
}

/* A key at sc->i; in a chain of objects it extends the path. */
static void read_key(struct scan *sc, struct frame *f)
{
	size_t start = sc->i, end, klen;
	int escaped;

	end = sc->s[start] == '"' ? string_end(sc->s, start, sc->len, &escaped) : 0;
	if (end == 0) {
		sc->stop = 1;
		return;
	}
	klen = end - start - 2;
	f->key_ok = f->chain && !escaped && f->path_len + 1 + klen <= sizeof sc->path &&
		    memchr(sc->s + start + 1, '~', klen) == NULL &&
		    memchr(sc->s + start + 1, '/', klen) == NULL;
	f->base64_key =
	    f->tensor && !escaped && klen == 6 && memcmp(sc->s + start + 1, "base64", 6) == 0;
	if (f->key_ok) {
		sc->path[f->path_len] = '/';
		memcpy(sc->path + f->path_len + 1, sc->s + start + 1, klen);
		f->key_end = f->path_len + 1 + klen;
	}
	f->expect = X_COLON;
	sc->i = end;
}

/* A string, number or literal at sc->i, where a value is expected. */
static void read_scalar(struct scan *sc)
{
	struct frame *f = innermost(sc);
	const char *s = sc->s + sc->i;
	size_t rest = sc->len - sc->i, n = 0;
	struct decfloat_number x;
	int escaped;

	if (s[0] == '"' && f != NULL && f->type == '{' && f->base64_key && pool_base64(sc)) {
		after_value(sc);
		return;
	}
	if (s[0] == '"') {
		n = string_end(sc->s, sc->i, sc->len, &escaped);
		n = n ? n - sc->i : 0;
	} else if (s[0] == '-' || is_digit(s[0])) {
		n = decfloat_lex(s, rest, &x);
	} else if (is_alpha(s[0])) {
		while (n < rest && is_alpha(s[n]))
			n++;
		if (!((n == 4 && memcmp(s, "true", 4) == 0) ||
		      (n == 5 && memcmp(s, "false", 5) == 0) ||
		      (n == 4 && memcmp(s, "null", 4) == 0)))
			n = 0;
	}
	if (n == 0) {
		sc->stop = 1;
		return;
	}
	if (f != NULL && f->type == '[')
		f->matrix = 0; /* a scalar in it */
	if (f != NULL && f->type == '[' && f->row) {
		if (s[0] == '-' || is_digit(s[0]))
			pool_number(sc, f, &x, n);
		else
			not_a_row(sc, f);
	}
	sc->i += n;
	after_value(sc);
}

static void read_value(struct scan *sc, char c)
{
	if (c == '[' || c == '{')
		open_container(sc, c);
	else
		read_scalar(sc);
}

/* One step at the non-blank byte c = s[i]. */
static void step(struct scan *sc, char c)
{
	struct frame *f = innermost(sc);
	enum expect x = f != NULL ? f->expect : sc->top;
	char close = f != NULL && f->type == '[' ? ']' : '}';

	switch (x) {
	case X_VALUE:
		read_value(sc, c);
		return;
	case X_VALUE_OR_CLOSE:
		if (c == ']')
			close_container(sc);
		else
			read_value(sc, c);
		return;
	case X_KEY_OR_CLOSE:
		if (c == '}')
			close_container(sc);
		else
			read_key(sc, f);
		return;
	case X_KEY:
		read_key(sc, f);
		return;
	case X_COLON:
		if (c != ':')
			break;
		f->expect = X_VALUE;
		sc->i++;
		return;
	case X_COMMA_OR_CLOSE:
		if (c == close) {
			close_container(sc);
			return;
		}
		if (c != ',')
			break;
		f->expect = f->type == '[' ? X_VALUE : X_KEY;
		sc->i++;
		return;
	case X_END:
		break;
	}
	sc->stop = 1;
}

/* Does s[0 .. n) contain the placeholder key's escape? */
static int has_placeholder_key(const char *s, size_t n)
{
	static const char esc[] = "\\u0001";
	const char *p = s, *end = s + n;

	while ((p = memchr(p, '\\', (size_t)(end - p))) != NULL) {
		if ((size_t)(end - p) >= sizeof esc - 1 && memcmp(p, esc, sizeof esc - 1) == 0)
			return 1;
		p++;
	}
	return 0;
}

char *fastjson_scan(const char *body, size_t len, const char *const *fields,
		    struct fastjson_pool *pool, size_t *copy_len)
{
	struct scan *sc;
	char *copy = NULL;
	const char *point = localeconv()->decimal_point;

	*copy_len = 0;
	if (fields == NULL || len < 2 * FASTJSON_MIN_ROW || has_placeholder_key(body, len) ||
	    point == NULL || strcmp(point, ".") != 0)
		return NULL;
	sc = calloc(1, sizeof(*sc));
	if (sc == NULL)
		return NULL;
	sc->s = body;
	sc->len = len;
	sc->fields = fields;
	sc->pool = pool;
	sc->top = X_VALUE;
	for (sc->i = skip_blank(body, 0, len); !sc->stop && sc->i < len;
	     sc->i = skip_blank(body, sc->i, len))
		step(sc, body[sc->i]);
	for (size_t d = sc->depth; d > 0; d--) /* stopped or ended inside a row */
		not_a_row(sc, &sc->stack[d - 1]);
	if (sc->copy != NULL && pool->n_rows > 0 && copy_room(sc, len, 1) != 0)
		fastjson_pool_release(pool); /* out of memory: nothing pooled after all */
	if (sc->copy != NULL && pool->n_rows > 0) {
		copy_through(sc, len);
		sc->copy[sc->copy_len] = '\0';
		copy = sc->copy;
		*copy_len = sc->copy_len;
	} else {
		free(sc->copy);
	}
	free(sc);
	return copy;
}
