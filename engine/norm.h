/*
 * norm.h: the normalizations of a transformer block, on rows of [n, E].
 *
 *   layer  y = (x - mean) / sqrt(var + eps) * w + b   var biased (mean of
 *          squared deviations), as torch.nn.LayerNorm
 *   rms    y = x / sqrt(mean(x^2) + eps) * w          Llama's RMSNorm
 * w [E] may be NULL (1), b [E] may be NULL (0). out may be x (in place).
 *
 * The fast kernels accumulate in float across eight lanes (so the compiler
 * vectorizes them); the _ref twins sum in double, one element at a time.
 * Pure functions on caller buffers; nothing is allocated or kept.
 */
#ifndef ATTN_NORM_H
#define ATTN_NORM_H

#include <stddef.h>

void norm_layer_rows(float *out /* [n, E] */, const float *x /* [n, E] */, size_t n, size_t E,
		     const float *w /* [E] */, const float *b /* [E] */, float eps);

void norm_rms_rows(float *out /* [n, E] */, const float *x /* [n, E] */, size_t n, size_t E,
		   const float *w /* [E] */, const float *b /* [E] */, float eps);

void norm_layer_rows_ref(float *out, const float *x, size_t n, size_t E, const float *w,
			 const float *b, float eps);

void norm_rms_rows_ref(float *out, const float *x, size_t n, size_t E, const float *w,
		       const float *b, float eps);

#endif
