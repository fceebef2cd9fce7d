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

struct buf {
	char *data;
	size_t len, cap, max;
	int failed;
};

void buf_init(struct buf *b, size_t max);
void buf_release(struct buf *b);
void buf_reset(struct buf *b); /* len = 0, failed = 0, memory kept */

int buf_append(struct buf *b, const void *p, size_t n);
int buf_puts(struct buf *b, const char *s);
int buf_putc(struct buf *b, char c);
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
