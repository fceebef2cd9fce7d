/*
 * checkpoint_config.h: a Hugging Face config.json read into a struct
 * attn_checkpoint_config (engine/checkpoint.h), for the model types the
 * engine's stack runs: gpt2, bert, llama, mistral and qwen2.
 *
 * Each family reads the keys transformers' own config class reads, with its
 * defaults; keys the family does not use are ignored, as transformers
 * ignores them. What would change the numbers and the stack cannot do is
 * refused by name (scale_attn_by_inverse_layer_idx, a relative position
 * embedding, a rope_type other than default, linear and llama3, ...). Both
 * transformers 4.x (rope_theta + rope_scaling, torch_dtype) and 5.x
 * (rope_parameters, dtype) files are read; dtypes are not needed.
 *
 * Sizes the file leaves out are 0 where the weights tell them (vocab,
 * intermediate size, positions, token types): the engine reads them from the
 * tensors, which is what transformers' defaults would have to match anyway.
 *
 * Failure: -1 with "FILE: /json/pointer: what" in err (cut to fit), or
 * "FILE:LINE:COLUMN: what" for JSON that does not parse; *cfg is then
 * unspecified. Ownership: nothing is kept; json and file are borrowed.
 */
#ifndef API_CHECKPOINT_CONFIG_H
#define API_CHECKPOINT_CONFIG_H

#include <stddef.h>

#include "engine/checkpoint.h"

#define API_CHECKPOINT_CONFIG_MAX (1u << 20) /* bytes of config.json read */

int api_checkpoint_config(struct attn_checkpoint_config *cfg, const char *json, size_t len,
			  const char *file, char *err, size_t errlen);

#define API_CHECKPOINT_INDEX_MAX (64u << 20) /* bytes of model.safetensors.index.json */

/*
 * model.safetensors.index.json's "weight_map" (tensor name -> shard file):
 * the distinct shard names, in the order they first appear, into *shards
 * (a new array of *n new strings; api_checkpoint_shards_free releases both).
 * A shard name that is empty or ".", or holds '/', '\\', ".." or a NUL, is
 * refused: shards live beside the index. Failure: -1, the message as
 * above, *shards NULL and *n 0.
 */
int api_checkpoint_index(char ***shards, size_t *n, const char *json, size_t len, const char *file,
			 char *err, size_t errlen);

void api_checkpoint_shards_free(char **shards, size_t n);

#endif
