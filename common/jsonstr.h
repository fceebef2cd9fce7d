/*
 * jsonstr.h: JSON string literals written by hand into a struct buf, for the
 * bodies and log lines that are built without a JSON library (error bodies,
 * access logs, answers). Output goes through the buf's sticky `failed`, which
 * the caller checks.
 *
 * Escaped: '"', '\\' and the control characters below 0x20 (\b \f \n \r \t
 * short, the rest as \u00XX); every other byte, 0x7f and valid UTF-8
 * sequences included, is copied as is. Bytes that are not UTF-8 (RFC 3629:
 * stray continuation bytes, overlong forms, surrogates, past U+10FFFF, a
 * sequence cut short, 0xc0 0xc1 0xf5..0xff) become the escape \ufffd, one
 * per maximal invalid subpart (Unicode's U+FFFD substitution, as
 * utf8_bad_run counts it): whatever a client put in a path, a header or a
 * name, what is echoed is valid JSON text. The one place that makes this
 * true for the error bodies (api/error.c, v2), the answers and the JSON log
 * lines (server/log.c) alike.
 *
 * Ownership: s is borrowed for the call and no pointer to it is kept; the
 * bytes appended belong to out, a buf the caller owns (buf.h).
 */
#ifndef COMMON_JSONSTR_H
#define COMMON_JSONSTR_H

#include <stddef.h>

#include "buf.h"

/* Appends s (NUL-terminated; NULL is written as "") with quotes and escapes. */
void jsonstr_put(struct buf *out, const char *s);

/* Appends s[0..n) the same way. */
void jsonstr_put_n(struct buf *out, const char *s, size_t n);

#endif
