/*
 * builtin_tokenizers.c: the compiled-in tokenizers (builtin_tokenizers.h)
 * added to a service at start-up, each read as its files would be.
 */
#include "builtin_tokenizers.h"

#include <stdio.h>

#include "api/error.h"
#include "api/registry.h"
#include "api/service.h"
#include "api/tokenizer_file.h"

/* Builds one built-in tokenizer; the message names it on failure. */
static int build_one(const struct api_builtin_tokenizer *b, struct tokenizer **tok,
		     struct api_error *err)
{
	char msg[512];
	int rc;

	if (b->json != NULL)
		rc = api_tokenizer_load_json(tok, b->json, b->json_len, b->source, msg, sizeof msg);
	else
		rc = api_tokenizer_load_gpt2(tok, b->vocab, b->vocab_len, b->source, b->merges,
					     b->merges_len, b->source, msg, sizeof msg);
	if (rc != 0)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "built-in tokenizer %s: %s", b->name,
				msg);
	return 0;
}

int api_service_add_builtin_tokenizers(struct api_service *svc, struct api_error *err)
{
	for (size_t i = 0; i < api_builtin_tokenizers_count; i++) {
		const struct api_builtin_tokenizer *b = &api_builtin_tokenizers[i];
		struct tokenizer *tok = NULL;

		if (registry_find_tokenizer(svc, b->name) != NULL)
			continue; /* one loaded first (server/models.c) stands in its place */
		if (build_one(b, &tok, err) != 0 ||
		    api_service_add_tokenizer(svc, b->name, tok, b->source, err) != 0)
			return -1;
	}
	return 0;
}
