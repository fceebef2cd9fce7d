/*
 * checkpoint_dir.h: a Hugging Face model folder (config.json, the weights in
 * model.safetensors or shards listed by model.safetensors.index.json, and
 * tokenizer.json when present) loaded into a struct attn_checkpoint.
 *
 * The safetensors files are mapped read-only (mmap, MAP_PRIVATE) and the
 * checkpoint's tensors read in place (its embedding tables; every F32
 * tensor where checkpoint_dir_copies_weights is 0) point into the mappings,
 * so the mappings live as long as the checkpoint: both are released
 * together, by checkpoint_dir_release. As transformers does, a folder holding both
 * model.safetensors and an index loads model.safetensors.
 *
 * Failure: -1 with a message in err (cut to fit) that starts with the path
 * of the file at fault ("DIR/config.json: /n_head: ...",
 * "DIR/model-00002-of-00002.safetensors: tensor 'h.3.ln_1.weight' has shape
 * ..."); *out is then zeroed and holds nothing.
 *
 * Ownership: on success *out owns the checkpoint, the mappings and the
 * tokenizer.json bytes; a caller that keeps the bytes takes them (sets
 * tokenizer_json to NULL) before the release.
 */
#ifndef SERVER_CHECKPOINT_DIR_H
#define SERVER_CHECKPOINT_DIR_H

#include <stddef.h>

#include "engine/checkpoint.h"

struct checkpoint_dir {
	struct attn_checkpoint *ck;	   /* the stack: ck->stack */
	struct attn_checkpoint_config cfg; /* what config.json said */
	char *tokenizer_json;		   /* DIR/tokenizer.json's bytes (malloc'd), or NULL */
	size_t tokenizer_len;
	size_t mapped_bytes; /* of the safetensors files */

	/* internal: the mapped files, their names the full paths */
	struct attn_st_file *files;
	size_t n_files;
};

int checkpoint_dir_load(struct checkpoint_dir *out, const char *dir, char *err, size_t errlen);

/* 1 when checkpoint_dir_load copies the weights out of the mappings onto
 * 2 MiB pages (every weight but the embedding tables): the kernel offers
 * transparent huge pages ("always" or "madvise"). 0: F32 is read in place. */
int checkpoint_dir_copies_weights(void);

/* Frees the checkpoint, then unmaps the files; a zeroed struct is fine. */
void checkpoint_dir_release(struct checkpoint_dir *d);

#endif
