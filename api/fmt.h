/*
 * fmt.h: float32 to decimal text for JSON responses.
 *
 * fmt_float_shortest writes the shortest decimal string that strtof() reads
 * back to exactly the same float (Schubfach, as Ryu / JavaScript do),
 * JSON-valid: "-0" for negative zero; plain decimals for exponents in
 * [-6, 16) ("0.001", "123.5"), else exponent form without padding ("1.5e-7",
 * "3.4028235e38"). fmt.c says why 16. fmt_float_digits writes `digits` (1..9) significant digits, like
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
