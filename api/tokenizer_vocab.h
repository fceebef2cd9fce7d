/*
 * tokenizer_vocab.h: the large parts of a tokenizer.json (the model's
 * {"piece": id} vocabulary and its merges) read straight from the bytes into
 * a struct tok_model, without a tree. Internal to api/ (tokenizer_file.c calls it;
 * tokenizer_reader.h keeps its spans in the reader).
 *
 * Why: jansson's tree of Llama 3's tokenizer.json (128k pieces, 280k merges)
 * takes about 50 MB and 0.3 s to build, most of the 64 MB and 0.5 s a load
 * may take; the pieces copied straight from the bytes take half that memory,
 * and jansson then reads the rest of the file (normalizer, pre-tokenizer,
 * added tokens...), where those two members are fed to it as `{}` and `[]`.
 *
 * This is a reader of two shapes of JSON only, as strict as jansson on them
 * (RFC 8259 strings and integers, UTF-8 checked, no NUL, no lone surrogate);
 * everything it does not read whole it only skips, and jansson reads that.
 *
 * Ownership: the functions borrow the bytes; what they put in the model is
 * the model's (tok_model_release frees it, on failure too).
 */
#ifndef API_TOKENIZER_VOCAB_H
#define API_TOKENIZER_VOCAB_H

#include <stddef.h>

#include "tokenizer/spec.h"

/* Where model.vocab and model.merges sit in the file, [start, end) bytes;
 * start == end when the member was not read here (absent, or not of the
 * shape read here: a Unigram vocabulary is an array, left to jansson). */
struct tokvocab_spans {
	size_t vocab_start, vocab_end;
	size_t merges_start, merges_end;
};

/*
 * Finds the top-level "model" of a tokenizer.json and reads its "vocab"
 * (when an object) into m->vocab and its "merges" into m->merges (by rank),
 * each entry checked. Returns 0 with *spans set, or -1 with a message
 * "FILE: /model/merges/12: ..." (or "FILE:LINE:COLUMN: ..." for the syntax).
 * A file whose top level is not an object is left to jansson (0, no spans).
 */
int tokvocab_read(const char *b, size_t len, const char *file, struct tok_model *m,
		  struct tokvocab_spans *spans, char *err, size_t errlen);

/*
 * Reads a whole file that is one {"piece": id} object (GPT-2's vocab.json)
 * into m->vocab. Returns 0, or -1 with a message as above ("FILE: /piece: ...").
 */
int tokvocab_read_object(const char *b, size_t len, const char *file, struct tok_model *m,
			 char *err, size_t errlen);

#endif
