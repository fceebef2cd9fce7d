/* json_utf8.c: see json_utf8.h. */
#include "json_utf8.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/values.h"
#include "common/buf.h"
#include "common/utf8.h"

/* Two noncharacters, U+FDD0 and U+FDD1: the body is read once with each in
 * place of every invalid stretch, and where the two readings of a text
 * differ, the text held bad bytes (a mark the client wrote itself, raw or as
 * \ufdd0, reads the same both times). */
static const char *const MARKS[2] = {"\xef\xb7\x90", "\xef\xb7\x91"};
enum { MARK_LEN = 3, MARK_SAME = 2 /* leading bytes the two marks share */ };

/* body with every invalid UTF-8 stretch replaced by mark: malloc'd, or NULL. */
static char *mark_invalid(const char *body, size_t len, const char *mark, size_t *out_len)
{
	struct buf b;
	size_t at = 0;

	buf_init(&b, (size_t)-1);
	while (at < len) {
		size_t ok = utf8_check(body + at, len - at);

		buf_append(&b, body + at, ok);
		at += ok;
		if (at == len)
			break;
		buf_append(&b, mark, MARK_LEN);
		at += utf8_bad_run((const unsigned char *)body + at, len - at);
	}
	if (b.failed) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, out_len);
}

/* The body read with mark in place of its invalid stretches: a new
 * reference, or NULL (not JSON even so, or out of memory). */
static json_t *read_marked(const char *body, size_t len, const char *mark)
{
	size_t marked_len = 0;
	char *marked = mark_invalid(body, len, mark, &marked_len);
	json_t *root = marked != NULL ? json_loadb(marked, marked_len, JSON_REJECT_DUPLICATES, NULL)
				      : NULL;

	free(marked);
	return root;
}

/* Where the first mark stands in the two readings a and b of one string
 * (they first differ at its last byte), or -1 (the same, or not both
 * strings). */
static long differ_at(const json_t *a, const json_t *b)
{
	const char *x = json_string_value(a), *y = json_string_value(b);
	size_t nx = json_string_length(a), ny = json_string_length(b), i = 0;

	if (x == NULL || y == NULL)
		return -1;
	while (i < nx && i < ny && x[i] == y[i])
		i++;
	return i == nx && i == ny ? -1 : (long)i - MARK_SAME;
}

/* Where the two readings of one input's data first differ, depth first as
 * v2_tensor.c reads it: ptr (the data's pointer on entry) extended to the
 * element, and the byte; or -1. */
static long data_with_mark(const json_t *a, const json_t *b, char ptr[API_PTR_MAX], int depth)
{
	char base[API_PTR_MAX];

	if (!json_is_array(a) || !json_is_array(b))
		return differ_at(a, b);
	if (depth >= API_V2_DATA_NEST_MAX)
		return -1;
	snprintf(base, sizeof base, "%s", ptr);
	for (size_t i = 0; i < json_array_size(a) && i < json_array_size(b); i++) {
		long at;

		api_ptr_index(ptr, API_PTR_MAX, base, i);
		at = data_with_mark(json_array_get(a, i), json_array_get(b, i), ptr, depth + 1);
		if (at >= 0)
			return at;
	}
	return -1;
}

/* Where the two readings of the data of an input named "text" (/v2) first
 * differ: the element's pointer into ptr and the byte, or -1. */
static long inputs_text_with_mark(const json_t *a, const json_t *b, char ptr[API_PTR_MAX])
{
	const json_t *ia = json_object_get(a, "inputs"), *ib = json_object_get(b, "inputs");

	for (size_t i = 0; i < json_array_size(ia) && i < json_array_size(ib); i++) {
		const json_t *xa = json_array_get(ia, i), *xb = json_array_get(ib, i);
		const json_t *name = json_object_get(xa, "name");
		long at;

		if (!json_is_string(name) || strcmp(json_string_value(name), "text") != 0)
			continue;
		snprintf(ptr, API_PTR_MAX, "/inputs/%zu/data", i);
		at = data_with_mark(json_object_get(xa, "data"), json_object_get(xb, "data"), ptr, 0);
		if (at >= 0)
			return at;
	}
	return -1;
}

/* Where the two readings' `text` differ (the string, or with batch an item
 * of the list): its pointer into ptr and the byte, or -1. */
static long text_with_mark(const json_t *a, const json_t *b, int batch, char ptr[API_PTR_MAX])
{
	const json_t *ta = json_object_get(a, "text"), *tb = json_object_get(b, "text");
	long at = differ_at(ta, tb);

	snprintf(ptr, API_PTR_MAX, "/text");
	if (at >= 0 || !batch || !json_is_array(ta) || !json_is_array(tb))
		return at;
	for (size_t i = 0; i < json_array_size(ta) && i < json_array_size(tb); i++) {
		if ((at = differ_at(json_array_get(ta, i), json_array_get(tb, i))) >= 0) {
			api_ptr_index(ptr, API_PTR_MAX, "/text", i);
			return at;
		}
	}
	return -1;
}

int req_refuse_not_utf8(const char *body, size_t len, struct api_error *err)
{
	size_t at = utf8_check(body, len);

	if (at == len)
		return 0;
	return api_fail(err, API_E_MALFORMED_JSON, "",
			"the body is not valid UTF-8 at byte %zu (JSON is UTF-8)", at);
}

/* A body that is not all UTF-8 read twice, its bad bytes marked apart
 * (new references into *a and *b, released by the caller): 0 when both
 * readings are objects, else -1 (*a and *b may still hold references). */
static int read_twice(const char *body, size_t len, json_t **a, json_t **b)
{
	*a = NULL;
	*b = NULL;
	if (utf8_check(body, len) == len)
		return -1;
	*a = read_marked(body, len, MARKS[0]);
	*b = *a != NULL ? read_marked(body, len, MARKS[1]) : NULL;
	return json_is_object(*a) && json_is_object(*b) ? 0 : -1;
}

void req_refine_text_utf8(const char *body, size_t len, int batch, struct api_error *err)
{
	char ptr[API_PTR_MAX];
	json_t *a, *b;
	long byte = -1;

	if (read_twice(body != NULL ? body : "", len, &a, &b) == 0)
		byte = text_with_mark(a, b, batch, ptr);
	json_decref(a);
	json_decref(b);
	if (byte >= 0)
		api_fail(err, API_E_INVALID_UTF8, ptr, "text is not valid UTF-8 at byte %ld", byte);
}

void req_refine_inputs_text_utf8(const char *body, size_t len, struct api_error *err)
{
	char ptr[API_PTR_MAX];
	json_t *a, *b;
	long byte = -1;

	if (read_twice(body != NULL ? body : "", len, &a, &b) == 0)
		byte = inputs_text_with_mark(a, b, ptr);
	json_decref(a);
	json_decref(b);
	if (byte >= 0)
		api_fail(err, API_E_INVALID_UTF8, ptr, "text is not valid UTF-8 at byte %ld", byte);
}
