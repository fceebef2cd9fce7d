/* tensor.c: views, the KV-cache concatenation and the finite-value check. */
#include "attention.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

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

/* Whether a float's exponent bits are all set: inf or NaN. */
static uint32_t nonfinite_bit(const float *x)
{
	uint32_t bits;

	memcpy(&bits, x, sizeof(bits));
	return (bits & 0x7f800000u) == 0x7f800000u;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The whole vectors of x[0, n): nonzero if one holds inf or NaN; *done: how
 * many floats were seen. */
__attribute__((target("avx512f"))) static uint32_t nonfinite_avx512(const float *x, size_t n,
								      size_t *done)
{
	const __m512i exponent = _mm512_set1_epi32(0x7f800000);
	__mmask16 bad = 0;
	size_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m512i v = _mm512_loadu_si512(x + i);

		bad |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(v, exponent), exponent);
	}
	*done = i;
	return bad;
}
#endif

int attn_all_finite(const float *x, size_t n)
{
	uint32_t bad = 0;
	size_t i = 0;

#if defined(__x86_64__) && defined(__GNUC__)
	if (__builtin_cpu_supports("avx512f"))
		bad = nonfinite_avx512(x, n, &i);
#endif
	/* 16 at a time with no early exit: the compiler vectorises the block
	 * (a libm isfinite per element, branching, cost 6% of a short layer) */
	for (; i + 16 <= n; i += 16)
		for (size_t k = 0; k < 16; k++)
			bad |= nonfinite_bit(x + i + k);
	for (; i < n; i++)
		bad |= nonfinite_bit(x + i);
	return bad == 0;
}

enum attn_status attn_check_finite(const float *x, size_t n, const char *field,
				   struct attn_error *err)
{
	if (attn_all_finite(x, n))
		return ATTN_OK;
	for (size_t i = 0; i < n; i++)
		if (!isfinite(x[i]))
			return attn_fail(err, ATTN_ERR_NONFINITE, field, i,
					 "%s holds a non-finite value at element %zu", field, i);
	return ATTN_OK;
}
