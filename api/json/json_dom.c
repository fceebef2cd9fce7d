/* json_dom.c: JSON text to jansson values, strictly (see json_dom.h). */
#include "json_dom.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

/* The text left to read, [p, end), and how many containers are open. */
struct reader {
	const char *p, *end;
	int depth;
};

/* A string's bytes: in the text itself, or (owned) unescaped into a buffer
 * the reader frees. */
struct span {
	const char *s;
	size_t len;
	char *owned;
};

static json_t *read_value(struct reader *r);

static void skip_blanks(struct reader *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
		r->p++;
}

/* Steps over c when it is the next byte. */
static int take(struct reader *r, char c)
{
	if (r->p < r->end && *r->p == c) {
		r->p++;
		return 1;
	}
	return 0;
}

/* The code point of the \u escape whose 'u' is at raw[*i] (raw_len bytes in
 * all), a surrogate pair read as one; *i steps past it. -1 for what jansson
 * rejects: a bad digit, U+0000 (no JSON_ALLOW_NUL), a lone surrogate. */
static long unicode_escape(const char *raw, size_t raw_len, size_t *i)
{
	uint32_t v, lo;

	if (raw_len - *i < 5 || utf8_hex4(raw + *i + 1, &v) != 0 || v == 0)
		return -1;
	*i += 5;
	if (v >= 0xDC00 && v <= 0xDFFF)
		return -1;
	if (v < 0xD800 || v > 0xDBFF)
		return (long)v;
	/* a high surrogate: its low half must follow as \uDC00 .. \uDFFF */
	if (raw_len - *i < 6 || raw[*i] != '\\' || raw[*i + 1] != 'u' ||
	    utf8_hex4(raw + *i + 2, &lo) != 0 || lo < 0xDC00 || lo > 0xDFFF)
		return -1;
	*i += 6;
	return 0x10000 + (((long)v - 0xD800) << 10) + ((long)lo - 0xDC00);
}

/* The escape at raw[*i] (its backslash) decoded to dst; *i steps past it.
 * Returns the bytes written, 0 for an escape jansson rejects. Every escape
 * is at least as long as what it stands for. */
static size_t unescape_one(char *dst, const char *raw, size_t raw_len, size_t *i)
{
	static const char simple[] = "\"\"\\\\//b\bf\fn\nr\rt\t";
	char e = raw[*i + 1];

	if (e == 'u') {
		long v;

		*i += 1;
		v = unicode_escape(raw, raw_len, i);
		return v < 0 ? 0 : utf8_put(dst, (uint32_t)v);
	}
	for (size_t k = 0; simple[k] != '\0'; k += 2)
		if (simple[k] == e) {
			dst[0] = simple[k + 1];
			*i += 2;
			return 1;
		}
	return 0;
}

/* raw [raw_len], a string's bytes between its quotes with at least one
 * escape, unescaped into out->owned. -1 for a bad escape. */
static int unescape(const char *raw, size_t raw_len, struct span *out)
{
	char *dst = malloc(raw_len);
	size_t n = 0, i = 0, w;

	if (dst == NULL)
		return -1;
	while (i < raw_len) {
		if (raw[i] != '\\') {
			dst[n++] = raw[i++];
			continue;
		}
		w = unescape_one(dst + n, raw, raw_len, &i);
		if (w == 0) {
			free(dst);
			return -1;
		}
		n += w;
	}
	*out = (struct span){dst, n, dst};
	return 0;
}

/* The string whose opening quote is at r->p, checked as jansson checks it
 * (no control character, valid UTF-8, escapes decoded). */
static int read_string(struct reader *r, struct span *out)
{
	const char *start = ++r->p;
	int escaped = 0;

	while (r->p < r->end && *r->p != '"') {
		unsigned char c = (unsigned char)*r->p;
		size_t n = 1;

		if (c < 0x20)
			return -1;
		if (c == '\\') {
			/* the escaped byte is checked by unescape */
			if (r->end - r->p < 2)
				return -1;
			escaped = 1;
			n = 2;
		} else if (c >= 0x80) {
			n = utf8_char((const unsigned char *)r->p, (size_t)(r->end - r->p));
			if (n == 0)
				return -1;
		}
		r->p += n;
	}
	if (r->p >= r->end)
		return -1;
	r->p++; /* the closing quote */
	if (!escaped) {
		*out = (struct span){start, (size_t)(r->p - 1 - start), NULL};
		return 0;
	}
	return unescape(start, (size_t)(r->p - 1 - start), out);
}

static json_t *read_string_value(struct reader *r)
{
	struct span s;
	json_t *v;

	if (read_string(r, &s) != 0)
		return NULL;
	v = json_stringn_nocheck(s.s, s.len);
	free(s.owned);
	return v;
}

/* Steps over digits; returns how many. */
static size_t skip_digits(struct reader *r)
{
	const char *from = r->p;

	while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
		r->p++;
	return (size_t)(r->p - from);
}

/* An integer literal of at most 18 digits, exactly; strtod for a real, as
 * jansson reads one. */
static json_t *read_number(struct reader *r)
{
	const char *start = r->p;
	int negative = take(r, '-'), real = 0;
	size_t digits = skip_digits(r), len;
	char text[JSON_DOM_MAX_NUMBER + 1], *end;
	double x;

	if (digits == 0 || (digits > 1 && start[negative] == '0'))
		return NULL; /* no digit, or a leading zero */
	if (take(r, '.')) {
		if (skip_digits(r) == 0)
			return NULL;
		real = 1;
	}
	if (take(r, 'e') || take(r, 'E')) {
		if (!take(r, '+'))
			take(r, '-');
		if (skip_digits(r) == 0)
			return NULL;
		real = 1;
	}
	len = (size_t)(r->p - start);
	if (!real) {
		json_int_t v = 0;

		if (digits > 18)
			return NULL;
		for (size_t i = (size_t)negative; i < len; i++)
			v = v * 10 + (start[i] - '0');
		return json_integer(negative ? -v : v);
	}
	if (len > JSON_DOM_MAX_NUMBER)
		return NULL;
	memcpy(text, start, len);
	text[len] = '\0';
	errno = 0;
	x = strtod(text, &end);
	if (end != text + len || (errno == ERANGE && isinf(x)))
		return NULL;
	return json_real(x);
}

/* true, false or null, spelled out in full. */
static json_t *read_literal(struct reader *r)
{
	static const struct {
		const char *word;
		size_t len;
	} words[] = {{"true", 4}, {"false", 5}, {"null", 4}};

	for (size_t k = 0; k < 3; k++)
		if ((size_t)(r->end - r->p) >= words[k].len &&
		    memcmp(r->p, words[k].word, words[k].len) == 0) {
			r->p += words[k].len;
			return k == 0 ? json_true() : k == 1 ? json_false() : json_null();
		}
	return NULL;
}

/* One "key": value member into obj; -1 for bad syntax or a duplicate key. */
static int read_member(struct reader *r, json_t *obj)
{
	struct span key;
	json_t *v = NULL;
	int ok;

	if (r->p >= r->end || *r->p != '"' || read_string(r, &key) != 0)
		return -1;
	/* a key jansson keeps: no NUL byte, not already in the object */
	ok = memchr(key.s, '\0', key.len) == NULL && json_object_getn(obj, key.s, key.len) == NULL;
	skip_blanks(r);
	if (ok && take(r, ':')) {
		skip_blanks(r);
		v = read_value(r);
	}
	ok = v != NULL && json_object_setn_new_nocheck(obj, key.s, key.len, v) == 0;
	free(key.owned);
	return ok ? 0 : -1;
}

/* The members of an object, its '{' already taken: (member (',' member)*)? '}' */
static json_t *read_object(struct reader *r)
{
	json_t *obj = json_object();

	skip_blanks(r);
	if (obj == NULL || take(r, '}'))
		return obj;
	for (;;) {
		if (read_member(r, obj) != 0)
			break;
		skip_blanks(r);
		if (take(r, '}'))
			return obj;
		if (!take(r, ','))
			break;
		skip_blanks(r);
	}
	json_decref(obj);
	return NULL;
}

/* The elements of an array, its '[' already taken. */
static json_t *read_array(struct reader *r)
{
	json_t *arr = json_array();

	skip_blanks(r);
	if (arr == NULL || take(r, ']'))
		return arr;
	for (;;) {
		json_t *v = read_value(r);

		if (v == NULL || json_array_append_new(arr, v) != 0)
			break;
		skip_blanks(r);
		if (take(r, ']'))
			return arr;
		if (!take(r, ','))
			break;
		skip_blanks(r);
	}
	json_decref(arr);
	return NULL;
}

/* A container one level deeper, within JSON_DOM_MAX_DEPTH. */
static json_t *read_container(struct reader *r, json_t *(*read)(struct reader *))
{
	json_t *v;

	if (++r->depth > JSON_DOM_MAX_DEPTH)
		return NULL;
	r->p++; /* '{' or '[' */
	v = read(r);
	r->depth--;
	return v;
}

/* The value at r->p (blanks before it already skipped). */
static json_t *read_value(struct reader *r)
{
	if (r->p >= r->end)
		return NULL;
	switch (*r->p) {
	case '{':
		return read_container(r, read_object);
	case '[':
		return read_container(r, read_array);
	case '"':
		return read_string_value(r);
	default:
		if (*r->p == '-' || (*r->p >= '0' && *r->p <= '9'))
			return read_number(r);
		return read_literal(r);
	}
}

json_t *json_dom_parse(const char *text, size_t len)
{
	struct reader r = {text, text + len, 0};
	json_t *root;

	skip_blanks(&r);
	if (r.p >= r.end || (*r.p != '{' && *r.p != '['))
		return NULL;
	root = read_value(&r);
	skip_blanks(&r);
	if (root != NULL && r.p != r.end) {
		json_decref(root);
		return NULL;
	}
	return root;
}
