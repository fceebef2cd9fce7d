/*
 * json_utf8.h: a body refused for bytes that are not UTF-8, told where they
 * are. Internal to api/ (json_read.c calls it when a body does not parse).
 *
 * A JSON text is UTF-8 (RFC 8259), so jansson refuses a body with an
 * invalid byte anywhere, in words about the byte ("unable to decode byte
 * 0xff near ..."). When the invalid bytes sit inside the request's `text`
 * (the string, or a string of the list), the refusal is a field error: 422
 * invalid_utf8 at /text or /text/N, with the byte offset in that text, as
 * the tokenizer itself says of text it cannot read. Anywhere else it is 400
 * malformed_json with the body's byte.
 *
 * How the bytes are found in the text: the body is read twice more, with
 * each invalid stretch replaced by U+FDD0 and then by U+FDD1; the first
 * byte where the two readings of a text differ is where its bad bytes were
 * (characters the client wrote itself read the same both times). Only a
 * body that failed to parse pays for it. Ownership: nothing is kept.
 */
#ifndef API_JSON_UTF8_H
#define API_JSON_UTF8_H

#include <stddef.h>

#include "api/error.h"

/* 0 when body[0 .. len) is all UTF-8 (err untouched); else -1 with err
 * filled as above. */
int req_refuse_invalid_utf8(const char *body, size_t len, struct api_error *err);

#endif
