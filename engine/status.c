/* status.c: names and recording of engine failures. */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>

static const char *const status_names[ATTN_STATUS_COUNT] = {
	[ATTN_OK] = "ok",
	[ATTN_ERR_ARGUMENT] = "invalid_argument",
	[ATTN_ERR_DIMENSION] = "invalid_dimension",
	[ATTN_ERR_EMPTY] = "empty_sequence",
	[ATTN_ERR_HEADS] = "heads_do_not_divide_model_dim",
	[ATTN_ERR_KV_HEADS] = "kv_heads_do_not_divide_heads",
	[ATTN_ERR_ROPE_DIM] = "invalid_rotary_dim",
	[ATTN_ERR_NONFINITE] = "nonfinite_input",
	[ATTN_ERR_MASK_SHAPE] = "mask_shape",
	[ATTN_ERR_POSITION] = "position_out_of_range",
	[ATTN_ERR_TOKEN] = "token_out_of_range",
	[ATTN_ERR_OVERFLOW] = "size_overflow",
	[ATTN_ERR_WORKSPACE] = "workspace_too_small",
	[ATTN_ERR_NOMEM] = "out_of_memory",
	[ATTN_ERR_FORMAT] = "malformed_weights",
	[ATTN_ERR_TRUNCATED] = "truncated_weights",
	[ATTN_ERR_DTYPE] = "unsupported_dtype",
	[ATTN_ERR_MISSING_TENSOR] = "missing_tensor",
	[ATTN_ERR_SHAPE_MISMATCH] = "weights_shape_mismatch",
	[ATTN_ERR_RESULT_OVERFLOW] = "result_overflow",
	[ATTN_ERR_CANCELLED] = "cancelled",
};

const char *attn_status_str(enum attn_status status)
{
	if ((unsigned)status >= ATTN_STATUS_COUNT)
		return "unknown_status";
	return status_names[status];
}

enum attn_status attn_fail(struct attn_error *err, enum attn_status status,
			   const char *field, size_t index, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return status;
	err->status = status;
	err->field = field;
	err->index = index;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return status;
}
