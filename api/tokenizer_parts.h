/*
 * tokenizer_parts.h: the parts of a tokenizer.json's pipeline around its
 * model: normalizer, pre-tokenizer, added tokens, post-processor, decoder.
 * Internal to api/ (tokenizer_file.c reads a file's parts with these).
 *
 * Each is a read_fn (tokenizer_reader.h): it reads the JSON value j into the
 * part `item` (a zeroed struct tok_normalizer, tok_pretokenizer, tok_added,
 * tok_post or tok_decoder, as named), choosing its kind from a table of
 * Hugging Face's "type" names. Returns 0, or -1 with the reader's message.
 *
 * Ownership: j is borrowed; what is read into the part is the part's, on
 * failure too, so the spec holding it releases it (tok_spec_release).
 */
#ifndef API_TOKENIZER_PARTS_H
#define API_TOKENIZER_PARTS_H

#include "tokenizer_reader.h"

int tokparts_read_normalizer(struct rd *r, json_t *j, void *item);
int tokparts_read_pretokenizer(struct rd *r, json_t *j, void *item);
int tokparts_read_added_token(struct rd *r, json_t *j, void *item);
int tokparts_read_post(struct rd *r, json_t *j, void *item);
int tokparts_read_decoder(struct rd *r, json_t *j, void *item);

#endif
