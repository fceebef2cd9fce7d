/*
 * fastjson_ctx.h: what the files of fastjson (fastjson.h) share: the scan's
 * state (struct scan; a struct frame for each open container), the
 * placeholder's text, and the steps one file takes for another. Internal to
 * api/json/: only fastjson.c (the grammar walk and fastjson_scan),
 * fastjson_row.c (rows of numbers read into the pool), fastjson_copy.c (the
 * copy of the body with its placeholders) and fastjson_pool.c (the pool and
 * its public accessors) include it.
 *
 * What the row loop calls on every number or blank is here as static inline
 * (skip_blank, not_a_row), so splitting the files costs the loop no call.
 *
 * Failure: out of memory is never an error (fastjson.h). A function returning
 * int returns 0, or -1 with nothing changed; a row that cannot be pooled
 * leaves the pool (not_a_row) and stays in the copy for jansson.
 *
 * Ownership: a struct scan borrows the body, the fields and the pool; it owns
 * the copy (sc->copy) until fj_copy_finish hands it over or frees it. What is
 * pooled belongs to the pool, so to fastjson_scan's caller (fastjson.h).
 */
#ifndef API_JSON_FASTJSON_CTX_H
#define API_JSON_FASTJSON_CTX_H

#include <stddef.h>

#include "api/json/fastjson.h"

struct decfloat_number; /* common/decfloat.h */

enum { FIELD_PATH_MAX = 192 };

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

static inline size_t skip_blank(const char *s, size_t i, size_t n)
{
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	return i;
}

/* f is no row after all: its numbers leave the pool. */
static inline void not_a_row(struct scan *sc, struct frame *f)
{
	if (f->row)
		sc->pool->n_values = f->mark;
	f->row = 0;
}

/* ---- fastjson_pool.c ----------------------------------------------------- */

/* Grows *p (of *cap elements of size) to hold need, at least doubling;
 * 0, or -1 out of memory (*p and *cap unchanged). */
int fj_grow(void **p, size_t *cap, size_t need, size_t size);

/* ---- fastjson_row.c ------------------------------------------------------ */

/* Reads the numbers of f, a possible row just opened (sc->i after its '['),
 * into the pool for as long as the row holds plain numbers; returns with
 * f->expect and sc->i saying where the grammar walk goes on. */
void fj_scan_row(struct scan *sc, struct frame *f);

/* The number x (its token at sc->i, n bytes) joins the row f, or f is no row. */
void fj_pool_number(struct scan *sc, struct frame *f, const struct decfloat_number *x, size_t n);

/* ---- fastjson_copy.c ----------------------------------------------------- */

/* The row f, closing at sc->i inside the array parent, becomes an entry and a
 * placeholder: 0, or -1 out of memory (f is then no row). */
int fj_commit_row(struct scan *sc, struct frame *parent, struct frame *f);

/* f, an array closing at sc->i, holds only pooled rows of one length, at
 * least 2 of them (f->matrix): they become one matrix entry and one
 * placeholder. Out of memory, the rows stay as they are. */
void fj_commit_matrix(struct scan *sc, struct frame *f);

/* The string at sc->i, the value of a tensor object's "base64" member,
 * decoded into the pool and replaced by a placeholder (1, sc->i past it), or
 * left to be read as any string (0, nothing changed). */
int fj_pool_base64(struct scan *sc);

/* The copy, finished with the rest of the body and a NUL, given to the caller
 * (*copy_len bytes); NULL, the copy freed, when nothing was pooled or out of
 * memory (the pool then released: nothing pooled after all). */
char *fj_copy_finish(struct scan *sc, size_t *copy_len);

#endif
