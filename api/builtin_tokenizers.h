/*
 * builtin_tokenizers.h: the tokenizers every attnd has, compiled in: GPT-2's
 * (vocab.json + merges.txt) and BERT's (a WordPiece tokenizer.json): the
 * files of tests/data/tokenizers/{gpt2,bert}, which the conformance tests
 * check against the oracle (their licences and sources are there).
 *
 * tools/embed_tokenizers.py writes the table into build/gen/tokenizers_data.c
 * at build time, as tools/embed_openapi.py does for the OpenAPI document. The
 * table and its bytes are static and read-only; api_service_add_builtin_
 * tokenizers (service.h) reads them with the file readers of
 * api/tokenizer_file.h at start-up.
 */
#ifndef API_BUILTIN_TOKENIZERS_H
#define API_BUILTIN_TOKENIZERS_H

#include <stddef.h>

struct api_builtin_tokenizer {
	const char *name;   /* "gpt2" */
	const char *source; /* "builtin:tests/data/tokenizers/gpt2/vocab.json" */
	const char *json;   /* a tokenizer.json, or NULL for GPT-2's pair */
	size_t json_len;
	const char *vocab; /* GPT-2's pair, or NULL */
	size_t vocab_len;
	const char *merges;
	size_t merges_len;
};

extern const struct api_builtin_tokenizer api_builtin_tokenizers[];
extern const size_t api_builtin_tokenizers_count;

#endif
