/*
 * builtin_layers.h: the one-layer models every attnd has from files,
 * compiled in: `numpy-demo`, the weights of the four-word numpy demo of
 * multi-head attention this project grew from (models/numpy-demo, its
 * README), with its four words as the vocabulary, so that the demo's text
 * gives the demo's numbers.
 *
 * tools/embed_layers.py writes the table into build/gen/layers_data.c at
 * build time, as tools/embed_checkpoints.py does for the checkpoints. The
 * table and its bytes are static and read-only; api_service_add_builtin_layers
 * (service.h) reads them as --model NAME=FILE,heads=H,vocab=FILE reads its
 * files (engine/safetensors.h, api/vocab.h); the model holds copies.
 */
#ifndef API_BUILTIN_LAYERS_H
#define API_BUILTIN_LAYERS_H

#include <stddef.h>

struct api_builtin_layer {
	const char *name;    /* "numpy-demo" */
	const char *source;  /* "builtin:models/numpy-demo" */
	const char *weights; /* model.safetensors' bytes */
	size_t weights_len;
	const char *vocab; /* vocab.txt's */
	size_t vocab_len;
	size_t heads;
};

extern const struct api_builtin_layer api_builtin_layers[];
extern const size_t api_builtin_layers_count;

#endif
