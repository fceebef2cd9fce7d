/*
 * fastjson_copy.c: the copy of the body that jansson parses (fastjson.h),
 * and the entries that its placeholders stand for. What the grammar walk
 * (fastjson.c) finds to pool (a row of numbers, read by fastjson_row.c; a
 * matrix of such rows; a base64 tensor's string, decoded here) becomes an
 * entry of the pool, and the bytes it spanned become the placeholder
 * {"\u0001":k} of entry k in the copy. The rest of the body is copied as it
 * is, up to each placeholder and after the last (fj_copy_finish).
 */
#include "api/json/fastjson_ctx.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/fmt.h"

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
	    fj_grow((void **)&pool->rows, &pool->cap_rows, pool->n_rows + 1, sizeof *pool->rows) !=
		0)
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
int fj_commit_row(struct scan *sc, struct frame *parent, struct frame *f)
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
int fj_pool_base64(struct scan *sc)
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
	if (fj_grow((void **)&pool->values, &pool->cap_values, pool->n_values + room,
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
void fj_commit_matrix(struct scan *sc, struct frame *f)
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

/* The end of fastjson_scan: the copy handed over whole, or freed. */
char *fj_copy_finish(struct scan *sc, size_t *copy_len)
{
	struct fastjson_pool *pool = sc->pool;
	char *copy = NULL;

	if (sc->copy != NULL && pool->n_rows > 0 && copy_room(sc, sc->len, 1) != 0)
		fastjson_pool_release(pool); /* out of memory: nothing pooled after all */
	if (sc->copy != NULL && pool->n_rows > 0) {
		copy_through(sc, sc->len);
		sc->copy[sc->copy_len] = '\0';
		copy = sc->copy;
		*copy_len = sc->copy_len;
	} else {
		free(sc->copy);
	}
	sc->copy = NULL;
	return copy;
}
