/* json_utf8.c: see json_utf8.h. */
#define _GNU_SOURCE /* memmem */
#include "json_utf8.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/values.h"
#include "common/buf.h"
#include "common/utf8.h"

static const char MARK[] = "\xef\xb7\x90"; /* U+FDD0 */
enum { MARK_LEN = sizeof MARK - 1 };

/* body with every invalid UTF-8 stretch replaced by MARK: malloc'd, or NULL. */
static char *mark_invalid(const char *body, size_t len, size_t *out_len)
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
		buf_append(&b, MARK, MARK_LEN);
		at += utf8_bad_run((const unsigned char *)body + at, len - at);
	}
	if (b.failed) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, out_len);
}

/* Where MARK first stands in the string s, or -1 (s not a string, or none). */
static long mark_in(const json_t *s)
{
	const char *v = json_string_value(s), *hit;

	if (v == NULL)
		return -1;
	hit = memmem(v, json_string_length(s), MARK, MARK_LEN);
	return hit != NULL ? (long)(hit - v) : -1;
}

/* The text of the marked body's root holding a MARK: its pointer into ptr
 * and the byte, or -1. */
static long text_with_mark(const json_t *root, char ptr[API_PTR_MAX])
{
	const json_t *text = json_object_get(root, "text");
	size_t i;
	json_t *item;
	long at = mark_in(text);

	snprintf(ptr, API_PTR_MAX, "/text");
	if (at >= 0 || !json_is_array(text))
		return at;
	json_array_foreach(text, i, item) {
		if ((at = mark_in(item)) >= 0) {
			api_ptr_index(ptr, API_PTR_MAX, "/text", i);
			return at;
		}
	}
	return -1;
}

int req_refuse_invalid_utf8(const char *body, size_t len, struct api_error *err)
{
	size_t at = utf8_check(body, len), marked_len = 0;
	char *marked = NULL, ptr[API_PTR_MAX];
	json_t *root = NULL;
	long byte = -1;

	if (at == len)
		return 0;
	if (memmem(body, len, MARK, MARK_LEN) == NULL)
		marked = mark_invalid(body, len, &marked_len);
	if (marked != NULL)
		root = json_loadb(marked, marked_len, JSON_REJECT_DUPLICATES, NULL);
	if (json_is_object(root))
		byte = text_with_mark(root, ptr);
	json_decref(root);
	free(marked);
	if (byte >= 0)
		return api_fail(err, API_E_INVALID_UTF8, ptr, "text is not valid UTF-8 at byte %ld",
				byte);
	return api_fail(err, API_E_MALFORMED_JSON, "",
			"the body is not valid UTF-8 at byte %zu (JSON is UTF-8)", at);
}
