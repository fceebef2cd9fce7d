/*
 * json_utf8.h: a body refused for bytes that are not UTF-8, told where they
 * are. Internal to api/ (json_read.c calls it when a body does not parse).
 *
 * A JSON text is UTF-8 (RFC 8259), so jansson refuses a body with an
 * invalid byte anywhere, in words about the byte ("unable to decode byte
 * 0xff near ..."). json_read.c says instead, on every route, 400
 * malformed_json with the body's byte (req_refuse_not_utf8). On the routes
 * that read a `text` (v1_decode.c, v1_tokenize.c), bad bytes inside it make
 * the refusal a field error (req_refine_text_utf8): 422 invalid_utf8 at
 * /text (or /text/N in a batch), with the byte offset in that text, as the
 * tokenizer itself says of text it cannot read. On /v2 the text is the data
 * of the input named "text" (req_refine_inputs_text_utf8): the same 422 at
 * its element, /inputs/N/data/K, so the two protocols answer the fault
 * alike.
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

/* How deep a /v2 input's data may nest: v2_tensor.c refuses deeper data,
 * and req_refine_inputs_text_utf8 searches no deeper. */
enum { API_V2_DATA_NEST_MAX = 8 };

/* 0 when body[0 .. len) is all UTF-8 (err untouched); else -1 with err
 * 400 malformed_json naming the first bad byte. */
int req_refuse_not_utf8(const char *body, size_t len, struct api_error *err);

/* After a parse of body failed: when its bad bytes sit in the request's
 * `text` (the string; with batch, also an item of a list), err becomes 422
 * invalid_utf8 at its pointer; otherwise err is left as it was. */
void req_refine_text_utf8(const char *body, size_t len, int batch, struct api_error *err);

/* The same for an Open Inference Protocol body: when its bad bytes sit in
 * an element of the data of an input named "text", err becomes 422
 * invalid_utf8 at that element; otherwise err is left as it was. */
void req_refine_inputs_text_utf8(const char *body, size_t len, struct api_error *err);

#endif
