/*
 * tile.c: the two attention products on register tiles (see tile.h).
 *
 * Vector kernels work on register tiles of ROWS query rows by VECS vectors
 * of 16 floats (24 accumulators of the 32 zmm registers):
 *   qk: for each d, the 4 vectors kt[d, j0 .. j0 + 64) times q[r, d]
 *       broadcast, for 6 rows r
 *   pv: for each key j, the 4 vectors v[j, c0 .. c0 + 64) times p[r, j]
 *       broadcast, for 6 rows r
 * Every element is one chain of fused multiply-adds in d (qk) or j (pv)
 * order; the scalar twins do the same chain with fmaf, so both give the
 * same bits.
 */
#include "tile.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_TILE_AVX512 1
#endif

enum {
	ROWS = 6, /* query rows per register tile */
	VECS = 4, /* vectors of 16 floats per register tile row */
	VEC = TILE_COLS, /* floats per vector: kt's padding, vmax's lanes */
};

size_t tile_cols(size_t n)
{
	return (n + TILE_COLS - 1) / TILE_COLS * TILE_COLS;
}

size_t tile_ld(size_t n)
{
	return tile_cols(n) + TILE_COLS;
}

int tile_simd_available(size_t D)
{
#ifdef HAVE_TILE_AVX512
	return D % VEC == 0 && __builtin_cpu_supports("avx512f");
#else
	(void)D;
	return 0;
#endif
}

/* Key rows are read whole (their stride is a multiple of 4 KiB at E = 512,
 * which walking down a column would make every read miss L1). */
void tile_pack_kt(float *kt, size_t ldk, const float *k, size_t ldk_in, size_t n, size_t D)
{
	size_t cols = tile_cols(n);

	for (size_t j = 0; j < n; j++) {
		const float *key = k + j * ldk_in;

		for (size_t d = 0; d < D; d++)
			kt[d * ldk + j] = key[d];
	}
	for (size_t d = 0; d < D; d++)
		memset(kt + d * ldk + n, 0, (cols - n) * sizeof(float));
}

void tile_pack_v(float *v_out, const float *v, size_t ldv_in, size_t n, size_t D)
{
	for (size_t j = 0; j < n; j++)
		memcpy(v_out + j * D, v + j * ldv_in, D * sizeof(float));
}

/* Row r of vmax [m, VEC], or NULL when the lane maxima are not kept. */
static inline float *vmax_row(float *vmax, size_t r)
{
	return vmax != NULL ? vmax + r * VEC : NULL;
}

/* ---- scalar twins -------------------------------------------------------- */

static void qk_scalar(float *s, size_t lds, float *vmax, const float *q, size_t ldq,
		      const float *kt, size_t ldk, size_t m, size_t n, size_t D, float scale)
{
	for (size_t r = 0; r < m; r++)
		for (size_t j = 0; j < n; j++) {
			float acc = 0.0f;

			for (size_t d = 0; d < D; d++)
				acc = fmaf(q[r * ldq + d], kt[d * ldk + j], acc);
			s[r * lds + j] = acc * scale;
			if (vmax != NULL && acc > vmax[r * VEC + j % VEC]) /* unscaled, as qk_block */
				vmax[r * VEC + j % VEC] = acc;
		}
}

static void pv_scalar(float *acc, size_t lda, const float *p, size_t ldp, const float *v,
		      size_t m, size_t n, size_t D)
{
	for (size_t r = 0; r < m; r++)
		for (size_t c = 0; c < D; c++) {
			float a = acc[r * lda + c];

			for (size_t j = 0; j < n; j++)
				a = fmaf(p[r * ldp + j], v[j * D + c], a);
			acc[r * lda + c] = a;
		}
}

/* ---- AVX-512F kernels ---------------------------------------------------- */

#ifdef HAVE_TILE_AVX512
#define AVX512 __attribute__((target("avx512f")))
#define INLINE_AVX512 __attribute__((target("avx512f"), always_inline)) static inline
/* R and V are constants at each call: unrolled, the tiles live in registers */
#define UNROLL _Pragma("GCC unroll 8")

/*
 * s[r, j0 + 16 c] for r < R (<= ROWS), c < V (<= VECS): one register tile
 * of q kt (unscaled: a scale held through the loop pushes two of the tile's
 * registers to the stack, 20% slower).
 */
INLINE_AVX512 void qk_block(float *s, size_t lds, float *vmax, const float *q, size_t ldq,
			    const float *kt, size_t ldk, size_t D, __mmask16 last, int R, int V)
{
	__m512 acc[ROWS][VECS];

	UNROLL
	for (int r = 0; r < R; r++)
		UNROLL
		for (int c = 0; c < V; c++)
			acc[r][c] = _mm512_setzero_ps();
	for (size_t d = 0; d < D; d++) {
		__m512 k[VECS];

		UNROLL
		for (int c = 0; c < V; c++)
			k[c] = _mm512_loadu_ps(kt + d * ldk + (size_t)c * VEC);
		UNROLL
		for (int r = 0; r < R; r++) {
			__m512 qv = _mm512_set1_ps(q[(size_t)r * ldq + d]);

			UNROLL
			for (int c = 0; c < V; c++)
				acc[r][c] = _mm512_fmadd_ps(qv, k[c], acc[r][c]);
		}
	}
	UNROLL
	for (int r = 0; r < R; r++) {
		UNROLL
		for (int c = 0; c + 1 < V; c++)
			_mm512_storeu_ps(s + (size_t)r * lds + (size_t)c * VEC, acc[r][c]);
		_mm512_mask_storeu_ps(s + (size_t)r * lds + (size_t)(V - 1) * VEC, last,
				      acc[r][V - 1]);
	}
	if (vmax == NULL)
		return;
	UNROLL
	for (int r = 0; r < R; r++) {
		__m512 mx = _mm512_loadu_ps(vmax + (size_t)r * VEC);

		UNROLL
		for (int c = 0; c + 1 < V; c++)
			mx = _mm512_max_ps(mx, acc[r][c]);
		mx = _mm512_mask_max_ps(mx, last, mx, acc[r][V - 1]);
		_mm512_storeu_ps(vmax + (size_t)r * VEC, mx);
	}
}

/* s[r, 16 c] *= scale for r < m, c < V (the last vector under the mask
 * `last`), while the strip is still in L1; not inlined, so that the compiler
 * keeps it apart from qk_block's registers. */
__attribute__((target("avx512f"), noinline)) static void scale_strip(float *s, size_t lds,
								     size_t m, __mmask16 last,
								     int V, float scale)
{
	__m512 f = _mm512_set1_ps(scale);

	for (size_t r = 0; r < m; r++)
		for (int c = 0; c < V; c++) {
			float *p = s + r * lds + (size_t)c * VEC;
			__mmask16 k = c + 1 < V ? (__mmask16)0xffff : last;

			_mm512_mask_storeu_ps(p, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, p), f));
		}
}

/* Rows [0, m) of one column strip of V vectors, the last one stored under
 * the mask `last`: ROWS at a time, then 3, then 1; then scaled (a caller
 * that scaled q passes 1). */
INLINE_AVX512 void qk_strip(float *s, size_t lds, float *vmax, const float *q, size_t ldq,
			    const float *kt, size_t ldk, size_t m, size_t D, float scale,
			    __mmask16 last, int V)
{
	size_t r = 0;

	for (; r + ROWS <= m; r += ROWS)
		qk_block(s + r * lds, lds, vmax_row(vmax, r), q + r * ldq, ldq, kt, ldk, D, last,
			 ROWS, V);
	for (; r + 3 <= m; r += 3)
		qk_block(s + r * lds, lds, vmax_row(vmax, r), q + r * ldq, ldq, kt, ldk, D, last, 3,
			 V);
	for (; r < m; r++)
		qk_block(s + r * lds, lds, vmax_row(vmax, r), q + r * ldq, ldq, kt, ldk, D, last, 1,
			 V);
	if (scale != 1.0f)
		scale_strip(s, lds, m, last, V, scale);
}

AVX512 static void qk_avx512(float *s, size_t lds, float *vmax, const float *q, size_t ldq,
			     const float *kt, size_t ldk, size_t m, size_t n, size_t D,
			     float scale)
{
	size_t vecs = tile_cols(n) / VEC, c = 0;
	const __mmask16 full = 0xffff;
	/* lanes of the last vector that hold keys (n % 16 of them, or all) */
	__mmask16 tail = n % VEC == 0 ? full : (__mmask16)((1u << (n % VEC)) - 1u);

	/* column strips outermost: a strip of kt (D x 64 floats) stays in L1
	 * while every row of the tile passes over it */
	for (; c + VECS <= vecs; c += VECS)
		qk_strip(s + c * VEC, lds, vmax, q, ldq, kt + c * VEC, ldk, m, D, scale,
			 c + VECS == vecs ? tail : full, VECS);
	for (; c < vecs; c++)
		qk_strip(s + c * VEC, lds, vmax, q, ldq, kt + c * VEC, ldk, m, D, scale,
			 c + 1 == vecs ? tail : full, 1);
}

/* acc[r, c0 + 16 c] += p[r, :n] v[:n, c0 + 16 c] for r < R, c < V. */
INLINE_AVX512 void pv_block(float *acc, size_t lda, const float *p, size_t ldp, const float *v,
			    size_t n, size_t D, int R, int V)
{
	__m512 a[ROWS][VECS];

	UNROLL
	for (int r = 0; r < R; r++)
		UNROLL
		for (int c = 0; c < V; c++)
			a[r][c] = _mm512_loadu_ps(acc + (size_t)r * lda + (size_t)c * VEC);
	for (size_t j = 0; j < n; j++) {
		__m512 vv[VECS];

		UNROLL
		for (int c = 0; c < V; c++)
			vv[c] = _mm512_loadu_ps(v + j * D + (size_t)c * VEC);
		UNROLL
		for (int r = 0; r < R; r++) {
			__m512 pv = _mm512_set1_ps(p[(size_t)r * ldp + j]);

			UNROLL
			for (int c = 0; c < V; c++)
				a[r][c] = _mm512_fmadd_ps(pv, vv[c], a[r][c]);
		}
	}
	UNROLL
	for (int r = 0; r < R; r++)
		UNROLL
		for (int c = 0; c < V; c++)
			_mm512_storeu_ps(acc + (size_t)r * lda + (size_t)c * VEC, a[r][c]);
}

INLINE_AVX512 void pv_strip(float *acc, size_t lda, const float *p, size_t ldp, const float *v,
			    size_t m, size_t n, size_t D, int V)
{
	size_t r = 0;

	for (; r + ROWS <= m; r += ROWS)
		pv_block(acc + r * lda, lda, p + r * ldp, ldp, v, n, D, ROWS, V);
	for (; r + 3 <= m; r += 3)
		pv_block(acc + r * lda, lda, p + r * ldp, ldp, v, n, D, 3, V);
	for (; r < m; r++)
		pv_block(acc + r * lda, lda, p + r * ldp, ldp, v, n, D, 1, V);
}

AVX512 static void pv_avx512(float *acc, size_t lda, const float *p, size_t ldp, const float *v,
			     size_t m, size_t n, size_t D)
{
	size_t vecs = D / VEC, c = 0;

	for (; c + VECS <= vecs; c += VECS)
		pv_strip(acc + c * VEC, lda, p, ldp, v + c * VEC, m, n, D, VECS);
	for (; c < vecs; c++)
		pv_strip(acc + c * VEC, lda, p, ldp, v + c * VEC, m, n, D, 1);
}
#endif

/* vmax of s [m, n] (rows lds apart) by a pass over it. */
static void lane_max(float *vmax, const float *s, size_t lds, size_t m, size_t n)
{
	for (size_t r = 0; r < m; r++)
		for (size_t j = 0; j < n; j++)
			if (s[r * lds + j] > vmax[r * VEC + j % VEC])
				vmax[r * VEC + j % VEC] = s[r * lds + j];
}

static void qk_kernel(float *s, size_t lds, float *vmax, const float *q, size_t ldq,
		      const float *kt, size_t ldk, size_t m, size_t n, size_t D, float scale,
		      int simd)
{
#ifdef HAVE_TILE_AVX512
	if (simd) {
		qk_avx512(s, lds, vmax, q, ldq, kt, ldk, m, n, D, scale);
		return;
	}
#endif
	(void)simd;
	qk_scalar(s, lds, vmax, q, ldq, kt, ldk, m, n, D, scale);
}

void tile_qk(float *s, size_t lds, float *vmax, const float *q, size_t ldq, const float *kt,
	     size_t ldk, size_t m, size_t n, size_t D, float scale, int simd)
{
	/* the vector kernel keeps the max of its unscaled tiles; for a scale
	 * above 0 the max of the rounded products scale x is the rounded
	 * product of the max (rounding is monotone), but below 0 it would be
	 * the min: that takes a pass */
	float *kept = scale > 0.0f ? vmax : NULL;

	for (size_t k = 0; vmax != NULL && k < m * VEC; k++)
		vmax[k] = -INFINITY;
	qk_kernel(s, lds, kept, q, ldq, kt, ldk, m, n, D, scale, simd);
	for (size_t k = 0; kept != NULL && scale != 1.0f && k < m * VEC; k++)
		vmax[k] *= scale;
	if (vmax != NULL && kept == NULL)
		lane_max(vmax, s, lds, m, n);
}

float tile_row_max(const float *vmax_row)
{
	float mx = vmax_row[0];

	for (size_t l = 1; l < VEC; l++)
		mx = vmax_row[l] > mx ? vmax_row[l] : mx;
	return mx;
}

void tile_pv(float *acc, size_t lda, const float *p, size_t ldp, const float *v, size_t m,
	     size_t n, size_t D, int simd)
{
#ifdef HAVE_TILE_AVX512
	if (simd) {
		pv_avx512(acc, lda, p, ldp, v, m, n, D);
		return;
	}
#endif
	(void)simd;
	pv_scalar(acc, lda, p, ldp, v, m, n, D);
}
