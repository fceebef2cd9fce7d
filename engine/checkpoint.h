/*
 * checkpoint.h: a Hugging Face checkpoint's safetensors files (one file or
 * shards) read into a struct attn_stack (stack.h).
 *
 * The caller reads config.json (api/checkpoint_config.c) into a struct
 * attn_checkpoint_config and maps the files (server/); the engine does no I/O.
 * Tensor names, per family, with an optional prefix that is found, not given
 * ("transformer." for gpt2, "bert." for bert, "model." for llama):
 *   gpt2  wte.weight [V, E], wpe.weight [P, E], ln_f.{weight,bias},
 *         h.N.ln_1 / ln_2.{weight,bias}, h.N.attn.c_attn.{weight [E, 3E],bias},
 *         h.N.attn.c_proj.{weight [E, E],bias}, h.N.mlp.c_fc.{weight [E, F],bias},
 *         h.N.mlp.c_proj.{weight [F, E],bias} (Conv1D: stored [in, out])
 *   bert  embeddings.{word,position,token_type}_embeddings.weight,
 *         embeddings.LayerNorm.{weight,bias} (or {gamma,beta}),
 *         encoder.layer.N.attention.self.{query,key,value}.{weight,bias},
 *         encoder.layer.N.attention.output.dense.{weight,bias},
 *         encoder.layer.N.attention.output.LayerNorm.{weight,bias},
 *         encoder.layer.N.intermediate.dense.{weight,bias},
 *         encoder.layer.N.output.dense.{weight,bias},
 *         encoder.layer.N.output.LayerNorm.{weight,bias}
 *   llama embed_tokens.weight [V, E], norm.weight,
 *         layers.N.input_layernorm.weight, layers.N.post_attention_layernorm.weight,
 *         layers.N.self_attn.{q,k,v,o}_proj.weight (+ .bias when the config
 *         says so; qwen2 has q/k/v biases), layers.N.mlp.{gate,up,down}_proj.weight
 * Tensors the stack does not use (lm_head, pooler, cls, rotary inv_freq,
 * attn.bias / masked_bias buffers) are ignored. F32 data is used in place
 * when 4-byte aligned; F16 and BF16 (and unaligned F32) are converted once,
 * and so is every F32 tensor but the embedding tables when the caller's
 * struct attn_checkpoint_memory asks for its weights in memory of its own.
 *
 * Ownership: files and their bytes are borrowed, and tensors used in place
 * keep pointing into them: the caller keeps every file's bytes alive and
 * unchanged until attn_checkpoint_free (bytes the load reported done may be
 * dropped and read back: a private read-only mapping's pages). On success
 * *out owns its copied and converted arrays (from mem->alloc, released with
 * mem->release), its blocks and its RoPE table; on failure *out is NULL and
 * err names the file and tensor.
 */
#ifndef ATTN_CHECKPOINT_H
#define ATTN_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "stack.h"
#include "status.h"

enum attn_rope_type {
	ATTN_ROPE_DEFAULT = 0,
	ATTN_ROPE_LINEAR, /* inv_freq / factor */
	ATTN_ROPE_LLAMA3, /* Llama 3.1's wavelength-banded scaling */
};

/* What config.json says, typed. Sizes of zero are inferred where the tensors
 * tell them (vocab, F, max_positions are checked against the tensors). */
/* Layers whose window a config can switch off one by one. */
enum { ATTN_CK_LAYER_TYPES = 1024 };

struct attn_checkpoint_config {
	enum attn_family family;
	char model_type[16]; /* config.json's, for people: "gpt2", "mistral", ... */
	size_t n_layers, E, H, Hkv, D, F;
	size_t vocab, max_positions, type_vocab;
	float norm_eps;
	enum attn_activation act;
	int attention_bias; /* llama: q/k/v/o biases; qwen2 sets q/k/v (qkv_bias) */
	int qkv_bias;       /* q/k/v biases only (qwen2) */
	int mlp_bias;       /* llama mlp_bias */
	int scale_attn;     /* gpt2 scale_attn_weights (default 1) */
	int positions_from_ids; /* roberta: positions past pad_id (stack.h) */
	size_t pad_id;          /* roberta: pad_token_id (padding_idx) */
	size_t window;	    /* sliding_window (mistral, qwen2), 0 = none */
	/* Layers the window skips (Qwen2's layer_types "full_attention"): 1 at
	 * [l] for l < ATTN_CK_LAYER_TYPES; layers past it all use the window
	 * (api/ refuses a config that would need more). */
	unsigned char full_attention[ATTN_CK_LAYER_TYPES];
	double rope_theta;
	enum attn_rope_type rope_type;
	double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
	size_t rope_original_max_positions;
};

struct attn_st_file {
	const char *name; /* for messages, e.g. "model-00001-of-00002.safetensors" */
	const uint8_t *bytes;
	size_t len;
};

/*
 * Where the weights a load copies or converts live, and what it tells the
 * caller as it reads the files. The engine makes no system calls, so memory
 * on large pages, or dropping a mapping's pages once read, is the caller's.
 * A NULL pointer (or a zeroed struct) to attn_checkpoint_load means: F32
 * used in place, conversions in calloc'd memory, nothing reported.
 */
struct attn_checkpoint_memory {
	/* 1: F32 tensors are copied into alloc's memory too, all but the
	 * embedding tables (a request reads a few of their rows: they stay where
	 * they lie). */
	int copy_f32;
	/* Memory for copied and converted tensors (at least bytes, any content;
	 * NULL when out of memory) and its release; both set or both NULL. */
	void *(*alloc)(void *ctx, size_t bytes);
	void (*release)(void *ctx, void *p);
	/* Bytes [at, at + len) of files[file] were copied or converted, a few
	 * MiB at a time, and the load reads them no more: the caller may drop
	 * their pages. NULL: not reported. */
	void (*done)(void *ctx, size_t file, size_t at, size_t len);
	void *ctx;
};

struct attn_checkpoint {
	struct attn_stack stack; /* its pointers lead into the files or `owned` */
	const char *dtype;       /* "F32", "F16", "BF16" or "mixed" (static) */
	size_t weight_bytes;     /* bytes of the tensors used, as stored */
	size_t owned_bytes;      /* bytes this struct allocated (copies, conversions) */
	void *owned;             /* internal: the allocations */
	struct attn_checkpoint_memory memory; /* internal: how `owned` is released */
};

/* mem: NULL, or the caller's (copied: it need not outlive the call, its
 * ctx must outlive the checkpoint when release uses it). */
enum attn_status attn_checkpoint_load(struct attn_checkpoint **out,
				      const struct attn_checkpoint_config *cfg,
				      const struct attn_st_file *files, size_t n_files,
				      const struct attn_checkpoint_memory *mem,
				      struct attn_error *err);

void attn_checkpoint_free(struct attn_checkpoint *ck);

/* Hugging Face's rope init functions: inv_freq [D / 2] for the config, in
 * float arithmetic as torch computes it. */
void attn_rope_inv_freq(float *inv_freq /* [D / 2] */, size_t D,
			const struct attn_checkpoint_config *cfg);

#endif
