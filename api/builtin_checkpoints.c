/*
 * builtin_checkpoints.c: the compiled-in checkpoints (builtin_checkpoints.h)
 * added to a service at start-up, each read as its folder would be, with its
 * tokenizer.json as a tokenizer named after the model.
 */
#include "builtin_checkpoints.h"

#include <stdint.h>
#include <stdio.h>

#include "api/checkpoint_config.h"
#include "api/error.h"
#include "api/registry.h"
#include "api/service.h"
#include "api/tokenizer_file.h"

/* The checkpoint over the static bytes: nothing to release beside it. */
static int load_stack(const struct api_builtin_checkpoint *b, struct attn_checkpoint **ck,
		      struct attn_checkpoint_config *cfg, struct api_error *err)
{
	char file[160], msg[512];
	struct attn_error e = { 0 };
	struct attn_st_file weights;

	snprintf(file, sizeof file, "%s/config.json", b->source);
	if (api_checkpoint_config(cfg, b->config, b->config_len, file, msg, sizeof msg) != 0)
		return api_fail(err, API_E_MALFORMED_WEIGHTS, "", "built-in model %s: %s", b->name, msg);
	snprintf(file, sizeof file, "%s/model.safetensors", b->source);
	weights = (struct attn_st_file){ .name = file, .bytes = (const uint8_t *)b->weights,
					 .len = b->weights_len };
	if (attn_checkpoint_load(ck, cfg, &weights, 1, NULL, &e) != ATTN_OK)
		return api_fail(err, API_E_MALFORMED_WEIGHTS, "", "built-in model %s: %s", b->name,
				e.message);
	return 0;
}

static int add_tokenizer(struct api_service *svc, const struct api_builtin_checkpoint *b,
			 struct api_error *err)
{
	char file[160], msg[512];
	struct tokenizer *tok = NULL;

	snprintf(file, sizeof file, "%s/tokenizer.json", b->source);
	if (api_tokenizer_load_json(&tok, b->tokenizer, b->tokenizer_len, file, msg,
				    sizeof msg) != 0)
		return api_fail(err, API_E_MALFORMED_WEIGHTS, "", "built-in model %s: %s", b->name, msg);
	if (api_service_add_tokenizer(svc, b->name, tok, file, err) != 0)
		return -1;
	return api_service_set_model_tokenizer(svc, b->name, b->name, err);
}

int api_service_add_builtin_checkpoints(struct api_service *svc, struct api_error *err)
{
	for (size_t i = 0; i < api_builtin_checkpoints_count; i++) {
		const struct api_builtin_checkpoint *b = &api_builtin_checkpoints[i];
		struct attn_checkpoint_config cfg;
		struct attn_checkpoint *ck = NULL;

		/* a --model or --tokenizer of the same name stands in its place */
		if (registry_find(svc, b->name) != NULL ||
		    registry_find_tokenizer(svc, b->name) != NULL)
			continue;
		if (load_stack(b, &ck, &cfg, err) != 0)
			return -1;
		/* the service takes ck, on failure too */
		if (api_service_add_checkpoint(svc, b->name, ck, cfg.model_type, NULL, NULL,
					       b->source, err) != 0 ||
		    add_tokenizer(svc, b, err) != 0)
			return -1;
	}
	return 0;
}
