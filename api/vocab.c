/*
 * vocab.c: vocabulary files, one token a line or a JSON object (see vocab.h).
 *
 * The line format is read in two passes: lines_check walks the lines once,
 * validating each and counting them, so that the count is compared with the
 * table's rows before anything is allocated; lines_split then copies the
 * file once and cuts it at the line ends. Duplicate lines are found by
 * sorting (token, id) pairs, which needs no hash table of our own (the
 * registry indexes the tokens after us, in index_vocab). The JSON format is
 * jansson's, with duplicate keys (tokens) rejected by the parser itself.
 *
 * Every failure leaves v zeroed: api_vocab_parse releases what it allocated.
 */
#include "vocab.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

enum { QUOTE_MAX = 48 }; /* bytes of a token shown in a message */

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Writes the message and returns -1, so that call sites read `return fail(...)`. */
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* A token for messages: at most QUOTE_MAX bytes cut at a character
 * boundary, then "..."; control bytes shown as '?'. Returns out. */
static const char *quote(char out[QUOTE_MAX + 4], const char *s, size_t len)
{
	size_t n = len;

	if (n > QUOTE_MAX) {
		n = QUOTE_MAX;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--; /* s[n] starts a character: s[0..n) holds whole ones */
	}
	for (size_t i = 0; i < n; i++)
		out[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	out[n] = '\0';
	if (n < len)
		strcat(out + n, "...");
	return out;
}

static int count_mismatch(const char *file, size_t n, size_t rows, char *err, size_t errlen)
{
	return fail(err, errlen,
		    "%s: %zu token%s, but the model's embedding table has %zu rows "
		    "(one token per row, in id order)",
		    file, n, n == 1 ? "" : "s", rows);
}

/* ---- one token a line --------------------------------------------------- */

/* The line at b[at..len): its token's length (without "\n" or "\r\n") in
 * *tok_len; returns where the next line starts (len after the last). */
static size_t next_line(const char *b, size_t len, size_t at, size_t *tok_len)
{
	const char *nl = memchr(b + at, '\n', len - at);
	size_t end = nl != NULL ? (size_t)(nl - b) : len;

	*tok_len = end - at;
	if (nl != NULL && *tok_len > 0 && b[end - 1] == '\r')
		(*tok_len)--;
	return nl != NULL ? end + 1 : len;
}

/* Checks the token of line `line` (1-based): not empty, no NUL, no CR, UTF-8. */
static int line_check(const char *s, size_t n, size_t line, const char *file, char *err,
		      size_t errlen)
{
	size_t k;

	if (n == 0)
		return fail(err, errlen, "%s:%zu: empty token (id %zu)", file, line, line - 1);
	for (size_t i = 0; i < n; i += k) {
		const unsigned char *c = (const unsigned char *)s + i;

		if (*c == '\0')
			return fail(err, errlen, "%s:%zu: NUL byte at column %zu", file, line,
				    i + 1);
		if (*c == '\r')
			return fail(err, errlen,
				    "%s:%zu: carriage return at column %zu (a line ends in \\n "
				    "or \\r\\n)",
				    file, line, i + 1);
		k = utf8_char(c, n - i);
		if (k == 0)
			return fail(err, errlen,
				    "%s:%zu: invalid UTF-8 at column %zu (byte 0x%02x)", file, line,
				    i + 1, *c);
	}
	return 0;
}

/* Pass 1: checks every line; *n = the number of lines (tokens). */
static int lines_check(const char *b, size_t len, const char *file, size_t *n, char *err,
		       size_t errlen)
{
	size_t tok_len;

	*n = 0;
	for (size_t at = 0; at < len; (*n)++) {
		size_t next = next_line(b, len, at, &tok_len);

		if (line_check(b + at, tok_len, *n + 1, file, err, errlen) != 0)
			return -1;
		at = next;
	}
	return 0;
}

/* Pass 2: copies the file to v->store and points v->tokens[id] at line id,
 * cut at its line end. v->tokens has room for every line. */
static int lines_split(struct api_vocab *v, const char *b, size_t len)
{
	size_t tok_len, id = 0;

	/* len <= API_VOCAB_FILE_MAX, so len + 1 does not overflow */
	v->store = malloc(len + 1);
	if (v->store == NULL)
		return -1;
	memcpy(v->store, b, len);
	for (size_t at = 0; at < len; id++) {
		size_t next = next_line(b, len, at, &tok_len);

		v->store[at + tok_len] = '\0';
		v->tokens[id] = v->store + at;
		at = next;
	}
	v->n = id;
	return 0;
}

struct keyed {
	const char *s;
	size_t id;
};

/* By token, then by id: equal tokens sit together, their first line first. */
static int keyed_cmp(const void *pa, const void *pb)
{
	const struct keyed *a = pa, *b = pb;
	int c = strcmp(a->s, b->s);

	if (c != 0)
		return c;
	return a->id < b->id ? -1 : a->id > b->id;
}

/*
 * Finds the token that repeats earliest in the file: *first and *second are
 * the ids of its first two lines. Returns 1 when there is one, 0 when every
 * token is distinct, -1 out of memory.
 */
static int find_duplicate(const struct api_vocab *v, size_t *first, size_t *second)
{
	struct keyed *k;
	int found = 0;

	if (v->n > SIZE_MAX / sizeof *k)
		return -1;
	k = malloc(v->n * sizeof *k);
	if (k == NULL)
		return -1;
	for (size_t i = 0; i < v->n; i++)
		k[i] = (struct keyed){v->tokens[i], i};
	qsort(k, v->n, sizeof *k, keyed_cmp);
	for (size_t i = 1; i < v->n; i++) {
		if (strcmp(k[i - 1].s, k[i].s) != 0 || (found && k[i].id >= *second))
			continue;
		*first = k[i - 1].id;
		*second = k[i].id;
		found = 1;
	}
	free(k);
	return found;
}

static int lines_parse(struct api_vocab *v, const char *b, size_t len, size_t rows,
		       const char *file, char *err, size_t errlen)
{
	char q[QUOTE_MAX + 4];
	size_t n, first = 0, second = 0;
	int dup;

	if (lines_check(b, len, file, &n, err, errlen) != 0)
		return -1;
	if (n != rows)
		return count_mismatch(file, n, rows, err, errlen);
	/* calloc checks rows * sizeof(char *) for overflow itself; said here too */
	if (rows > SIZE_MAX / sizeof *v->tokens)
		return fail(err, errlen, "%s: %zu tokens are too many", file, rows);
	v->tokens = calloc(rows, sizeof *v->tokens);
	if (v->tokens == NULL || lines_split(v, b, len) != 0)
		return fail(err, errlen, "%s: out of memory for %zu tokens", file, rows);
	dup = find_duplicate(v, &first, &second);
	if (dup < 0)
		return fail(err, errlen, "%s: out of memory for %zu tokens", file, rows);
	if (dup > 0)
		return fail(err, errlen,
			    "%s:%zu: duplicate token '%s' (id %zu), first on line %zu (id %zu)",
			    file, second + 1,
			    quote(q, v->tokens[second], strlen(v->tokens[second])), second,
			    first + 1, first);
	return 0;
}

/* ---- a JSON object {"token": id} ------------------------------------------ */

/* Sizes v for the object's rows tokens and their bytes (each key and a NUL). */
static int json_alloc(struct api_vocab *v, json_t *obj, size_t rows, const char *file, char *err,
		      size_t errlen)
{
	const char *key;
	json_t *value;
	size_t total = 0;

	json_object_foreach(obj, key, value)
	{
		size_t need = strlen(key) + 1;

		if (total > SIZE_MAX - need)
			return fail(err, errlen, "%s: the tokens' bytes overflow", file);
		total += need;
	}
	if (rows > SIZE_MAX / sizeof *v->tokens)
		return fail(err, errlen, "%s: %zu tokens are too many", file, rows);
	v->tokens = calloc(rows, sizeof *v->tokens);
	v->store = malloc(total > 0 ? total : 1);
	if (v->tokens == NULL || v->store == NULL)
		return fail(err, errlen, "%s: out of memory for %zu tokens", file, rows);
	return 0;
}

/* Checks one "token": id pair; 0 with *id set, or -1 with the message. */
static int json_pair(const struct api_vocab *v, const char *key, const json_t *value, size_t rows,
		     const char *file, size_t *id, char *err, size_t errlen)
{
	char q[QUOTE_MAX + 4], q2[QUOTE_MAX + 4];
	size_t klen = strlen(key);
	json_int_t i;

	if (!json_is_integer(value))
		return fail(err, errlen, "%s: token '%s': the id is not an integer", file,
			    quote(q, key, klen));
	i = json_integer_value(value);
	if (i < 0 || (unsigned long long)i >= rows)
		return fail(err, errlen, "%s: token '%s': id %lld is outside 0..%zu", file,
			    quote(q, key, klen), (long long)i, rows - 1);
	*id = (size_t)i;
	if (klen == 0)
		return fail(err, errlen, "%s: empty token \"\" (id %zu)", file, *id);
	if (v->tokens[*id] != NULL)
		return fail(err, errlen, "%s: id %zu is given to both '%s' and '%s'", file, *id,
			    quote(q, v->tokens[*id], strlen(v->tokens[*id])), quote(q2, key, klen));
	return 0;
}

/* Places every token at its id. The object has exactly rows keys, so rows
 * distinct ids in [0, rows) fill every slot. */
static int json_place(struct api_vocab *v, json_t *obj, size_t rows, const char *file, char *err,
		      size_t errlen)
{
	const char *key;
	json_t *value;
	size_t at = 0, id = 0;

	json_object_foreach(obj, key, value)
	{
		size_t need = strlen(key) + 1;

		if (json_pair(v, key, value, rows, file, &id, err, errlen) != 0)
			return -1;
		memcpy(v->store + at, key, need);
		v->tokens[id] = v->store + at;
		at += need;
	}
	v->n = rows;
	return 0;
}

static int json_parse(struct api_vocab *v, const char *b, size_t len, size_t rows, const char *file,
		      char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root = json_loadb(b, len, JSON_REJECT_DUPLICATES, &jerr);
	int rc = -1;

	if (root == NULL)
		return fail(err, errlen, "%s:%d:%d: %s", file, jerr.line, jerr.column, jerr.text);
	if (!json_is_object(root)) {
		fail(err, errlen, "%s: expected a JSON object {\"token\": id, ...}", file);
		goto out;
	}
	if (json_object_size(root) != rows) {
		count_mismatch(file, json_object_size(root), rows, err, errlen);
		goto out;
	}
	if (json_alloc(v, root, rows, file, err, errlen) != 0 ||
	    json_place(v, root, rows, file, err, errlen) != 0)
		goto out;
	rc = 0;
out:
	json_decref(root);
	return rc;
}

/* ---- the two together ----------------------------------------------------- */

/* The first byte that is not ASCII whitespace, or '\0' when there is none. */
static char first_significant(const char *b, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r')
			return b[i];
	return '\0';
}

int api_vocab_parse(struct api_vocab *v, const char *bytes, size_t len, size_t rows,
		    const char *file, char *err, size_t errlen)
{
	int rc;

	memset(v, 0, sizeof *v);
	if (rows == 0)
		return fail(err, errlen,
			    "%s: the model has no embedding table (vocab size 0) for a "
			    "vocabulary to index",
			    file);
	if (len > API_VOCAB_FILE_MAX)
		return fail(err, errlen, "%s: %zu bytes, over the 64 MiB limit", file, len);
	if (len >= 3 && memcmp(bytes, "\xef\xbb\xbf", 3) == 0)
		return fail(err, errlen,
			    "%s: starts with a UTF-8 byte order mark; save it without one", file);
	if (first_significant(bytes, len) == '{')
		rc = json_parse(v, bytes, len, rows, file, err, errlen);
	else
		rc = lines_parse(v, bytes, len, rows, file, err, errlen);
	if (rc != 0)
		api_vocab_release(v);
	return rc;
}

void api_vocab_release(struct api_vocab *v)
{
	if (v == NULL)
		return;
	free(v->tokens);
	free(v->store);
	memset(v, 0, sizeof *v);
}
