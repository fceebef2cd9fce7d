/*
 * utf8.h: UTF-8 as RFC 3629 defines it, for the layers that check text
 * (vocabulary files, error messages cut to a buffer). Pure functions on the
 * caller's bytes; nothing is allocated or kept.
 */
#ifndef COMMON_UTF8_H
#define COMMON_UTF8_H

#include <stddef.h>

/* Length of the valid UTF-8 character at s[0..n) (RFC 3629, table 3-7:
 * no overlong forms, no surrogates, nothing past U+10FFFF), or 0 when the
 * bytes there are not one (n == 0 included). */
size_t utf8_char(const unsigned char *s, size_t n);

/* The length of s[0..len) without a UTF-8 sequence cut short at its end:
 * where to cut a string that has to fit len bytes so that no character is
 * split. Other invalid bytes are left alone (not this function's to judge). */
size_t utf8_whole(const char *s, size_t len);

#endif
