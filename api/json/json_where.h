/*
 * json_where.h: the JSON pointer of the value at a byte offset of a text.
 * Internal to api/ (json_read.c asks it when jansson refuses a body for a
 * value rather than for its syntax).
 *
 * jansson refuses a few texts that are valid JSON: a number past a double
 * (1e400) or past 64 bits (2^64), and a string escape that is a lone UTF-16
 * surrogate ("\ud800", what JavaScript writes when a string is cut inside an
 * emoji). It says where as the byte just after the value's token. The text
 * before that point parsed, so a small walk of it (containers, keys and
 * indexes; no values built) names the value as an RFC 6901 pointer, and the
 * refusal can be a field error like any other value out of range.
 *
 * Ownership: nothing is allocated; the text is only read.
 */
#ifndef API_JSON_WHERE_H
#define API_JSON_WHERE_H

#include <stddef.h>

/* The value token of text[0 .. len) that ends at byte `end` (jansson's
 * json_error_t.position): its pointer into ptr[API_PTR_MAX] ("" for the root
 * value), its first byte into *start, and 0. -1 when end falls elsewhere
 * (inside a key, between tokens, past a deeper nesting than the walk keeps),
 * when the pointer passes through a key holding an escape (the walk does
 * not decode them; keys elsewhere may hold any), or the text before it is
 * not JSON: then ptr and *start are unset. */
int json_pointer_at(const char *text, size_t len, size_t end, char *ptr, size_t *start);

#endif
