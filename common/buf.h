/*
 * buf.h: a growable byte buffer with a hard maximum (after curl's dynbuf).
 *
 * A struct buf is a value owned by its caller: buf_init it, append, then
 * buf_release it (or buf_detach the bytes, which the caller then free()s).
 * Appending past `max` or running out of memory fails with -1, leaves the
 * contents as they were and sets `failed`, so a writer may append many times
 * and check once. The data is always NUL-terminated (not counted in len).
 */
#ifndef API_BUF_H
#define API_BUF_H

#include <stddef.h>
#include <string.h>

struct buf {
	char *data;
	size_t len, cap, max;
	int failed;
};

void buf_init(struct buf *b, size_t max);
void buf_release(struct buf *b);
void buf_reset(struct buf *b); /* len = 0, failed = 0, memory kept */

/* The appends, their usual case (the bytes fit) inlined below: an answer
 * makes dozens of small appends, of literals mostly, whose length and copy
 * the compiler then works out where they are written. The _grow versions
 * are the whole functions, out of line. */
int buf_append_grow(struct buf *b, const void *p, size_t n);
int buf_putc_grow(struct buf *b, char c);

static inline int buf_append(struct buf *b, const void *p, size_t n)
{
	if (!(n < b->cap - b->len) || b->failed)
		return buf_append_grow(b, p, n);
	if (n > 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

static inline int buf_puts(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

static inline int buf_putc(struct buf *b, char c)
{
	if (!(1 < b->cap - b->len) || b->failed)
		return buf_putc_grow(b, c);
	b->data[b->len] = c;
	b->len++;
	b->data[b->len] = '\0';
	return 0;
}
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends v in decimal, as "%llu" would, without printf (for hot paths). */
int buf_put_u64(struct buf *b, unsigned long long v);

/* Makes room for n more bytes and returns where they go (NULL on failure);
 * the caller writes up to n bytes there, then buf_commit()s how many. */
char *buf_reserve(struct buf *b, size_t n);
void buf_commit(struct buf *b, size_t n);

/* Hands the bytes to the caller (free() them); b is left empty. */
char *buf_detach(struct buf *b, size_t *len);

#endif
