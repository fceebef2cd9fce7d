/*
 * tile.c: the two attention products on register tiles (see tile.h).
 *
 * Vector kernels work on register tiles of ROWS query rows by VECS vectors
 * of 16 floats (24 accumulators of the 32 zmm registers):
 *   qk: for each d, the 4 vectors kt[d, j0 .. j0 + 64) times q[r, d]
 *       broadcast, for 6 rows r
 *   pv: for each key j, the 4 vectors v[j, c0 .. c0 + 64) times p[r, j]
 *       broadcast, for 6 rows r
 * The AVX2 kernels walk the same way on the 16 ymm registers: tiles of 6
 * rows by one 16-float vector held as two 8-float halves (12 accumulators,
 * the vector's two halves of kt or v, one broadcast), a score row's tail
 * stored under vmaskmovps masks.
 * Every element is one chain of fused multiply-adds in d (qk) or j (pv)
 * order; the scalar twins do the same chain with fmaf, so all give the
 * same bits.
 */
#include "tile.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_TILE_X86 1
#endif

enum {
	ROWS = 6,	 /* query rows per register tile */
	VECS = 4,	 /* vectors of 16 floats per register tile row */
	VEC = TILE_COLS, /* floats per vector: kt's padding, vmax's lanes */
	ROWS2 = 6,	 /* AVX2: query rows per register tile of one vector */
	HALF = 8,	 /* AVX2: floats per ymm, half a vector */
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
#ifdef HAVE_TILE_X86
	if (D % VEC != 0)
		return TILE_SCALAR;
	if (__builtin_cpu_supports("avx512f"))
		return TILE_AVX512;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return TILE_AVX2;
#else
	(void)D;
#endif
	return TILE_SCALAR;
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

#ifdef HAVE_TILE_X86
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

/* ---- AVX2 kernels ---------------------------------------------------------- */

#define AVX2 __attribute__((target("avx2,fma")))
#define INLINE_AVX2 __attribute__((target("avx2,fma"), always_inline)) static inline

/* Lanes [0, t) of a 16-float vector as the vmaskmovps masks of its halves. */
struct half_masks {
	__m256i lo, hi;
};

INLINE_AVX2 struct half_masks half_masks(unsigned t)
{
	const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	const __m256i tt = _mm256_set1_epi32((int)t);
	struct half_masks k = {
	    _mm256_cmpgt_epi32(tt, lane),
	    _mm256_cmpgt_epi32(tt, _mm256_add_epi32(lane, _mm256_set1_epi32(HALF)))};

	return k;
}

/* Lanes of mx where keep is set become max(mx, x); all of them when full. */
INLINE_AVX2 __m256 max_where(__m256 mx, __m256 x, __m256i keep, int full)
{
	__m256 both = _mm256_max_ps(mx, x);

	return full ? both : _mm256_blendv_ps(mx, both, _mm256_castsi256_ps(keep));
}

/*
 * s[r, 0 .. t) for r < R (<= ROWS2): one register tile of q kt, unscaled,
 * over one 16-column vector of kt (t < 16 at the row's tail: the lanes past
 * t, q times kt's zero padding, are neither stored nor kept in vmax).
 */
INLINE_AVX2 void qk_block2(float *s, size_t lds, float *vmax, const float *q, size_t ldq,
			   const float *kt, size_t ldk, size_t D, unsigned t, int R)
{
	__m256 lo[ROWS2], hi[ROWS2];
	const struct half_masks k = half_masks(t);
	const int full = t == VEC;

	UNROLL
	for (int r = 0; r < R; r++)
		lo[r] = hi[r] = _mm256_setzero_ps();
	for (size_t d = 0; d < D; d++) {
		__m256 k_lo = _mm256_loadu_ps(kt + d * ldk),
		       k_hi = _mm256_loadu_ps(kt + d * ldk + HALF);

		UNROLL
		for (int r = 0; r < R; r++) {
			__m256 qv = _mm256_broadcast_ss(q + (size_t)r * ldq + d);

			lo[r] = _mm256_fmadd_ps(qv, k_lo, lo[r]);
			hi[r] = _mm256_fmadd_ps(qv, k_hi, hi[r]);
		}
	}
	UNROLL
	for (int r = 0; r < R; r++) {
		float *row = s + (size_t)r * lds;

		if (full) {
			_mm256_storeu_ps(row, lo[r]);
			_mm256_storeu_ps(row + HALF, hi[r]);
		} else {
			_mm256_maskstore_ps(row, k.lo, lo[r]);
			_mm256_maskstore_ps(row + HALF, k.hi, hi[r]);
		}
	}
	if (vmax == NULL)
		return;
	UNROLL
	for (int r = 0; r < R; r++) {
		float *mx = vmax + (size_t)r * VEC;

		_mm256_storeu_ps(mx, max_where(_mm256_loadu_ps(mx), lo[r], k.lo, full));
		_mm256_storeu_ps(mx + HALF,
				 max_where(_mm256_loadu_ps(mx + HALF), hi[r], k.hi, full));
	}
}

/* s[r, 0 .. t) *= scale for r < m, while the strip is still in L1 (apart
 * from qk_block2's registers, as scale_strip). */
__attribute__((target("avx2,fma"), noinline)) static void
scale_strip2(float *s, size_t lds, size_t m, unsigned t, float scale)
{
	const __m256 f = _mm256_set1_ps(scale);
	const struct half_masks k = half_masks(t);

	for (size_t r = 0; r < m; r++) {
		float *row = s + r * lds;

		_mm256_maskstore_ps(row, k.lo, _mm256_mul_ps(_mm256_maskload_ps(row, k.lo), f));
		_mm256_maskstore_ps(row + HALF, k.hi,
				    _mm256_mul_ps(_mm256_maskload_ps(row + HALF, k.hi), f));
	}
}

/* Rows [0, m) of one 16-column strip, t of its columns keys: ROWS2 at a
 * time, then 3, then 1; then scaled (a caller that scaled q passes 1). */
INLINE_AVX2 void qk_strip2(float *s, size_t lds, float *vmax, const float *q, size_t ldq,
			   const float *kt, size_t ldk, size_t m, size_t D, float scale, unsigned t)
{
	size_t r = 0;

	for (; r + ROWS2 <= m; r += ROWS2)
		qk_block2(s + r * lds, lds, vmax_row(vmax, r), q + r * ldq, ldq, kt, ldk, D, t,
			  ROWS2);
	for (; r + 3 <= m; r += 3)
		qk_block2(s + r * lds, lds, vmax_row(vmax, r), q + r * ldq, ldq, kt, ldk, D, t, 3);
	for (; r < m; r++)
		qk_block2(s + r * lds, lds, vmax_row(vmax, r), q + r * ldq, ldq, kt, ldk, D, t, 1);
	if (scale != 1.0f)
		scale_strip2(s, lds, m, t, scale);
}

AVX2 static void qk_avx2(float *s, size_t lds, float *vmax, const float *q, size_t ldq,
			 const float *kt, size_t ldk, size_t m, size_t n, size_t D, float scale)
{
	size_t vecs = tile_cols(n) / VEC;
	/* keys in the last vector: n % 16 of them, or all */
	unsigned tail = n % VEC == 0 ? VEC : (unsigned)(n % VEC);

	/* column strips outermost: a strip of kt (D x 16 floats) stays in L1
	 * while every row passes over it */
	for (size_t c = 0; c < vecs; c++)
		qk_strip2(s + c * VEC, lds, vmax, q, ldq, kt + c * VEC, ldk, m, D, scale,
			  c + 1 == vecs ? tail : VEC);
}

/* acc[r, 0 .. 16) += p[r, :n] v[:n, 0 .. 16) for r < R (<= ROWS2). */
INLINE_AVX2 void pv_block2(float *acc, size_t lda, const float *p, size_t ldp, const float *v,
			   size_t n, size_t D, int R)
{
	__m256 lo[ROWS2], hi[ROWS2];

	UNROLL
	for (int r = 0; r < R; r++) {
		lo[r] = _mm256_loadu_ps(acc + (size_t)r * lda);
		hi[r] = _mm256_loadu_ps(acc + (size_t)r * lda + HALF);
	}
	for (size_t j = 0; j < n; j++) {
		__m256 v_lo = _mm256_loadu_ps(v + j * D), v_hi = _mm256_loadu_ps(v + j * D + HALF);

		UNROLL
		for (int r = 0; r < R; r++) {
			__m256 pv = _mm256_broadcast_ss(p + (size_t)r * ldp + j);

			lo[r] = _mm256_fmadd_ps(pv, v_lo, lo[r]);
			hi[r] = _mm256_fmadd_ps(pv, v_hi, hi[r]);
		}
	}
	UNROLL
	for (int r = 0; r < R; r++) {
		_mm256_storeu_ps(acc + (size_t)r * lda, lo[r]);
		_mm256_storeu_ps(acc + (size_t)r * lda + HALF, hi[r]);
	}
}

INLINE_AVX2 void pv_strip2(float *acc, size_t lda, const float *p, size_t ldp, const float *v,
			   size_t m, size_t n, size_t D)
{
	size_t r = 0;

	for (; r + ROWS2 <= m; r += ROWS2)
		pv_block2(acc + r * lda, lda, p + r * ldp, ldp, v, n, D, ROWS2);
	for (; r + 3 <= m; r += 3)
		pv_block2(acc + r * lda, lda, p + r * ldp, ldp, v, n, D, 3);
	for (; r < m; r++)
		pv_block2(acc + r * lda, lda, p + r * ldp, ldp, v, n, D, 1);
}

AVX2 static void pv_avx2(float *acc, size_t lda, const float *p, size_t ldp, const float *v,
			 size_t m, size_t n, size_t D)
{
	for (size_t c = 0; c < D / VEC; c++)
		pv_strip2(acc + c * VEC, lda, p, ldp, v + c * VEC, m, n, D);
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
#ifdef HAVE_TILE_X86
	if (simd == TILE_AVX512) {
		qk_avx512(s, lds, vmax, q, ldq, kt, ldk, m, n, D, scale);
		return;
	}
	if (simd == TILE_AVX2) {
		qk_avx2(s, lds, vmax, q, ldq, kt, ldk, m, n, D, scale);
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
#ifdef HAVE_TILE_X86
	if (simd == TILE_AVX512) {
		pv_avx512(acc, lda, p, ldp, v, m, n, D);
		return;
	}
	if (simd == TILE_AVX2) {
		pv_avx2(acc, lda, p, ldp, v, m, n, D);
		return;
	}
#endif
	(void)simd;
	pv_scalar(acc, lda, p, ldp, v, m, n, D);
}
