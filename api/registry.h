/*
 * registry.h: the models a service holds, and the service itself. Internal to
 * api/ (server/ sees only service.h).
 *
 * Ownership: the service owns every entry, each entry its model and its
 * vocabulary, and every tokenizer entry its tokenizer; a model entry borrows
 * the tokenizer it is given. Read-only once the server starts, so lookups
 * need no lock.
 */
#ifndef API_REGISTRY_H
#define API_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "engine/model.h"
#include "service.h"

struct tokenizer;
struct attn_checkpoint;

/* A whole checkpoint (--model NAME=DIR): its stack, and the files' bytes it
 * points into, released (release(keep)) after it. */
struct api_checkpoint {
	struct attn_checkpoint *ck;
	char model_type[16]; /* config.json's: "gpt2", "bert", "llama", ... */
	void (*release)(void *keep);
	void *keep;
};

/* A named tokenizer (--tokenizer NAME=FILE, or a model's tokenizer=FILE). */
struct api_tokenizer_entry {
	char name[65];
	struct tokenizer *tok;
	char source[256];
};

struct api_model_entry {
	char name[65];
	/* one attention layer; for a checkpoint, its shape only (no weights) */
	struct attn_model *model;
	struct api_checkpoint *ckpt; /* a whole checkpoint, or NULL */
	char source[256];
	char **vocab;        /* [model->vocab] token strings, or NULL */
	uint32_t *vocab_idx; /* open-addressing table of vocab ids + 1, or NULL */
	size_t vocab_slots;  /* a power of two */
	/* the tokenizer of its `text` (borrowed from the service), or NULL:
	 * text is then split on whitespace and mapped as string tokens */
	const struct tokenizer *tok;
	char tokenizer[65]; /* its name, "" when none */
};

struct api_service {
	struct api_limits limits;
	struct api_model_entry *models;
	size_t n_models, cap_models;
	struct api_tokenizer_entry *tokenizers;
	size_t n_tokenizers, cap_tokenizers;
	size_t default_model; /* index; valid when n_models > 0 */
	int plain_json;       /* api_service_set_plain_json */
};

/* The entry named `name`, or NULL. */
const struct api_model_entry *registry_find(const struct api_service *svc, const char *name);

/* The tokenizer entry named `name`, or NULL. */
const struct api_tokenizer_entry *registry_find_tokenizer(const struct api_service *svc,
							  const char *name);

/* Appends the JSON description of a tokenizer entry ({"name", "source",
 * "vocab_size", "models": [names of the models that use it]}). */
void registry_describe_tokenizer(const struct api_service *svc,
				 const struct api_tokenizer_entry *t, struct buf *out);

/*
 * Id of a string token: its index in the entry's vocabulary when it has one
 * (-1 when absent), else FNV-1a 64 of its UTF-8 bytes modulo the embedding
 * table size (a stable hash: the same string gives the same id everywhere).
 */
int64_t registry_token_id(const struct api_model_entry *e, const char *token, size_t len);

/* FNV-1a, 64 bit (Fowler, Noll, Vo): offset 14695981039346656037, prime 1099511628211. */
uint64_t registry_fnv1a(const char *s, size_t len);

/* Appends the JSON description of an entry ({"name", "d_model", ...}). */
void registry_describe(const struct api_service *svc, const struct api_model_entry *e,
		       struct buf *out);

#endif
