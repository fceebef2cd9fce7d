/*
 * builtin_layers.c: the compiled-in one-layer models (builtin_layers.h)
 * added to a service at start-up, each read as its files would be.
 */
#include "builtin_layers.h"

#include <stdint.h>
#include <stdio.h>

#include "api/error.h"
#include "api/registry.h"
#include "api/service.h"
#include "api/vocab.h"
#include "engine/safetensors.h"

/* The model and its vocabulary, or -1 with nothing to release. */
static int load_layer(const struct api_builtin_layer *b, struct attn_model **m,
		      struct api_vocab *v, struct api_error *err)
{
	struct attn_safetensors_options opts = { .num_heads = b->heads };
	struct attn_error e = { 0 };
	char file[160], msg[512];

	if (attn_model_from_safetensors(m, (const uint8_t *)b->weights, b->weights_len, &opts,
					&e) != ATTN_OK)
		return api_fail(err, API_E_MALFORMED_WEIGHTS, "", "built-in model %s: %s", b->name,
				e.message);
	snprintf(file, sizeof file, "%s/vocab.txt", b->source);
	if (api_vocab_parse(v, b->vocab, b->vocab_len, (*m)->vocab, file, msg, sizeof msg) != 0) {
		attn_model_free(*m);
		*m = NULL;
		return api_fail(err, API_E_MALFORMED_WEIGHTS, "", "built-in model %s: %s", b->name,
				msg);
	}
	return 0;
}

int api_service_add_builtin_layers(struct api_service *svc, struct api_error *err)
{
	for (size_t i = 0; i < api_builtin_layers_count; i++) {
		const struct api_builtin_layer *b = &api_builtin_layers[i];
		struct attn_model *m = NULL;
		struct api_vocab v = { 0 };
		int rc;

		/* a --model of the same name stands in its place */
		if (registry_find(svc, b->name) != NULL)
			continue;
		if (load_layer(b, &m, &v, err) != 0)
			return -1;
		/* the service takes m, on failure too, and copies the tokens */
		rc = api_service_add_model(svc, b->name, m, b->source,
					   (const char *const *)v.tokens, err);
		api_vocab_release(&v);
		if (rc != 0)
			return -1;
	}
	return 0;
}
