/*
 * error.h: the one error model of the API, for every front end.
 *
 * Every failure is a kind from one table (API_ERROR_KINDS): the kind fixes
 * the HTTP status and the stable snake_case code, so no call site passes a
 * status number and /v1 and /v2 answer one fault alike. What differs per
 * protocol is only the body: /v1 answers
 *   {"error": {"code": "...", "message": "...", "pointer": "/embeddings/2/5"}}
 * with the JSON pointer (RFC 6901) of the offending field where there is one;
 * the Open Inference Protocol (/v2) answers {"error": "message (where)"}, as
 * its specification has it.
 *
 * struct api_error is a plain value owned by its caller.
 */
#ifndef API_ERROR_H
#define API_ERROR_H

#include "common/buf.h"

/* X(NAME, status, "code"), one row per kind. 400: the body cannot be read
 * as the request it claims to be; 422: it reads, but a field is wrong. */
#define API_ERROR_KINDS(X)                                                          \
	/* the body's syntax and framing */                                         \
	X(MALFORMED_JSON, 400, "malformed_json")                                    \
	X(DUPLICATE_KEY, 400, "duplicate_key")                                      \
	X(BAD_REQUEST, 400, "bad_request")                                          \
	X(BAD_HEADER, 400, "bad_header")                                            \
	X(BINARY_SIZE_MISMATCH, 400, "binary_size_mismatch")                        \
	/* the transport */                                                         \
	X(UNAUTHORIZED, 401, "unauthorized")                                        \
	X(NOT_FOUND, 404, "not_found")                                              \
	X(MODEL_NOT_FOUND, 404, "model_not_found")                                  \
	X(TOKENIZER_NOT_FOUND, 404, "tokenizer_not_found")                          \
	X(METHOD_NOT_ALLOWED, 405, "method_not_allowed")                            \
	X(REQUEST_TIMEOUT, 408, "request_timeout")                                  \
	X(PRECONDITION_FAILED, 412, "precondition_failed")                          \
	X(PAYLOAD_TOO_LARGE, 413, "payload_too_large")                              \
	X(UNSUPPORTED_MEDIA_TYPE, 415, "unsupported_media_type")                    \
	/* a field of the request */                                                \
	X(INVALID_TYPE, 422, "invalid_type")                                        \
	X(INVALID_VALUE, 422, "invalid_value")                                      \
	X(INVALID_NUMBER, 422, "invalid_number")                                    \
	X(OUT_OF_RANGE, 422, "out_of_range")                                        \
	X(UNKNOWN_FIELD, 422, "unknown_field")                                      \
	X(MISSING_FIELD, 422, "missing_field")                                      \
	X(INVALID_SHAPE, 422, "invalid_shape")                                      \
	X(SHAPE_MISMATCH, 422, "shape_mismatch")                                    \
	X(DIMENSION_MISMATCH, 422, "dimension_mismatch")                            \
	X(RAGGED_ARRAY, 422, "ragged_array")                                        \
	X(INVALID_TENSOR, 422, "invalid_tensor")                                    \
	X(INVALID_BASE64, 422, "invalid_base64")                                    \
	X(TOO_LARGE, 422, "too_large")                                              \
	X(INVALID_INPUT, 422, "invalid_input")                                      \
	X(UNKNOWN_INPUT, 422, "unknown_input")                                      \
	X(DUPLICATE_INPUT, 422, "duplicate_input")                                  \
	X(INVALID_DATATYPE, 422, "invalid_datatype")                                \
	X(UNSUPPORTED_DATATYPE, 422, "unsupported_datatype")                        \
	X(INVALID_STRING, 422, "invalid_string")                                    \
	X(UNKNOWN_OUTPUT, 422, "unknown_output")                                    \
	X(DUPLICATE_OUTPUT, 422, "duplicate_output")                                \
	X(INVALID_OUTPUT, 422, "invalid_output")                                    \
	X(INVALID_MODEL, 422, "invalid_model")                                      \
	X(INVALID_MODEL_NAME, 422, "invalid_model_name")                            \
	X(NO_EMBEDDING_TABLE, 422, "no_embedding_table")                            \
	X(UNKNOWN_TOKEN, 422, "unknown_token")                                      \
	X(NO_TOKENIZER, 422, "no_tokenizer")                                        \
	X(INVALID_UTF8, 422, "invalid_utf8")                                        \
	X(INVALID_MASK, 422, "invalid_mask")                                        \
	/* what the request asks for */                                             \
	X(REQUEST_TOO_LARGE, 422, "request_too_large")                              \
	X(REQUEST_TOO_EXPENSIVE, 422, "request_too_expensive")                      \
	X(RESPONSE_TOO_LARGE, 422, "response_too_large")                            \
	X(PROJECTION_OVERFLOW, 422, "projection_overflow")                          \
	/* the engine's refusals (engine/status.h), by their own codes */           \
	X(INVALID_ARGUMENT, 422, "invalid_argument")                                \
	X(INVALID_DIMENSION, 422, "invalid_dimension")                              \
	X(EMPTY_SEQUENCE, 422, "empty_sequence")                                    \
	X(HEADS_DO_NOT_DIVIDE, 422, "heads_do_not_divide_model_dim")                \
	X(KV_HEADS_DO_NOT_DIVIDE, 422, "kv_heads_do_not_divide_heads")              \
	X(INVALID_ROTARY_DIM, 422, "invalid_rotary_dim")                            \
	X(NONFINITE_INPUT, 422, "nonfinite_input")                                  \
	X(MASK_SHAPE, 422, "mask_shape")                                            \
	X(POSITION_OUT_OF_RANGE, 422, "position_out_of_range")                      \
	X(TOKEN_OUT_OF_RANGE, 422, "token_out_of_range")                            \
	X(SIZE_OVERFLOW, 422, "size_overflow")                                      \
	X(WORKSPACE_TOO_SMALL, 422, "workspace_too_small")                          \
	X(MALFORMED_WEIGHTS, 422, "malformed_weights")                              \
	X(TRUNCATED_WEIGHTS, 422, "truncated_weights")                              \
	X(UNSUPPORTED_DTYPE, 422, "unsupported_dtype")                              \
	X(MISSING_TENSOR, 422, "missing_tensor")                                    \
	X(WEIGHTS_SHAPE_MISMATCH, 422, "weights_shape_mismatch")                    \
	X(RESULT_OVERFLOW, 422, "result_overflow")                                  \
	/* the server's state */                                                    \
	X(OUT_OF_MEMORY, 503, "out_of_memory")                                      \
	X(NOT_READY, 503, "not_ready")                                              \
	X(OVERLOADED, 503, "overloaded")                                            \
	X(DRAINING, 503, "draining")                                                \
	X(DEADLINE_EXCEEDED, 503, "deadline_exceeded")

enum api_error_kind {
#define API_ERROR_ENUM(name, status, code) API_E_##name,
	API_ERROR_KINDS(API_ERROR_ENUM)
#undef API_ERROR_ENUM
	API_E_COUNT
};

struct api_error {
	enum api_error_kind kind;
	int status;       /* the kind's HTTP status */
	const char *code; /* the kind's code, a string literal */
	char message[256];
	char pointer[192]; /* "" when the error is not about one field */
};

/* The HTTP status and the code of a kind. */
int api_error_status(enum api_error_kind kind);
const char *api_error_code(enum api_error_kind kind);

/*
 * Fills e with kind, the field's pointer (NULL: none) and the message, and
 * returns -1, so that call sites read `return api_fail(...)`. A long message
 * or pointer is cut to its array at a whole UTF-8 character.
 */
int api_fail(struct api_error *e, enum api_error_kind kind, const char *pointer,
	     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Appends the /v1 error body to out. */
void api_error_body(const struct api_error *e, struct buf *out);

#endif
