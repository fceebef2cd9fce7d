/*
 * utf8.h: UTF-8 as RFC 3629 defines it, for the layers that check text
 * (vocabulary files, error messages cut to a buffer). Pure functions on the
 * caller's bytes; nothing is allocated or kept.
 */
#ifndef COMMON_UTF8_H
#define COMMON_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length of the valid UTF-8 character at s[0..n) (RFC 3629, table 3-7:
 * no overlong forms, no surrogates, nothing past U+10FFFF), or 0 when the
 * bytes there are not one (n == 0 included). */
size_t utf8_char(const unsigned char *s, size_t n);

/* The length of s[0..len) without a UTF-8 sequence cut short at its end:
 * where to cut a string that has to fit len bytes so that no character is
 * split. Other invalid bytes are left alone (not this function's to judge). */
size_t utf8_whole(const char *s, size_t len);

/* The offset of the first byte of s[0..len) that does not begin a valid
 * UTF-8 character, or len when all of it is valid. */
size_t utf8_check(const char *s, size_t len);

/* The length of the invalid stretch at s[0..n) that one U+FFFD stands for
 * when invalid UTF-8 is shown: the maximal subpart of a sequence that could
 * still have been valid, or 1 byte (Unicode's "U+FFFD substitution of
 * maximal subparts", which Rust's from_utf8_lossy and WHATWG follow). Call it
 * where utf8_char returned 0; n > 0. */
size_t utf8_bad_run(const unsigned char *s, size_t n);

/* Writes code point cp (a Unicode scalar value: at most U+10FFFF, not a
 * surrogate) as UTF-8 at dst, which has room for 4 bytes; returns the bytes
 * written, 1 to 4. */
size_t utf8_put(char *dst, uint32_t cp);

/* The UTF-16 code unit of the four hex digits at s (a JSON \uXXXX escape's,
 * either case) into *unit: 0, or -1 when one of them is not a hex digit. */
int utf8_hex4(const char *s, uint32_t *unit);

#endif
