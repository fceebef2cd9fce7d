/* fuzz_json_where.c: the input bytes as a JSON text, and json_pointer_at
 * (api/json/json_where.h) asked where the value ending at each of its first
 * bytes is. Its twin is jansson: on a text jansson reads (duplicate keys
 * refused, as a request's are), whenever the walk
 * names a value, the pointer resolved in jansson's tree (RFC 6901, by hand
 * below) is a scalar equal to jansson's reading of the token alone. On any
 * text, the walk stays inside it (the sanitizers) and at the error position
 * jansson gives. Aborts otherwise. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "api/json/json_where.h"
#include "api/values.h"
#include "fuzz.h"

enum { ENDS_MAX = 256, TEXT_MAX = 4096 };

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

/* One reference token of ptr ("/a~1b" -> "a/b") into key; returns the rest. */
static const char *next_token(const char *ptr, char *key, size_t keysz)
{
	size_t n = 0;

	for (ptr++; *ptr != '\0' && *ptr != '/'; ptr++) {
		char c = *ptr;

		if (c == '~') {
			ptr++;
			if (*ptr != '0' && *ptr != '1')
				abort(); /* the walk escapes only these */
			c = *ptr == '0' ? '~' : '/';
		}
		if (n + 1 >= keysz)
			abort();
		key[n++] = c;
	}
	key[n] = '\0';
	return ptr;
}

/* The value of root at ptr, or NULL. */
static json_t *resolve(json_t *root, const char *ptr)
{
	char key[API_PTR_MAX];
	json_t *v = root;

	while (v != NULL && *ptr == '/') {
		ptr = next_token(ptr, key, sizeof key);
		if (json_is_object(v))
			v = json_object_get(v, key);
		else if (json_is_array(v))
			v = json_array_get(v, strtoul(key, NULL, 10));
		else
			return NULL;
	}
	return *ptr == '\0' ? v : NULL;
}

/* The walk at end on a text jansson read into root. */
static void check_end(const char *text, size_t size, size_t end, json_t *root)
{
	char ptr[API_PTR_MAX];
	size_t start;
	json_t *at, *alone;

	if (json_pointer_at(text, size, end, ptr, &start) != 0)
		return;
	if (start >= end || end > size)
		abort();
	if (strlen(ptr) + 4 > API_PTR_MAX)
		return; /* maybe cut to fit (api_ptr_key stops 3 short): a prefix */
	at = resolve(root, ptr);
	alone = json_loadb(text + start, end - start, JSON_DECODE_ANY, NULL);
	if (at == NULL || json_is_object(at) || json_is_array(at) || alone == NULL ||
	    !json_equal(at, alone))
		abort();
	json_decref(alone);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	json_error_t jerr;
	json_t *root;
	char ptr[API_PTR_MAX];
	size_t start, ends = 0;

	if (size > TEXT_MAX)
		return 0;
	root = json_loadb(text, size, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		/* where parsed() asks: inside the text, or nothing */
		if (jerr.position > 0 &&
		    json_pointer_at(text, size, (size_t)jerr.position, ptr, &start) == 0 &&
		    (start >= (size_t)jerr.position || (size_t)jerr.position > size))
			abort();
		return 0;
	}
	for (size_t end = 1; end <= size && ends < ENDS_MAX; end++) {
		char c = text[end - 1];

		if (c != '"' && !(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'z'))
			continue; /* no scalar token ends here */
		ends++;
		check_end(text, size, end, root);
	}
	json_decref(root);
	return 0;
}
