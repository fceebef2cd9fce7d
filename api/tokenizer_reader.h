/*
 * tokenizer_reader.h: the reader under tokenizer.json's readers: a struct rd
 * that carries the JSON pointer (RFC 6901) of the value being read, so that
 * any failure names it, and the field readers that fail through it. Internal
 * to api/: tokenizer_file.c, tokenizer_parts.c and tokenizer_model.c use it;
 * nothing outside api/ includes it.
 *
 * The pointer grows as a walk descends (rd_key, rd_index return where to cut
 * back) and is cut back as it returns (rd_up). It is cut, at a byte, when
 * longer than PTR_MAX: it only names.
 *
 * Failure: every function returning int returns 0, or -1 with the message
 * "FILE: POINTER: what" (just "FILE: what" at the root) written into the
 * caller's err buffer, cut to fit; so call sites read `return rd_fail(...)`.
 * On failure the pointer is left where the failure was: a failed read is not
 * resumed.
 *
 * Ownership: a struct rd borrows its file name and err buffer; the field
 * readers borrow the JSON values (jansson's tree, the caller's). A string
 * read (rd_str, rd_dup, rd_char, rd_pattern) is a new malloc'd copy stored in
 * the spec member passed, which owns it from then on, on failure too
 * (tok_spec_release frees it).
 */
#ifndef API_TOKENIZER_READER_H
#define API_TOKENIZER_READER_H

#include <jansson.h>
#include <stddef.h>

#include "tokenizer/spec.h"
#include "tokenizer_vocab.h"

enum { PTR_MAX = 256, QUOTE_MAX = 48 };

struct rd {
	const char *file;
	char ptr[PTR_MAX]; /* the JSON pointer of the value being read */
	size_t plen;
	char *err;
	size_t errlen;
	struct tokvocab_spans pre; /* what tokvocab_read read before jansson */
};

/* A reader at the root of `file`, its messages into err[0..errlen). */
void rd_init(struct rd *r, const char *file, char *err, size_t errlen);

/* ---- where it is, and how it fails ---------------------------------------- */

/* "FILE: POINTER: message"; returns -1. */
int rd_fail(struct rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* rd_fail at member `key` of the value being read. */
int rd_fail_key(struct rd *r, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* rd_fail(r, "out of memory"). */
int rd_oom(struct rd *r);

/* Descends into member `key`, or element i; returns where to cut back. */
size_t rd_key(struct rd *r, const char *key);
size_t rd_index(struct rd *r, size_t i);

/* Cuts the pointer back to `old`, as rd_key or rd_index returned it. */
void rd_up(struct rd *r, size_t old);

/* A string for messages: at most QUOTE_MAX bytes cut at a character, then
 * "...", control bytes shown as '?'. Returns out. */
const char *rd_quote(char out[QUOTE_MAX + 4], const char *s);

/* A new malloc'd copy of s[0..n) into *out (the caller's to free). */
int rd_dup(struct rd *r, const char *s, size_t n, char **out);

/* calloc(n, size) that gives memory for n == 0 too; NULL only on failure. */
void *rd_calloc(size_t n, size_t size);

/* ---- fields ---------------------------------------------------------------- */

enum {
	F_OPTIONAL = 0,
	F_REQUIRED = 1, /* absent (or null) is an error */
	F_NULLABLE = 2, /* null means none (NULL) */
};

/* A string member: absent -> a copy of dflt (NULL stays NULL). */
int rd_str(struct rd *r, json_t *obj, const char *key, int flags, const char *dflt, char **out);

/* A boolean member: absent -> dflt, or an error when dflt < 0. */
int rd_bool(struct rd *r, json_t *obj, const char *key, int dflt, int *out);

/* An integer in [0, max] (v itself, an array's element). */
int rd_int_value(struct rd *r, json_t *v, json_int_t max, json_int_t *out);

/* An integer member in [0, max]: absent -> dflt, or an error when dflt < 0. */
int rd_int(struct rd *r, json_t *obj, const char *key, json_int_t dflt, json_int_t max,
	   json_int_t *out);

/* An array member, required; *out is borrowed from obj. */
int rd_array(struct rd *r, json_t *obj, const char *key, json_t **out);

/* One character exactly (Metaspace's replacement, Strip's content). */
int rd_char(struct rd *r, json_t *obj, const char *key, const char *dflt, char **out);

/* A `pattern`: {"String": s} or {"Regex": r}. */
int rd_pattern(struct rd *r, json_t *obj, const char *key, struct tok_pattern *p);

/* The "type" of a part, looked up by name in a table ending in {NULL}. */
struct kind_name {
	const char *name;
	int kind;
};

/* obj's "type" among table's names (obj names itself `what` in messages). */
int rd_kind(struct rd *r, json_t *obj, const char *what, const struct kind_name *table, int *kind);

/* A string member among a table's names: absent -> dflt, or an error when dflt < 0. */
int rd_enum(struct rd *r, json_t *obj, const char *key, const struct kind_name *table, int dflt,
	    int *out);

/* Reads one part j into item (a part of the size its caller gives). */
typedef int (*read_fn)(struct rd *r, json_t *j, void *item);

/* A Sequence's items: array member `key`, each read by `one` into items of
 * `size` bytes. *items and *n are set before any item is read, so that a
 * failure half way leaves the part releasable. */
int rd_sequence(struct rd *r, json_t *obj, const char *key, read_fn one, size_t size, void **items,
		size_t *n);

#endif
