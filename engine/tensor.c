/* tensor.c: views, the KV-cache concatenation and the finite-value check. */
#include "attention.h"

#include <math.h>
#include <string.h>

struct attn_view attn_view_bhld(float *data, size_t heads, size_t len, size_t dim)
{
	struct attn_view v = { data, heads * len * dim, len * dim, dim };

	return v;
}

struct attn_view attn_view_blhd(float *data, size_t heads, size_t len, size_t dim)
{
	struct attn_view v = { data, len * heads * dim, dim, heads * dim };

	return v;
}

struct attn_cview attn_cview_bhld(const float *data, size_t heads, size_t len, size_t dim)
{
	struct attn_cview v = { data, heads * len * dim, len * dim, dim };

	return v;
}

struct attn_cview attn_cview_blhd(const float *data, size_t heads, size_t len, size_t dim)
{
	struct attn_cview v = { data, len * heads * dim, dim, heads * dim };

	return v;
}

void attn_kv_concat(float *present, const float *past, struct attn_cview fresh, size_t B,
		    size_t Hkv, size_t P, size_t S, size_t dim)
{
	for (size_t b = 0; b < B; b++)
		for (size_t h = 0; h < Hkv; h++) {
			/* seek to present[b, h, 0, :] and past[b, h, 0, :] */
			float *dst = present + (b * Hkv + h) * (P + S) * dim;

			if (P > 0)
				memcpy(dst, past + (b * Hkv + h) * P * dim, P * dim * sizeof(float));
			for (size_t s = 0; s < S; s++)
				/* fresh[b, h, s, :] goes to present[b, h, P + s, :] */
				memcpy(dst + (P + s) * dim,
				       fresh.data + b * fresh.batch_stride + h * fresh.head_stride +
					       s * fresh.row_stride,
				       dim * sizeof(float));
		}
}

enum attn_status attn_check_finite(const float *x, size_t n, const char *field,
				   struct attn_error *err)
{
	for (size_t i = 0; i < n; i++)
		if (!isfinite(x[i]))
			return attn_fail(err, ATTN_ERR_NONFINITE, field, i,
					 "%s holds a non-finite value at element %zu", field, i);
	return ATTN_OK;
}
