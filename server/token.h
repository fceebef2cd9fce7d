/*
 * token.h: RFC 9110 section 5.6.2's tchar, a byte of a token (a field name,
 * a parameter's name). Header-only, so that compress.c, which the fuzz
 * harnesses and benches link alone, shares it with the framing checks.
 */
#ifndef ATTN_SERVER_TOKEN_H
#define ATTN_SERVER_TOKEN_H

#include <string.h>

/* The usual bytes of a name (letters, digits, '-') are answered without
 * the search of the others. */
static inline int http_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-')
		return 1;
	return c != '\0' && strchr("!#$%&'*+.^_`|~", c) != NULL;
}

#endif
