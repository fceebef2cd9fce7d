/*
 * positional.h: positional encodings.
 *
 *   sinusoidal  Vaswani et al. 2017, added to the input embeddings before the
 *               projections: pe[p, 2i] = sin(p / theta^(2i/E)),
 *               pe[p, 2i+1] = cos(p / theta^(2i/E)).
 *   rope        Su et al. 2021, rotating Q and K per head after projection.
 *               INTERLEAVED rotates channel pairs (2i, 2i+1), as the seeds'
 *               apply_rope; HALF rotates (i, i + R/2), GPT-NeoX / Llama's
 *               rotate_half. Angle = (p / scaling) * theta^(-2i / R) over the
 *               first R = rotary_dim channels of each head; the rest pass.
 *   alibi       Press et al. 2022 with BLOOM's slopes: score bias
 *               -slope[h] * |qpos - kpos| (see attention.h). Only distances
 *               matter: without lists qpos is the mask's aligned query
 *               position and kpos the key index; with lists, the lists
 *               (unscaled), and a side without one beside a side with one
 *               is at offset + index.
 * Positions are offset + index, or the caller's explicit list. In
 * self-attention the keys are the queries and use q_positions.
 *
 * Pure functions on caller buffers; nothing is allocated or kept.
 */
#ifndef ATTN_POSITIONAL_H
#define ATTN_POSITIONAL_H

#include <stddef.h>

#include "attention.h"

enum attn_pos_kind {
	ATTN_POS_NONE = 0,
	ATTN_POS_SINUSOIDAL,
	ATTN_POS_ROPE,
	ATTN_POS_ALIBI,
};

enum attn_rope_style {
	ATTN_ROPE_INTERLEAVED = 0,
	ATTN_ROPE_HALF,
};

struct attn_positional {
	enum attn_pos_kind kind;
	double theta;            /* 0 means 10000 */
	enum attn_rope_style style;
	size_t rotary_dim;       /* 0 means D; must be even and <= D */
	double scaling;          /* linear position scaling; 0 means 1 */
	size_t offset;           /* first position when no explicit list */
	const double *q_positions; /* [Lq] or NULL */
	const double *k_positions; /* [Lk] or NULL */
};

/* Position of index i: list[i] when list is given, else offset + i. */
double attn_position(const struct attn_positional *pos, const double *list, size_t i);

/* x [L, E] += pe of sequence indices first .. first + L - 1 (list may be
 * NULL: positions offset + index). */
void attn_sinusoidal_add(float *x /* [L, E] */, size_t L, size_t E, size_t first,
			 const struct attn_positional *pos, const double *list);

/*
 * Rotates every head of x in place: x viewed as [B, heads, L, D] by x (the
 * view's data is written). positions as attn_position(pos, list, l).
 */
void attn_rope_apply(struct attn_view x, size_t B, size_t heads, size_t L, size_t D,
		     const struct attn_positional *pos, const double *list);

/*
 * The same on raw strides: rows l < L of x, at sequence indices first + l,
 * each holding `heads` head vectors of D channels head_stride apart;
 * B batch items batch_stride apart. x[b, l, h, :] is at
 * x + b * batch_stride + l * row_stride + h * head_stride.
 */
void attn_rope_rows(float *x, size_t batch_stride, size_t B, size_t row_stride, size_t L,
		    size_t first, size_t heads, size_t head_stride, size_t D,
		    const struct attn_positional *pos, const double *list);

/*
 * Hugging Face's Llama RoPE (rotate_half, HALF style) from a table: rows
 * l < L of x at positions l, each holding `heads` head vectors of D channels
 * head_stride apart, B items batch_stride apart (as attn_rope_rows). In
 * float, as torch computes it: angle = inv_freq[i] * l, c = cos(angle) * a,
 * s = sin(angle) * a with a = attention_scaling (0 means 1), then
 *   x'[i] = x[i] c - x[i + D/2] s,   x'[i + D/2] = x[i + D/2] c + x[i] s.
 * inv_freq holds D / 2 entries; D is even.
 */
void attn_rope_table_rows(float *x, size_t batch_stride, size_t B, size_t row_stride,
			  size_t L, size_t heads, size_t head_stride, size_t D,
			  const float *inv_freq /* [D / 2] */, float attention_scaling);

/* Checks rotary dim against D and fills *R: ATTN_ERR_ROPE_DIM when odd or > D. */
enum attn_status attn_rope_dim(const struct attn_positional *pos, size_t D, size_t *R,
			       struct attn_error *err);

#endif
