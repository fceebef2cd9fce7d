/*
 * error.c: the API's error value and its JSON body (see error.h).
 *
 * Details error.h leaves open, decided here:
 *   - api_error_body writes "pointer" only when e->pointer is not empty:
 *       {"error":{"code":"bad_shape","message":"...","pointer":"/input/2"}}
 *       {"error":{"code":"not_found","message":"..."}}
 *     A NULL code is written as "internal_error".
 *   - api_fail truncates a long message or pointer to its array, cutting
 *     back to a whole UTF-8 character so the body stays valid UTF-8; a NULL
 *     pointer means "". The code pointer is stored as is (a string literal).
 *   - api_json_string escapes '"', '\\' and the control characters below
 *     0x20 (\b \f \n \r \t short, the rest as \u00XX); every other byte,
 *     0x7f and UTF-8 sequences included, is copied as is (callers give
 *     UTF-8). A NULL string is written as "".
 * Output goes through struct buf, whose sticky `failed` the caller checks.
 */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The length of s[0..len) without a UTF-8 sequence cut short at its end. */
static size_t utf8_whole(const char *s, size_t len)
{
	size_t lead = len;
	size_t need;
	unsigned char c;

	/* step back over at most 3 continuation bytes (10xxxxxx) to a lead byte */
	while (lead > 0 && len - lead < 3 && ((unsigned char)s[lead - 1] & 0xc0) == 0x80)
		lead--;
	if (lead == 0)
		return len;
	c = (unsigned char)s[lead - 1];
	if (c < 0xc0)
		return len; /* ASCII, or stray continuation bytes: not ours to judge */
	need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
	if (len - (lead - 1) < need)
		return lead - 1;
	return len;
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

int api_fail(struct api_error *e, int status, const char *code, const char *pointer,
	     const char *fmt, ...)
{
	va_list ap;
	int n;

	e->status = status;
	e->code = code;
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

/* SHORT[c]: the letter of c's two-character escape (\n for '\n'), or 0. */
static const char SHORT[0x60] = {
	['"'] = '"', ['\\'] = '\\', ['\b'] = 'b', ['\f'] = 'f',
	['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't',
};

/* Appends the escape of c: '"', '\\' or a control character. */
static void append_escape(struct buf *out, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";
	char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};

	if (SHORT[c] != 0) {
		esc[1] = SHORT[c];
		buf_append(out, esc, 2);
		return;
	}
	buf_append(out, esc, sizeof esc);
}

/* Appends s[0..n) as a JSON string literal, runs of plain bytes in one go. */
static void json_string_n(struct buf *out, const char *s, size_t n)
{
	size_t run = 0; /* start of the bytes not yet appended */
	size_t i;

	buf_putc(out, '"');
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		buf_append(out, s + run, i - run);
		append_escape(out, c);
		run = i + 1;
	}
	buf_append(out, s + run, n - run);
	buf_putc(out, '"');
}

void api_json_string(struct buf *out, const char *s)
{
	if (s == NULL)
		s = "";
	json_string_n(out, s, strlen(s));
}

void api_error_body(const struct api_error *e, struct buf *out)
{
	const char *code = e->code != NULL ? e->code : "internal_error";

	buf_puts(out, "{\"error\":{\"code\":");
	api_json_string(out, code);
	buf_puts(out, ",\"message\":");
	/* the arrays may be filled by hand: never read past them */
	json_string_n(out, e->message, strnlen(e->message, sizeof e->message));
	if (e->pointer[0] != '\0') {
		buf_puts(out, ",\"pointer\":");
		json_string_n(out, e->pointer, strnlen(e->pointer, sizeof e->pointer));
	}
	buf_puts(out, "}}");
}
