/*
 * error.c: the API's error kinds and the /v1 error body (see error.h).
 *
 * api_error_body writes "pointer" only when e->pointer is not empty:
 *   {"error":{"code":"invalid_shape","message":"...","pointer":"/input/2"}}
 *   {"error":{"code":"not_found","message":"..."}}
 * Output goes through struct buf, whose sticky `failed` the caller checks.
 */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonstr.h"
#include "common/utf8.h"

static const struct {
	int status;
	const char *code;
} kinds[API_E_COUNT] = {
#define API_ERROR_ROW(name, status, code) [API_E_##name] = { status, code },
	API_ERROR_KINDS(API_ERROR_ROW)
#undef API_ERROR_ROW
};

int api_error_status(enum api_error_kind kind)
{
	return (unsigned)kind < API_E_COUNT ? kinds[kind].status : 500;
}

const char *api_error_code(enum api_error_kind kind)
{
	return (unsigned)kind < API_E_COUNT ? kinds[kind].code : "internal_error";
}

/* Copies s into dst[size] (size > 0), truncated to whole UTF-8 characters. */
static void copy_truncated(char *dst, size_t size, const char *s)
{
	size_t n = strlen(s);

	if (n >= size)
		n = utf8_whole(s, size - 1);
	memcpy(dst, s, n);
	dst[n] = '\0';
}

int api_fail(struct api_error *e, enum api_error_kind kind, const char *pointer,
	     const char *fmt, ...)
{
	va_list ap;
	int n;

	e->kind = kind;
	e->status = api_error_status(kind);
	e->code = api_error_code(kind);
	copy_truncated(e->pointer, sizeof e->pointer, pointer != NULL ? pointer : "");

	va_start(ap, fmt);
	n = vsnprintf(e->message, sizeof e->message, fmt, ap);
	va_end(ap);
	if (n < 0)
		e->message[0] = '\0';
	else if ((size_t)n >= sizeof e->message)
		e->message[utf8_whole(e->message, sizeof e->message - 1)] = '\0';
	return -1;
}

void api_error_body(const struct api_error *e, struct buf *out)
{
	const char *code = e->code != NULL ? e->code : "internal_error";

	buf_puts(out, "{\"error\":{\"code\":");
	jsonstr_put(out, code);
	buf_puts(out, ",\"message\":");
	/* the arrays may be filled by hand: never read past them */
	jsonstr_put_n(out, e->message, strnlen(e->message, sizeof e->message));
	if (e->pointer[0] != '\0') {
		buf_puts(out, ",\"pointer\":");
		jsonstr_put_n(out, e->pointer, strnlen(e->pointer, sizeof e->pointer));
	}
	buf_puts(out, "}}");
}
