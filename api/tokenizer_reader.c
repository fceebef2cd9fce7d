/*
 * tokenizer_reader.c: the reader under tokenizer.json's readers (see
 * tokenizer_reader.h): the JSON pointer of the value being read, the
 * messages that name it, and the field readers, each checking its value's
 * type and range before anything is stored.
 *
 * Ownership: as the header says; a string read is stored in the member
 * passed, which owns it on failure too.
 */
#include "tokenizer_reader.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

/* ---- the reader: where it is, and how it fails ---------------------------- */

static int rd_vfail(struct rd *r, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static int rd_vfail(struct rd *r, const char *fmt, va_list ap)
{
	int n;

	if (r->plen > 0)
		n = snprintf(r->err, r->errlen, "%s: %s: ", r->file, r->ptr);
	else
		n = snprintf(r->err, r->errlen, "%s: ", r->file);
	if (n >= 0 && (size_t)n < r->errlen)
		vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
	return -1;
}

/* "FILE: POINTER: message"; returns -1, so call sites read `return rd_fail(...)`. */
int rd_fail(struct rd *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rd_vfail(r, fmt, ap);
	va_end(ap);
	return -1;
}

/* Appends s[0..n) to the pointer, cut (at a byte; it only names) when full. */
static void rd_append(struct rd *r, const char *s, size_t n)
{
	for (size_t i = 0; i < n && r->plen + 1 < PTR_MAX; i++)
		r->ptr[r->plen++] = s[i];
	r->ptr[r->plen] = '\0';
}

/* Descends into member `key` (escaped per RFC 6901); returns where to cut back. */
size_t rd_key(struct rd *r, const char *key)
{
	size_t old = r->plen;

	rd_append(r, "/", 1);
	for (const char *k = key; *k != '\0'; k++) {
		if (*k == '~')
			rd_append(r, "~0", 2);
		else if (*k == '/')
			rd_append(r, "~1", 2);
		else
			rd_append(r, k, 1);
	}
	return old;
}

/* Descends into element i; returns where to cut back. */
size_t rd_index(struct rd *r, size_t i)
{
	char digits[24];
	size_t old = r->plen;
	int n = snprintf(digits, sizeof digits, "/%zu", i);

	rd_append(r, digits, (size_t)n);
	return old;
}

void rd_up(struct rd *r, size_t old)
{
	r->plen = old;
	r->ptr[old] = '\0';
}

/* rd_fail at member `key` of the value being read. */
int rd_fail_key(struct rd *r, const char *key, const char *fmt, ...)
{
	va_list ap;

	rd_key(r, key);
	va_start(ap, fmt);
	rd_vfail(r, fmt, ap);
	va_end(ap);
	return -1;
}

/* A string for messages: at most QUOTE_MAX bytes cut at a character, then
 * "...", control bytes shown as '?'. Returns out. */
const char *rd_quote(char out[QUOTE_MAX + 4], const char *s)
{
	size_t len = strlen(s), n = len;

	if (n > QUOTE_MAX) {
		n = QUOTE_MAX;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	for (size_t i = 0; i < n; i++)
		out[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	out[n] = '\0';
	if (n < len)
		strcat(out + n, "...");
	return out;
}

int rd_oom(struct rd *r)
{
	return rd_fail(r, "out of memory");
}

/* A malloc'd copy of s[0..n) (jansson has refused NUL bytes already). */
int rd_dup(struct rd *r, const char *s, size_t n, char **out)
{
	*out = malloc(n + 1);
	if (*out == NULL)
		return rd_oom(r);
	memcpy(*out, s, n);
	(*out)[n] = '\0';
	return 0;
}

/* calloc(n, size) that gives memory for n == 0 too; NULL only on failure. */
void *rd_calloc(size_t n, size_t size)
{
	return calloc(n > 0 ? n : 1, size);
}

/* ---- fields ---------------------------------------------------------------- */

/* A string member: absent -> a copy of dflt (NULL stays NULL). */
int rd_str(struct rd *r, json_t *obj, const char *key, int flags, const char *dflt, char **out)
{
	json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (v == NULL && (flags & F_REQUIRED))
		return rd_fail_key(r, key, "missing (expected a string)");
	if (v == NULL)
		return dflt != NULL ? rd_dup(r, dflt, strlen(dflt), out) : 0;
	if (json_is_null(v) && (flags & F_NULLABLE))
		return 0;
	if (!json_is_string(v))
		return rd_fail_key(r, key, "expected a string%s",
				   flags & F_NULLABLE ? " or null" : "");
	return rd_dup(r, json_string_value(v), json_string_length(v), out);
}

/* A boolean member: absent -> dflt, or an error when dflt < 0. */
int rd_bool(struct rd *r, json_t *obj, const char *key, int dflt, int *out)
{
	json_t *v = json_object_get(obj, key);

	if (v == NULL && dflt < 0)
		return rd_fail_key(r, key, "missing (expected true or false)");
	if (v == NULL) {
		*out = dflt;
		return 0;
	}
	if (!json_is_boolean(v))
		return rd_fail_key(r, key, "expected true or false");
	*out = json_is_true(v);
	return 0;
}

/* An integer in [0, max]. */
int rd_int_value(struct rd *r, json_t *v, json_int_t max, json_int_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max)
		return rd_fail(r, "expected an integer in [0, %lld]", (long long)max);
	*out = json_integer_value(v);
	return 0;
}

/* An integer member in [0, max]: absent -> dflt, or an error when dflt < 0. */
int rd_int(struct rd *r, json_t *obj, const char *key, json_int_t dflt, json_int_t max,
	   json_int_t *out)
{
	json_t *v = json_object_get(obj, key);
	size_t up;

	if (v == NULL && dflt < 0)
		return rd_fail_key(r, key, "missing (expected an integer)");
	if (v == NULL) {
		*out = dflt;
		return 0;
	}
	up = rd_key(r, key);
	if (rd_int_value(r, v, max, out) != 0)
		return -1;
	rd_up(r, up);
	return 0;
}

/* An array member, required. */
int rd_array(struct rd *r, json_t *obj, const char *key, json_t **out)
{
	*out = json_object_get(obj, key);
	if (*out == NULL)
		return rd_fail_key(r, key, "missing (expected an array)");
	if (!json_is_array(*out))
		return rd_fail_key(r, key, "expected an array");
	return 0;
}

/* One character exactly (Metaspace's replacement, Strip's content). */
int rd_char(struct rd *r, json_t *obj, const char *key, const char *dflt, char **out)
{
	if (rd_str(r, obj, key, dflt != NULL ? F_OPTIONAL : F_REQUIRED, dflt, out) != 0)
		return -1;
	if (utf8_char((const unsigned char *)*out, strlen(*out)) != strlen(*out) ||
	    **out == '\0')
		return rd_fail_key(r, key, "expected one character");
	return 0;
}

/* A `pattern`: {"String": s} or {"Regex": r}. */
int rd_pattern(struct rd *r, json_t *obj, const char *key, struct tok_pattern *p)
{
	json_t *v = json_object_get(obj, key), *s, *re;
	size_t up;

	if (v == NULL)
		return rd_fail_key(r, key, "missing (expected {\"String\": ...} or {\"Regex\": ...})");
	up = rd_key(r, key);
	s = json_object_get(v, "String");
	re = json_object_get(v, "Regex");
	if (!json_is_object(v) || json_object_size(v) != 1 || (s == NULL && re == NULL))
		return rd_fail(r, "expected {\"String\": ...} or {\"Regex\": ...}");
	p->is_regex = re != NULL;
	if (rd_str(r, v, p->is_regex ? "Regex" : "String", F_REQUIRED, NULL, &p->text) != 0)
		return -1;
	rd_up(r, up);
	return 0;
}

/* The "type" of a part, looked up by name in a table ending in {NULL}. */
int rd_kind(struct rd *r, json_t *obj, const char *what, const struct kind_name *table, int *kind)
{
	char q[QUOTE_MAX + 4];
	json_t *t;

	if (!json_is_object(obj))
		return rd_fail(r, "expected a %s object or null", what);
	t = json_object_get(obj, "type");
	if (t == NULL)
		return rd_fail(r, "missing \"type\" of the %s", what);
	if (!json_is_string(t))
		return rd_fail_key(r, "type", "expected a string");
	for (const struct kind_name *k = table; k->name != NULL; k++) {
		if (strcmp(k->name, json_string_value(t)) == 0) {
			*kind = k->kind;
			return 0;
		}
	}
	return rd_fail(r, "unsupported %s type '%s'", what, rd_quote(q, json_string_value(t)));
}

/* A string among a table's names. */
int rd_enum(struct rd *r, json_t *obj, const char *key, const struct kind_name *table, int dflt,
	    int *out)
{
	json_t *v = json_object_get(obj, key);
	char q[QUOTE_MAX + 4];

	if (v == NULL && dflt < 0)
		return rd_fail_key(r, key, "missing");
	if (v == NULL) {
		*out = dflt;
		return 0;
	}
	if (!json_is_string(v))
		return rd_fail_key(r, key, "expected a string");
	for (const struct kind_name *k = table; k->name != NULL; k++) {
		if (strcmp(k->name, json_string_value(v)) == 0) {
			*out = k->kind;
			return 0;
		}
	}
	return rd_fail_key(r, key, "unsupported value '%s'", rd_quote(q, json_string_value(v)));
}

/* A Sequence's items: array member `key`, each read by `one` into items of
 * `size` bytes. *items and *n are set before any item is read, so that a
 * failure half way leaves the part releasable. */
int rd_sequence(struct rd *r, json_t *obj, const char *key, read_fn one, size_t size, void **items,
		size_t *n)
{
	json_t *arr, *v;
	size_t i, up, at;

	if (rd_array(r, obj, key, &arr) != 0)
		return -1;
	*items = rd_calloc(json_array_size(arr), size);
	if (*items == NULL)
		return rd_oom(r);
	*n = json_array_size(arr);
	up = rd_key(r, key);
	json_array_foreach(arr, i, v)
	{
		at = rd_index(r, i);
		if (one(r, v, (char *)*items + i * size) != 0)
			return -1;
		rd_up(r, at);
	}
	rd_up(r, up);
	return 0;
}

/* ---- a new reader ---------------------------------------------------------- */

void rd_init(struct rd *r, const char *file, char *err, size_t errlen)
{
	r->file = file;
	r->ptr[0] = '\0';
	r->plen = 0;
	r->err = err;
	r->errlen = errlen;
	memset(&r->pre, 0, sizeof r->pre);
}
