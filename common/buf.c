/*
 * buf.c: a growable byte buffer with a hard maximum (see buf.h), after curl's
 * lib/curlx/dynbuf.c.
 *
 * Details buf.h leaves open, decided here:
 *   - `max` bounds the content, len <= max; the NUL terminator is extra, so
 *     the allocation is at most max + 1 bytes.
 *   - Capacity grows by doubling from BUF_FIRST_ALLOC, clamped to max + 1.
 *   - `failed` is sticky: once an append fails, every later append, reserve
 *     and printf fails at once (returns -1 / NULL) until buf_reset, so the
 *     bytes kept are always a prefix of what the writer meant to write.
 *   - buf_detach hands over whatever is held, failed or not (check `failed`
 *     first); it returns NULL only when b held nothing and malloc(1) failed.
 *   - Before the first allocation `data` points at a shared static "" (as
 *     git's strbuf_slopbuf), so b->data is always a readable C string; never
 *     write through it while cap is 0.
 */
#include "buf.h"

#include <assert.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BUF_FIRST_ALLOC = 64 };

static char buf_empty[1];

void buf_init(struct buf *b, size_t max)
{
	b->data = buf_empty;
	b->len = 0;
	b->cap = 0;
	b->max = max;
	b->failed = 0;
}

void buf_release(struct buf *b)
{
	if (b == NULL)
		return;
	if (b->cap > 0)
		free(b->data);
	buf_init(b, b->max);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	b->failed = 0;
	if (b->cap > 0)
		b->data[0] = '\0';
}

/* The capacity to grow to for `need` bytes (content + NUL): double from the
 * current one until it fits, never beyond max + 1. need <= max + 1 holds. */
static size_t grown_cap(const struct buf *b, size_t need)
{
	size_t limit = b->max < SIZE_MAX ? b->max + 1 : SIZE_MAX;
	size_t cap = b->cap > 0 ? b->cap : BUF_FIRST_ALLOC;

	while (cap < need && cap <= limit / 2)
		cap *= 2;
	if (cap < need || cap > limit)
		cap = limit; /* doubling would pass the maximum: take it all */
	return cap;
}

/* buf_grow when n more bytes do not fit as they are: out of line, so the
 * usual case (they fit) costs each append a compare, not a call. */
static int buf_grow_slow(struct buf *b, size_t n) __attribute__((noinline));

/* Makes room for n more content bytes plus the NUL. 0 on success; -1 with
 * `failed` set (contents untouched) when over max or out of memory. */
static inline int buf_grow(struct buf *b, size_t n)
{
	if (n < b->cap - b->len && !b->failed) /* the usual case: it fits */
		return 0;
	return buf_grow_slow(b, n);
}

static int buf_grow_slow(struct buf *b, size_t n)
{
	size_t need;
	size_t cap;
	char *p;

	if (b->failed)
		return -1;
	if (n > b->max - b->len) {
		b->failed = 1;
		return -1;
	}
	need = b->len + n + 1; /* len + n <= max < SIZE_MAX unless max is SIZE_MAX */
	if (need == 0) {
		b->failed = 1;
		return -1;
	}
	cap = grown_cap(b, need);
	p = realloc(b->cap > 0 ? b->data : NULL, cap);
	if (p == NULL) {
		b->failed = 1;
		return -1;
	}
	if (b->cap == 0)
		p[0] = '\0';
	b->data = p;
	b->cap = cap;
	return 0;
}

int buf_append_grow(struct buf *b, const void *p, size_t n)
{
	if (buf_grow(b, n) != 0)
		return -1;
	if (n > 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int buf_putc_grow(struct buf *b, char c)
{
	if (buf_grow(b, 1) != 0)
		return -1;
	b->data[b->len] = c;
	b->len++;
	b->data[b->len] = '\0';
	return 0;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;
	size_t room;

	if (buf_grow(b, 0) != 0) /* allocates, so room >= 1 below */
		return -1;
	/* pass 1: format into the room already allocated */
	room = b->cap - b->len;
	va_start(ap, fmt);
	n = vsnprintf(b->data + b->len, room, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->data[b->len] = '\0';
		b->failed = 1;
		return -1;
	}
	/* pass 2: it did not fit: grow to the exact size and format again */
	if ((size_t)n >= room) {
		if (buf_grow(b, (size_t)n) != 0) {
			b->data[b->len] = '\0'; /* undo pass 1's partial write */
			return -1;
		}
		va_start(ap, fmt);
		vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
	return 0;
}

int buf_put_u64(struct buf *b, unsigned long long v)
{
	char digits[20]; /* 2^64 - 1 has 20 */
	size_t n = sizeof digits;

	do {
		digits[--n] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0);
	return buf_append(b, digits + n, sizeof digits - n);
}

char *buf_reserve(struct buf *b, size_t n)
{
	if (buf_grow(b, n) != 0)
		return NULL;
	return b->data + b->len;
}

void buf_commit(struct buf *b, size_t n)
{
	/* a programmer error: committing more than was reserved */
	assert(n < b->cap - b->len || (n == 0 && b->cap == 0));
	if (n == 0)
		return;
	b->len += n;
	b->data[b->len] = '\0';
}

char *buf_detach(struct buf *b, size_t *len)
{
	char *p;

	if (b->cap == 0) {
		p = malloc(1); /* the caller gets a free()able "" */
		if (p != NULL)
			p[0] = '\0';
	} else {
		p = b->data;
	}
	if (len != NULL)
		*len = p != NULL ? b->len : 0;
	buf_init(b, b->max);
	return p;
}
