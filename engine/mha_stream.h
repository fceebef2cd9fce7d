/*
 * mha_stream.h: the layer's key-streaming path, taken when neither weights
 * nor scores are asked for (see mha_stream.c). Internal to the engine; the
 * request is validated by mha.c before it gets here.
 *
 * Ownership: as mha.h. req, core and ws are the caller's, borrowed for the
 * call; nothing is allocated (ws is the whole workspace) or kept.
 */
#ifndef ATTN_MHA_STREAM_H
#define ATTN_MHA_STREAM_H

#include "attention.h"
#include "mha.h"

/* Workspace floats the path needs. */
enum attn_status mha_stream_workspace(const struct attn_mha *req, size_t *floats,
				      struct attn_error *err);

/*
 * Runs the layer. core carries the mask, scale and softcap (its views are not
 * used); ws holds mha_stream_workspace floats. req->out is written, and used
 * as scratch for Q before that. On return ws begins with C [B, Lq, H D], the
 * heads' outputs concatenated (the rows W_O was applied to).
 * Returns ATTN_ERR_NONFINITE naming q, k or v (the first of them, index 0)
 * when a projection of the finite inputs overflowed float32, as the whole-row
 * path's check of its kept projections does; out is then not to be read.
 */
enum attn_status mha_stream_forward(const struct attn_mha *req, const struct attn_sdpa *core,
				    float *ws, struct attn_error *err);

#endif
