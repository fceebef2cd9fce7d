/*
 * status.h: the engine's error model.
 *
 * Every engine entry point returns an enum attn_status (ATTN_OK == 0) and, when
 * the caller passes a struct attn_error, fills it with the status, the name of
 * the offending argument, an element index where one applies, and a message.
 * Nothing here allocates; struct attn_error is a plain value owned by the caller.
 */
#ifndef ATTN_STATUS_H
#define ATTN_STATUS_H

#include <stddef.h>

enum attn_status {
	ATTN_OK = 0,
	ATTN_ERR_ARGUMENT,       /* a NULL pointer or an option outside its domain */
	ATTN_ERR_DIMENSION,      /* a dimension is zero or two dimensions disagree */
	ATTN_ERR_EMPTY,          /* an empty sequence: Lq == 0 or Lk == 0 */
	ATTN_ERR_HEADS,          /* E is not divisible by H */
	ATTN_ERR_KV_HEADS,       /* H is not divisible by Hkv */
	ATTN_ERR_ROPE_DIM,       /* RoPE rotary dimension odd, zero or above D */
	ATTN_ERR_NONFINITE,      /* an input holds NaN or +-Inf; index says where */
	ATTN_ERR_MASK_SHAPE,     /* a caller mask does not broadcast to [B, H, Lq, Lk] */
	ATTN_ERR_POSITION,       /* a position or length out of range */
	ATTN_ERR_TOKEN,          /* a token id outside [0, vocab) */
	ATTN_ERR_OVERFLOW,       /* a size overflows size_t or a BLAS dimension int */
	ATTN_ERR_WORKSPACE,      /* the workspace given is smaller than asked for */
	ATTN_ERR_NOMEM,          /* an allocation failed */
	ATTN_ERR_FORMAT,         /* a weights file is malformed */
	ATTN_ERR_TRUNCATED,      /* a weights file ends before its data */
	ATTN_ERR_DTYPE,          /* a weights tensor has an unsupported dtype */
	ATTN_ERR_MISSING_TENSOR, /* a required weights tensor is absent */
	ATTN_ERR_SHAPE_MISMATCH, /* weights tensors have inconsistent shapes */
	ATTN_ERR_RESULT_OVERFLOW, /* finite inputs, a non-finite output: scores overflowed */
	ATTN_ERR_CANCELLED,      /* the caller's cancel flag was set (cancel.h) */
	ATTN_STATUS_COUNT
};

struct attn_error {
	enum attn_status status;
	const char *field; /* static name of the offending argument, or NULL */
	size_t index;      /* flat element index for NONFINITE / TOKEN / POSITION */
	char message[224];
};

/* A stable snake_case name for a status ("nonfinite_input"); never NULL. */
const char *attn_status_str(enum attn_status status);

/*
 * Records a failure in err (which may be NULL) and returns status, so that
 * call sites read `return attn_fail(err, ATTN_ERR_HEADS, "num_heads", 0, "...")`.
 * The message is formatted with snprintf and truncated to fit.
 */
enum attn_status attn_fail(struct attn_error *err, enum attn_status status,
			   const char *field, size_t index, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

#endif
