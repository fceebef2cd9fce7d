/*
 * jsonstr.h: JSON string literals written by hand into a struct buf, for the
 * bodies and log lines that are built without a JSON library (error bodies,
 * access logs, answers). Output goes through the buf's sticky `failed`, which
 * the caller checks.
 *
 * Escaped: '"', '\\' and the control characters below 0x20 (\b \f \n \r \t
 * short, the rest as \u00XX); every other byte, 0x7f and UTF-8 sequences
 * included, is copied as is (callers give UTF-8).
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
