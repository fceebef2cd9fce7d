/*
 * error.h: the one error model of the HTTP API.
 *
 * Every error answer has the body
 *   {"error": {"code": "...", "message": "...", "pointer": "/embeddings/2/5"}}
 * with the JSON pointer (RFC 6901) of the offending field where there is one.
 * struct api_error is a plain value owned by its caller.
 */
#ifndef API_ERROR_H
#define API_ERROR_H

#include "common/buf.h"

struct api_error {
	int status;       /* HTTP status: 400, 404, 405, 413, 415, 422, 503, ... */
	const char *code; /* stable snake_case code, a string literal */
	char message[256];
	char pointer[192]; /* "" when the error is not about one field */
};

/* Fills e and returns -1, so that call sites read `return api_fail(...)`. */
int api_fail(struct api_error *e, int status, const char *code, const char *pointer,
	     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Appends the error body to out. */
void api_error_body(const struct api_error *e, struct buf *out);

/* Appends a JSON string literal (with quotes and escapes) of s to out. */
void api_json_string(struct buf *out, const char *s);

#endif
