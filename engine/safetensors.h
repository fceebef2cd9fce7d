/*
 * safetensors.h: attention weights from a safetensors byte buffer.
 *
 * Format (huggingface/safetensors): an 8-byte little-endian header length N,
 * N bytes of JSON {"name": {"dtype", "shape", "data_offsets": [begin, end]},
 * "__metadata__": {...}}, then the tensor bytes, offsets relative to the end of
 * the header. Accepted dtypes: F32, F16, BF16 (converted to float on load).
 *
 * Recognised tensor names (after an optional caller prefix such as
 * "model.layers.0.self_attn."):
 *   PyTorch MultiheadAttention state_dict: in_proj_weight [3E, E],
 *     in_proj_bias [3E], out_proj.weight [E, E], out_proj.bias [E]
 *   Llama-style: q_proj.weight [H D, E], k_proj.weight [Hkv D, E],
 *     v_proj.weight [Hkv D, E], o_proj.weight [E, H D], optional
 *     q_proj.bias / k_proj.bias / v_proj.bias / o_proj.bias; Hkv is inferred
 *     from the k_proj rows.
 *   Either: optional embed_tokens.weight [vocab, E]. Real Llama / Qwen files
 *     keep it outside the layer ("model.embed_tokens.weight" beside
 *     "model.layers.N.self_attn."): the caller then gives its full name as
 *     embed_name, and the table becomes required (MISSING_TENSOR, field
 *     "embed_name", when absent).
 * The head count is not in the file; the caller gives it.
 *
 * The engine does no I/O: the caller reads the file and passes its bytes. The
 * parser never reads outside [buf, buf + len) and rejects overlapping or
 * out-of-range data offsets, shapes whose byte size disagrees with the offsets,
 * duplicate names and malformed headers, each with a named status and message.
 *
 * Ownership: buf, opts and its strings are borrowed for the call; on success
 * *out owns a new model (free with attn_model_free), on failure *out is NULL.
 */
#ifndef ATTN_SAFETENSORS_H
#define ATTN_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "status.h"

struct attn_safetensors_options {
	size_t num_heads;       /* H, required */
	const char *prefix;     /* prepended to every tensor name, or NULL */
	const char *embed_name; /* full name of the embedding table, or NULL:
	                           prefix + "embed_tokens.weight" */
};

enum attn_status attn_model_from_safetensors(struct attn_model **out, const uint8_t *buf,
					     size_t len,
					     const struct attn_safetensors_options *opts,
					     struct attn_error *err);

/* IEEE half and bfloat16 bit patterns to float (exact; NaN and Inf kept). */
float attn_f16_to_f32(uint16_t h);
float attn_bf16_to_f32(uint16_t h);

#endif
