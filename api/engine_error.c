/* engine_error.c: engine statuses as API errors (see engine_error.h). */
#include "engine_error.h"

#include <stdio.h>
#include <string.h>

#include "values.h"

static const enum api_error_kind engine_kinds[ATTN_STATUS_COUNT] = {
	[ATTN_OK] = API_E_INVALID_ARGUMENT, /* never asked: not a failure */
	[ATTN_ERR_ARGUMENT] = API_E_INVALID_ARGUMENT,
	[ATTN_ERR_DIMENSION] = API_E_INVALID_DIMENSION,
	[ATTN_ERR_EMPTY] = API_E_EMPTY_SEQUENCE,
	[ATTN_ERR_HEADS] = API_E_HEADS_DO_NOT_DIVIDE,
	[ATTN_ERR_KV_HEADS] = API_E_KV_HEADS_DO_NOT_DIVIDE,
	[ATTN_ERR_ROPE_DIM] = API_E_INVALID_ROTARY_DIM,
	[ATTN_ERR_NONFINITE] = API_E_NONFINITE_INPUT,
	[ATTN_ERR_MASK_SHAPE] = API_E_MASK_SHAPE,
	[ATTN_ERR_POSITION] = API_E_POSITION_OUT_OF_RANGE,
	[ATTN_ERR_TOKEN] = API_E_TOKEN_OUT_OF_RANGE,
	[ATTN_ERR_OVERFLOW] = API_E_SIZE_OVERFLOW,
	[ATTN_ERR_WORKSPACE] = API_E_WORKSPACE_TOO_SMALL,
	[ATTN_ERR_NOMEM] = API_E_OUT_OF_MEMORY,
	[ATTN_ERR_FORMAT] = API_E_MALFORMED_WEIGHTS,
	[ATTN_ERR_TRUNCATED] = API_E_TRUNCATED_WEIGHTS,
	[ATTN_ERR_DTYPE] = API_E_UNSUPPORTED_DTYPE,
	[ATTN_ERR_MISSING_TENSOR] = API_E_MISSING_TENSOR,
	[ATTN_ERR_SHAPE_MISMATCH] = API_E_WEIGHTS_SHAPE_MISMATCH,
	[ATTN_ERR_RESULT_OVERFLOW] = API_E_RESULT_OVERFLOW,
	/* the only caller that cancels is the server, when --compute-deadline
	 * passes (or the client left, and then nobody reads the answer) */
	[ATTN_ERR_CANCELLED] = API_E_DEADLINE_EXCEEDED,
};

enum api_error_kind api_engine_kind(enum attn_status status)
{
	return (unsigned)status < ATTN_STATUS_COUNT ? engine_kinds[status] : API_E_INVALID_ARGUMENT;
}

static const struct api_field_where *find_field(const struct api_field_where *map, size_t n,
						 const char *field)
{
	for (size_t i = 0; field != NULL && i < n; i++)
		if (strcmp(field, map[i].field) == 0)
			return &map[i];
	return NULL;
}

const char *api_engine_where(const struct api_field_where *map, size_t n, const char *field)
{
	const struct api_field_where *f = find_field(map, n, field);

	return f != NULL ? f->where : "";
}

int api_engine_fail(struct api_error *err, const struct attn_error *aerr,
		    const struct api_field_where *map, size_t n)
{
	const struct api_field_where *f = find_field(map, n, aerr->field);
	char ptr[API_PTR_MAX];

	if (f != NULL && f->element)
		api_ptr_index(ptr, sizeof ptr, f->where, aerr->index);
	else
		snprintf(ptr, sizeof ptr, "%s", f != NULL ? f->where : "");
	return api_fail(err, api_engine_kind(aerr->status), ptr, "%s", aerr->message);
}

int api_tokenize_fail(struct api_error *err, enum tok_status st, size_t bad_byte,
		      const char *ptr)
{
	if (st == TOK_EINVAL)
		return api_fail(err, API_E_INVALID_UTF8, ptr, "text is not valid UTF-8 at byte %zu",
				bad_byte);
	if (st == TOK_EUNK)
		return api_fail(err, API_E_UNKNOWN_TOKEN, ptr,
				"the text has a piece outside the tokenizer's vocabulary, and the "
				"tokenizer's unk_token is not in its vocabulary either (Hugging "
				"Face's tokenizers refuse this text too)");
	if (st == TOK_ETOOLONG)
		return api_fail(err, API_E_TOO_LARGE, ptr,
				"the tokenizer's normalizer makes the text more than %zu times as "
				"long (its Replace or Prepend strings); refused rather than "
				"tokenized",
				TOK_NORM_GROWTH);
	if (st == TOK_ELIMIT)
		return api_fail(err, API_E_REQUEST_TOO_EXPENSIVE, ptr,
				"a regex of the tokenizer gave up on this text (PCRE2's match "
				"limit: a pattern that backtracks without bound); a shorter text "
				"may pass");
	return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory tokenizing the text");
}
