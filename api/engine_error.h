/*
 * engine_error.h: the engine's refusals (engine/status.h) and the
 * tokenizer's (tokenizer/tokenizer.h) as API errors, in one place for every
 * route. Internal to api/.
 *
 * Ownership: nothing is allocated or kept. map and aerr are borrowed for the
 * call; api_engine_where returns a string borrowed from map (or a static ""),
 * valid as long as map; err is the caller's value, filled in place.
 */
#ifndef API_ENGINE_ERROR_H
#define API_ENGINE_ERROR_H

#include <stddef.h>

#include "api/error.h"
#include "engine/status.h"
#include "tokenizer/tokenizer.h"

/* Where an engine field (attn_error.field: "query", "attn_mask", ...) came
 * from in a request: a JSON pointer, or a v2 input's place. */
struct api_field_where {
	const char *field;
	const char *where;
	int element; /* where is a flat list and attn_error.index its element's:
		      * the pointer names the element (where/index) */
};

/* The API's kind of an engine status (out_of_memory is 503, cancelled is
 * 503 deadline_exceeded; the rest 422 under the engine's own code). */
enum api_error_kind api_engine_kind(enum attn_status status);

/* The place of an engine field in map[n] ("" when absent or NULL). */
const char *api_engine_where(const struct api_field_where *map, size_t n, const char *field);

/* Fills err from aerr, its pointer looked up in map[n] by aerr->field ("" when
 * absent; down to the element for an entry marked so), and returns -1. */
int api_engine_fail(struct api_error *err, const struct attn_error *aerr,
		    const struct api_field_where *map, size_t n);

/* Fills err for a failed tok_encode of the text at ptr (bad_byte: where
 * TOK_EINVAL found the UTF-8 broken) and returns -1. */
int api_tokenize_fail(struct api_error *err, enum tok_status st, size_t bad_byte,
		      const char *ptr);

#endif
