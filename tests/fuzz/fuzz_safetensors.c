/*
 * fuzz_safetensors.c: attn_model_from_safetensors on the input bytes.
 *
 * Byte 0 chooses the options, the rest is the file:
 *   bits 0-6  num_heads (0 exercises the argument check)
 *   bit 7     the Qwen-style names of tests/data/fixtures/safetensors/
 *             qwen_prefixed_bf16: prefix "model.layers.0.self_attn.",
 *             embedding table "model.embed_tokens.weight"
 * A loaded model must be consistent with model.h (E = H D, Hkv divides H,
 * the arrays its configuration promises); it is freed before returning.
 */
#include <stdlib.h>

#include "fuzz.h"
#include "engine/safetensors.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

static void check_model(const struct attn_model *m, size_t num_heads)
{
	if (m->H != num_heads || m->Hkv == 0 || m->H % m->Hkv != 0 || m->E != m->H * m->D ||
	    m->w_qkv == NULL || m->w_o == NULL || (m->b_qkv == NULL) != (m->b_o == NULL) ||
	    (m->vocab > 0) != (m->embed != NULL))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct attn_safetensors_options opts = {0, NULL, NULL};
	struct attn_model *m = NULL;
	struct attn_error err;

	if (size < 1)
		return 0;
	opts.num_heads = data[0] & 0x7f;
	if (data[0] & 0x80) {
		opts.prefix = "model.layers.0.self_attn.";
		opts.embed_name = "model.embed_tokens.weight";
	}
	if (attn_model_from_safetensors(&m, data + 1, size - 1, &opts, &err) == ATTN_OK) {
		check_model(m, opts.num_heads);
		attn_model_free(m);
	} else if (m != NULL) {
		abort(); /* safetensors.h: on failure *out is NULL */
	}
	return 0;
}
