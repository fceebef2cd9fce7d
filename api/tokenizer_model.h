/*
 * tokenizer_model.h: a tokenizer.json's model (BPE, WordPiece, Unigram) and
 * the vocabulary checks GPT-2's vocab.json + merges.txt reader shares with
 * it. Internal to api/ (tokenizer_file.c uses it).
 *
 * Failure: each returns 0, or -1 with the reader's message (tokenizer_reader.h).
 * Ownership: the JSON is borrowed; what is read is the model's, on failure
 * too (tok_model_release, or the spec's tok_spec_release, frees it).
 */
#ifndef API_TOKENIZER_MODEL_H
#define API_TOKENIZER_MODEL_H

#include "tokenizer_reader.h"

/* The model object j into m (zeroed, but for the vocabulary and merges
 * tokvocab_read read before jansson, r->pre saying where they were). */
int tokmodel_read(struct rd *r, json_t *j, struct tok_model *m);

/* Refuses a piece given twice and two pieces with one id. Leaves the
 * vocabulary sorted by id. */
int tokmodel_vocab_unique(struct rd *r, struct tok_model *m);

/* One merge "left right" (exactly one space, as Hugging Face splits it) into
 * m's two new strings. */
int tokmodel_split_merge(struct rd *r, const char *s, size_t len, struct tok_merge *m);

#endif
