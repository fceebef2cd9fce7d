/* json_read.c: strict field readers (see json_read.h). */
#include "json_read.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fastjson.h"
#include "json_dom.h"
#include "json_tensor.h"
#include "json_utf8.h"
#include "json_where.h"

const char *req_child(char *dst, const char *ptr, const char *key)
{
	api_ptr_key(dst, API_PTR_MAX, ptr, key);
	return dst;
}

/* json_dom_parse's values where it takes the text, else jansson's (with
 * its error in *jerr): the same either way (json_dom.h). */
static json_t *load(const char *text, size_t len, json_error_t *jerr)
{
	json_t *root = json_dom_parse(text, len);

	return root ? root : json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, jerr);
}

/* jansson's words for a lone UTF-16 surrogate escape, before the escape */
static const char surrogate_said[] = "invalid Unicode '";
enum { SURROGATE_SAID = sizeof surrogate_said - 1 };

/* A string escape jansson refuses though the JSON is valid: a lone UTF-16
 * surrogate ("invalid Unicode '\uD800'"). */
static int lone_surrogate(const json_error_t *jerr)
{
	return json_error_code(jerr) == json_error_invalid_syntax &&
	       strncmp(jerr->text, surrogate_said, SURROGATE_SAID) == 0;
}

/* A value jansson cannot hold, in JSON valid up to it (json_where.h): a
 * number past a double, or a lone surrogate. 0 with err a
 * 422 at the value's pointer (what follows is not read: a text cut after
 * it is told of the value first); -1 when it is something else, or cannot
 * be placed (err untouched). */
static int refuse_value(const char *body, size_t len, const json_error_t *jerr,
			struct api_error *err)
{
	int number = json_error_code(jerr) == json_error_numeric_overflow;
	char ptr[API_PTR_MAX];
	size_t start, n;

	if ((!number && !lone_surrogate(jerr)) || jerr->position <= 0 ||
	    json_pointer_at(body, len, (size_t)jerr->position, ptr, &start) != 0)
		return -1;
	n = (size_t)jerr->position - start;
	if (!number) {
		const char *escape = jerr->text + SURROGATE_SAID, *quote = strchr(escape, '\'');

		api_fail(err, API_E_INVALID_UTF8, ptr,
			 "the string holds %.*s: a UTF-16 surrogate without its pair, which "
			 "is no character (line %d, column %d)",
			 quote != NULL ? (int)(quote - escape) : 6, escape, jerr->line,
			 jerr->column);
		return 0;
	}
	/* an integer literal past 64 bits was read as a double (parsed) */
	api_fail(err, API_E_OUT_OF_RANGE, ptr, "%.*s%s is past the range of a double",
		 n > 40 ? 40 : (int)n, body + start, n > 40 ? "..." : "");
	return 0;
}

/* Two bodies that do not parse, said in words a person acts on rather than
 * as jansson's token at line 1: an empty body (a client that forgot to send
 * one) and a UTF-8 byte order mark before the JSON (an editor's; RFC 8259
 * section 8.1 forbids sending one). 1 with err set, else 0. */
static int refuse_unreadable(const char *body, size_t len, struct api_error *err)
{
	size_t blank = 0;

	while (blank < len && strchr(" \t\r\n", body[blank]) != NULL && body[blank] != '\0')
		blank++;
	if (blank == len) {
		api_fail(err, API_E_MALFORMED_JSON, "",
			 len == 0 ? "the body is empty: send the request as a JSON object"
				  : "the body holds only white space: send the request as a "
				    "JSON object");
		return 1;
	}
	if (len >= 3 && memcmp(body, "\xef\xbb\xbf", 3) == 0) {
		api_fail(err, API_E_MALFORMED_JSON, "",
			 "the body starts with a UTF-8 byte order mark (bytes EF BB BF): send "
			 "the JSON without it");
		return 1;
	}
	return 0;
}

/* jansson's words for an integer literal past 64 bits: "too big integer",
 * "too big negative integer" (a real past a double is "real number
 * overflow") */
static int integer_overflow(const json_error_t *jerr)
{
	return json_error_code(jerr) == json_error_numeric_overflow &&
	       strstr(jerr->text, "too big") != NULL;
}

/* The digits of an integer literal past int64 ("-" aside): more than 19, or
 * 19 above 2^63 - 1 (2^63 when negative). */
static int past_int64_digits(const char *d, size_t n, int negative)
{
	return n > 19 ||
	       (n == 19 && memcmp(d, negative ? "9223372036854775808" : "9223372036854775807",
				  19) > 0);
}

/* The length of the number token at s (at most end - s), and in *big
 * whether it is an integer literal past int64. */
static size_t number_token(const char *s, const char *end, int *big)
{
	const char *digits = s + (*s == '-'), *p = digits;

	while (p < end && *p >= '0' && *p <= '9')
		p++;
	*big = p > digits && (p == end || (*p != '.' && *p != 'e' && *p != 'E')) &&
	       past_int64_digits(digits, (size_t)(p - digits), *s == '-');
	while (p < end && ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' ||
			   *p == '+' || *p == '-'))
		p++;
	return (size_t)(p - s);
}

/*
 * An integer literal past 64 bits is a number JSON allows and JavaScript
 * writes (JSON.stringify(-1e20) is "-100000000000000000000"): read as the
 * double nearest it, as JavaScript and Python's float() read it. jansson
 * takes no such literal (and JSON_DECODE_INT_AS_REAL would make every
 * integer a double, rounding those past 2^53), so a body that holds one is
 * read again from a copy in which each such literal, and only it, has "e0"
 * after it: a real of the same value. Outside strings, one pass. at[]
 * holds where each "e0" went (the body's offsets), for where_in_body.
 * NULL when out of memory.
 */
static char *big_ints_as_reals(const char *body, size_t len, size_t *copy_len, size_t **at,
			       size_t *n_at)
{
	const char *s = body, *end = body + len;
	size_t cap = 0, k = 0, n = 0;
	char *copy;
	int in_string = 0, big;

	*at = NULL;
	*n_at = 0;
	while (s < end) {
		if (in_string) {
			if (*s == '\\' && s + 1 < end)
				s++; /* the escaped byte, a quote too */
			else if (*s == '"')
				in_string = 0;
			s++;
		} else if (*s == '"') {
			in_string = 1;
			s++;
		} else if (*s == '-' || (*s >= '0' && *s <= '9')) {
			s += number_token(s, end, &big);
			if (big && n == cap) {
				size_t *grown = realloc(*at, (cap = cap ? 2 * cap : 8) * sizeof **at);

				if (grown == NULL)
					goto fail;
				*at = grown;
			}
			if (big)
				(*at)[n++] = (size_t)(s - body);
		} else {
			s++;
		}
	}
	copy = malloc(len + 2 * n + 1);
	if (copy == NULL)
		goto fail;
	for (size_t i = 0, from = 0; i <= n; i++) {
		size_t to = i < n ? (*at)[i] : len;

		memcpy(copy + k, body + from, to - from);
		k += to - from;
		if (i < n)
			copy[k++] = 'e', copy[k++] = '0';
		from = to;
	}
	copy[k] = '\0';
	*copy_len = k;
	*n_at = n;
	return copy;
fail:
	free(*at);
	*at = NULL;
	return NULL;
}

/* jerr's place in the copy as the body's: each "e0" before it, two bytes
 * (and columns, on its line) fewer. */
static void where_in_body(json_error_t *jerr, const char *copy, const size_t *at, size_t n_at)
{
	size_t pos = jerr->position > 0 ? (size_t)jerr->position : 0, before = 0, on_line = 0;
	size_t line_start = pos;

	while (line_start > 0 && copy[line_start - 1] != '\n')
		line_start--;
	for (size_t i = 0; i < n_at; i++) {
		size_t in_copy = at[i] + 2 * i; /* where the i-th "e0" begins in the copy */

		if (in_copy >= pos)
			break;
		before++;
		on_line += in_copy >= line_start;
	}
	jerr->position -= (int)(2 * before);
	jerr->column -= (int)(2 * on_line);
}

/* The body read with its integer literals past 64 bits as reals; NULL with
 * jerr (placed in the body) when it still does not parse, or with jerr
 * untouched when out of memory. */
static json_t *load_big_ints_as_reals(const char *body, size_t len, json_error_t *jerr)
{
	size_t copy_len, *at, n_at;
	char *copy = big_ints_as_reals(body, len, &copy_len, &at, &n_at);
	json_t *root = NULL;

	if (copy == NULL)
		return NULL;
	if (n_at > 0) {
		root = load(copy, copy_len, jerr);
		if (root == NULL)
			where_in_body(jerr, copy, at, n_at);
	}
	free(copy);
	free(at);
	return root;
}

/* The checks after either reader: a syntax error (*root NULL) is 400, said
 * as the body's first byte that is not UTF-8 when there is one
 * (json_utf8.h), else as jerr says where, but for a value jansson cannot
 * hold (422 at its pointer); anything but an object 422. */
static int parsed(const char *body, size_t len, json_t **root, json_error_t *jerr,
		  struct api_error *err)
{
	if (*root == NULL && integer_overflow(jerr))
		*root = load_big_ints_as_reals(body, len, jerr);
	if (*root == NULL) {
		if (req_refuse_not_utf8(body, len, err) != 0 || refuse_unreadable(body, len, err) ||
		    refuse_value(body, len, jerr, err) == 0)
			return -1;
		if (json_error_code(jerr) == json_error_null_character)
			return api_fail(err, API_E_MALFORMED_JSON, "",
					"a string holds \\u0000 (NUL), which attnd does not "
					"accept, at line %d, column %d",
					jerr->line, jerr->column);
		return api_fail(err,
				strstr(jerr->text, "duplicate") != NULL ? API_E_DUPLICATE_KEY
									: API_E_MALFORMED_JSON,
				"", "%s at line %d, column %d", jerr->text, jerr->line, jerr->column);
	}
	if (!json_is_object(*root)) {
		json_decref(*root);
		*root = NULL;
		return api_fail(err, API_E_INVALID_TYPE, "", "the request must be a JSON object");
	}
	return 0;
}

int req_parse(const char *body, size_t len, json_t **root, struct api_error *err)
{
	json_error_t jerr;

	body = body ? body : "";
	*root = load(body, len, &jerr);
	return parsed(body, len, root, &jerr, err);
}

int req_parse_pooled(const char *body, size_t len, const char *const *fields,
		     struct fastjson_pool *pool, json_t **root, struct api_error *err)
{
	json_error_t jerr;
	char *copy = NULL;
	size_t copy_len = 0;

	body = body ? body : "";
	if (pool == NULL) {
		*root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
		return parsed(body, len, root, &jerr, err);
	}
	copy = fastjson_scan(body, len, fields, pool, &copy_len);
	*root = copy ? load(copy, copy_len, &jerr) : NULL;
	free(copy);
	if (*root == NULL) {
		/* no rows pooled, or the body is not valid JSON: then the copy is
		 * not either, and the error's line and column are the body's own */
		fastjson_pool_release(pool);
		*root = load(body, len, &jerr);
	}
	return parsed(body, len, root, &jerr, err);
}

int req_listed(const char *const *names, const char *key)
{
	while (*names != NULL && strcmp(*names, key) != 0)
		names++;
	return *names != NULL;
}

json_t *req_get(const json_t *obj, const char *key)
{
	json_t *o = (json_t *)(uintptr_t)obj; /* jansson's iterators take no const */

	if (!json_is_object(o) || json_object_size(o) > REQ_SCAN_MEMBERS)
		return json_object_get(o, key);
	for (void *it = json_object_iter(o); it != NULL; it = json_object_iter_next(o, it)) {
		const char *k = json_object_iter_key(it);

		/* most keys asked for differ from a member's in the first byte */
		if (k[0] == key[0] && strcmp(k, key) == 0)
			return json_object_iter_value(it);
	}
	return NULL;
}

void req_members_read(struct req_members *m, const json_t *obj)
{
	json_t *o = (json_t *)(uintptr_t)obj; /* jansson's iterators take no const */

	m->obj = obj;
	m->n = 0;
	if (json_object_size(o) > REQ_MEMBERS_MAX) {
		m->n = SIZE_MAX;
		return;
	}
	for (void *it = json_object_iter(o); it != NULL; it = json_object_iter_next(o, it)) {
		m->key[m->n] = json_object_iter_key(it);
		m->val[m->n] = json_object_iter_value(it);
		m->n++;
	}
}

int req_members_known(const struct req_members *m, const char *ptr, const char *const *names,
		      struct api_error *err)
{
	char child[API_PTR_MAX];

	if (m->n == SIZE_MAX)
		return req_known_fields((json_t *)(uintptr_t)m->obj, ptr, names, err);
	for (size_t i = 0; i < m->n; i++)
		if (!req_listed(names, m->key[i]))
			return api_fail(err, API_E_UNKNOWN_FIELD, req_child(child, ptr, m->key[i]),
					"unknown field '%s'", m->key[i]);
	return 0;
}

int req_known_fields(json_t *obj, const char *ptr, const char *const *names,
		     struct api_error *err)
{
	const char *key;
	json_t *val;
	char child[API_PTR_MAX];

	json_object_foreach(obj, key, val) {
		if (!req_listed(names, key))
			return api_fail(err, API_E_UNKNOWN_FIELD, req_child(child, ptr, key),
					"unknown field '%s'", key);
	}
	return 0;
}

int req_enum(const json_t *obj, const char *key, const char *ptr, const char *const *names,
	     int dflt, int *out, struct api_error *err)
{
	return req_enum_value(req_get(obj, key), key, ptr, names, dflt, out, err);
}

int req_enum_value(const json_t *v, const char *key, const char *ptr, const char *const *names,
		   int dflt, int *out, struct api_error *err)
{
	char child[API_PTR_MAX];

	*out = dflt;
	if (v == NULL)
		return 0;
	if (json_is_string(v))
		for (int i = 0; names[i] != NULL; i++)
			if (strcmp(names[i], json_string_value(v)) == 0) {
				*out = i;
				return 0;
			}
	{
		char list[160] = "";

		for (int i = 0; names[i] != NULL; i++) {
			strncat(list, i ? ", " : "", sizeof(list) - strlen(list) - 1);
			strncat(list, names[i], sizeof(list) - strlen(list) - 1);
		}
		return api_fail(err, API_E_INVALID_VALUE, req_child(child, ptr, key),
				"must be one of: %s", list);
	}
}

int req_integer(const json_t *v, json_int_t *out)
{
	/* 2^63: json_int_t's (long long's) bound, exact as a double */
	const double bound = 9223372036854775808.0;
	double x;

	*out = 0;
	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return 1;
	}
	if (!json_is_real(v))
		return 0;
	x = json_real_value(v); /* finite: the readers refuse what overflows */
	if (x != floor(x))
		return 0;
	if (x >= bound)
		*out = LLONG_MAX;
	else if (x < -bound)
		*out = LLONG_MIN;
	else
		*out = (json_int_t)x;
	return 1;
}

int req_past_int64(const json_t *v)
{
	double x = json_is_real(v) ? json_real_value(v) : 0;

	return x >= 0x1p63 || x < -0x1p63;
}

int req_size(const json_t *obj, const char *key, const char *ptr, size_t lo, size_t hi,
	     size_t dflt, size_t *out, struct api_error *err)
{
	return req_size_value(req_get(obj, key), key, ptr, lo, hi, dflt, out, err);
}

int req_size_value(const json_t *v, const char *key, const char *ptr, size_t lo, size_t hi,
		   size_t dflt, size_t *out, struct api_error *err)
{
	char child[API_PTR_MAX];
	json_int_t x;

	*out = dflt;
	if (v == NULL)
		return 0;
	if (!req_integer(v, &x))
		return api_fail(err, API_E_INVALID_TYPE, req_child(child, ptr, key),
				"must be an integer in [%zu, %zu]", lo, hi);
	/* past 2^63 req_integer clamps to LLONG_MAX, which a bound of
	 * SIZE_MAX >> 1 would take as the value itself */
	if (x < 0 || req_past_int64(v) || (unsigned long long)x < lo ||
	    (unsigned long long)x > hi)
		return api_fail(err, API_E_OUT_OF_RANGE, req_child(child, ptr, key),
				"must be an integer in [%zu, %zu]", lo, hi);
	*out = (size_t)x;
	return 0;
}

/* req_number and req_number_above: lo itself taken unless open. */
static int number_in(const json_t *v, const char *key, const char *ptr, double lo, int open,
		     double hi, double dflt, double *out, struct api_error *err)
{
	double x = json_number_value(v); /* 0 for anything else */
	char child[API_PTR_MAX];

	*out = dflt;
	if (v == NULL)
		return 0;
	if (!json_is_number(v) || !((open ? x > lo : x >= lo) && x <= hi))
		return api_fail(err, json_is_number(v) ? API_E_OUT_OF_RANGE : API_E_INVALID_TYPE,
				req_child(child, ptr, key), "must be a number in %c%g, %g]",
				open ? '(' : '[', lo, hi);
	*out = x;
	return 0;
}

int req_number(const json_t *obj, const char *key, const char *ptr, double lo, double hi,
	       double dflt, double *out, struct api_error *err)
{
	return number_in(req_get(obj, key), key, ptr, lo, 0, hi, dflt, out, err);
}

int req_number_value(const json_t *v, const char *key, const char *ptr, double lo, double hi,
		     double dflt, double *out, struct api_error *err)
{
	return number_in(v, key, ptr, lo, 0, hi, dflt, out, err);
}

int req_number_above(const json_t *obj, const char *key, const char *ptr, double lo, double hi,
		     double dflt, double *out, struct api_error *err)
{
	return number_in(req_get(obj, key), key, ptr, lo, 1, hi, dflt, out, err);
}

int req_softcap(const json_t *obj, const char *ptr, float *out, struct api_error *err)
{
	return req_softcap_value(req_get(obj, "softcap"), ptr, out, err);
}

int req_softcap_value(const json_t *v, const char *ptr, float *out, struct api_error *err)
{
	double c;

	if (number_in(v, "softcap", ptr, 0.0, 0, 1e30, 0.0, &c, err) != 0)
		return -1;
	/* c tanh(s / c) is within c of 0: with the smallest float32 the scores
	 * and weights are those of any smaller c, rounded to float32 */
	*out = c > 0 && (float)c == 0.0f ? FLT_TRUE_MIN : (float)c;
	return 0;
}

int req_bool(const json_t *obj, const char *key, const char *ptr, int dflt, int *out,
	     struct api_error *err)
{
	return req_bool_value(req_get(obj, key), key, ptr, dflt, out, err);
}

int req_bool_value(const json_t *v, const char *key, const char *ptr, int dflt, int *out,
		   struct api_error *err)
{
	char child[API_PTR_MAX];

	*out = dflt;
	if (v == NULL)
		return 0;
	if (!json_is_boolean(v))
		return api_fail(err, API_E_INVALID_TYPE, req_child(child, ptr, key),
				"must be true or false");
	*out = json_is_true(v);
	return 0;
}
