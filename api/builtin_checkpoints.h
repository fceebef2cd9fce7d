/*
 * builtin_checkpoints.h: the whole checkpoints every attnd has, compiled in:
 * `mini`, the two-layer GPT-2-family model trained by train/train_mini.py on
 * the fortunes of Debian's `fortunes` package (models/mini, its card in
 * docs/mini-model.md), whose heads learned previous-token and induction
 * behaviour.
 *
 * tools/embed_checkpoints.py writes the table into
 * build/gen/checkpoints_data.c at build time, as tools/embed_tokenizers.py
 * does for the tokenizers. The table and its bytes are static and read-only;
 * api_service_add_builtin_checkpoints (service.h) reads them as a folder's
 * files are read (api/checkpoint_config.h, engine/checkpoint.h,
 * api/tokenizer_file.h), and the checkpoint's F32 tensors point into them.
 */
#ifndef API_BUILTIN_CHECKPOINTS_H
#define API_BUILTIN_CHECKPOINTS_H

#include <stddef.h>

struct api_builtin_checkpoint {
	const char *name;   /* "mini" */
	const char *source; /* "builtin:models/mini" */
	const char *config; /* config.json's bytes */
	size_t config_len;
	const char *weights; /* model.safetensors', 64-byte aligned */
	size_t weights_len;
	const char *tokenizer; /* tokenizer.json's */
	size_t tokenizer_len;
};

extern const struct api_builtin_checkpoint api_builtin_checkpoints[];
extern const size_t api_builtin_checkpoints_count;

#endif
