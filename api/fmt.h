/*
 * fmt.h: float32 to decimal text for JSON responses.
 *
 * fmt_float_shortest writes the shortest decimal string that strtof() reads
 * back to exactly the same float (as Ryu / Schubfach / JavaScript do),
 * JSON-valid: "-0" for negative zero, exponent form "1e-07" style only where
 * shorter. fmt_float_digits writes `digits` (1..9) significant digits, like
 * "%.*g". Neither handles NaN or infinities (callers write those as strings).
 * Both write at most FMT_FLOAT_MAX bytes, no NUL, and return the length.
 * Pure functions, no allocation, no locale.
 */
#ifndef API_FMT_H
#define API_FMT_H

#include <stddef.h>

enum { FMT_FLOAT_MAX = 24 };

size_t fmt_float_shortest(char *out, float x);
size_t fmt_float_digits(char *out, float x, int digits);

#endif
