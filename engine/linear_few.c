/*
 * linear_few.c: out = x W + bias for a few rows, W [E, w] read in place
 * (see linear_few.h).
 *
 * The vector kernel takes x in groups of up to 128 rows; for each, W in
 * blocks of KC rows. Each block packs the group's rows of x once ([k, row],
 * so that a step's broadcasts read one cache line) and then walks the block
 * in tiles of CT columns, within a tile strips of 16 columns left to right,
 * and within a strip the rows in register tiles of up to 16 (one
 * accumulator vector a row):
 *   for k in block: acc[r] += x[r, k] broadcast * W[k, c0 .. c0 + 16)
 * Each W row of the block is so read left to right, one cache line a strip;
 * while the first register tile of a strip works, it prefetches the same
 * rows' line of the next strip (or the next block's first strip), a strip
 * ahead; the other register tiles find the tile's block (KC x CT floats) in
 * L2. The accumulators go back to out between blocks: a float stored and
 * loaded is the float it was, so the chain per element is unbroken.
 *
 * The AVX2 kernel walks the same way (the same packing, blocks, tiles and
 * 16-column strips, each strip two 8-float halves); with 16 vector
 * registers its register tiles are of up to 6 rows (two accumulators a row).
 */
#include "linear_few.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_FEW_SIMD 1
#endif

enum {
	ROWS = 16,   /* rows of x per packed tile; per AVX-512 register tile (a zmm each) */
	ROWS2 = 6,   /* rows per AVX2 register tile: two ymm accumulators each */
	KC = 256,    /* rows of W per block: a strip's lines stay in L1 */
	VEC = 16,    /* floats per vector, columns per strip */
	CT = 256,    /* columns of W per tile of a block */
	GROUP = 128, /* rows of x packed at once (128 KB of stack) */
};

enum few_isa linear_few_best(void)
{
#ifdef HAVE_FEW_SIMD
	if (__builtin_cpu_supports("avx512f"))
		return FEW_AVX512;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return FEW_AVX2;
#endif
	return FEW_SCALAR;
}

/* ---- scalar twin ---------------------------------------------------------- */

static void few_scalar(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n,
		       const float *W, size_t ldw, const float *bias, size_t w, size_t E)
{
	for (size_t r = 0; r < n; r++)
		for (size_t c = 0; c < w; c++) {
			float acc = bias != NULL ? bias[c] : 0.0f;

			for (size_t k = 0; k < E; k++)
				acc = fmaf(x[r * ld_x + k], W[k * ldw + c], acc);
			out[r * ld_out + c] = acc;
		}
}

#ifdef HAVE_FEW_SIMD
#define UNROLL _Pragma("GCC unroll 16")

/* ---- what both vector kernels share ------------------------------------- */

/* The last column of the strip read after strip v of the block at row k0
 * (kc rows) in that block's first row: the next strip of the same rows,
 * else the next block's first strip when that block is as tall, else this
 * block's last column (nothing new to fetch). Its last column, not its first: where W is
 * not 64-byte aligned a strip spans two lines, and its first is this
 * strip's last. */
static const float *next_strip(const float *W, size_t ldw, size_t k0, size_t kc, size_t v, size_t w,
			       size_t E)
{
	size_t c = (v + 1) * VEC; /* the next strip's first column */

	if (c < w)
		return W + k0 * ldw + (w - c < VEC ? w - 1 : c + VEC - 1);
	if (k0 + 2 * kc <= E)
		return W + (k0 + kc) * ldw + (w < VEC ? w - 1 : VEC - 1);
	return W + k0 * ldw + w - 1;
}

/* One step of the walk: rows k0 .. k0 + kc of W [E, w] (rows ldw apart),
 * its columns [c0, c1) (c0 a multiple of 16). */
struct few_block {
	const float *W;
	size_t ldw, w, E;
	size_t k0, kc;
	size_t c0, c1;
};

/* xt [tiles, kc, ROWS] = x [n, kc] (rows ld_x apart) transposed a register
 * tile at a time (its last tile padded with what was there): a step's
 * broadcasts then read one cache line. */
static void pack_rows(float *xt, const float *x, size_t ld_x, size_t n, size_t kc)
{
	for (size_t r = 0; r < n; r++) {
		/* seek to tile r / ROWS, lane r % ROWS */
		float *lane = xt + (r / ROWS) * KC * ROWS + r % ROWS;

		for (size_t k = 0; k < kc; k++)
			lane[k * ROWS] = x[r * ld_x + k];
	}
}

/* ---- AVX-512F kernel ------------------------------------------------------ */

#define AVX512 __attribute__((target("avx512f")))
#define INLINE_AVX512 __attribute__((target("avx512f"), always_inline)) static inline

/* acc[r] += xt[k, r] W[k, 0 .. 16) for k < kc, r < R, W's rows ldw apart,
 * loading W under `lanes` when masked (a constant at each call: the whole
 * strips load without a mask); prefetches the line of next[k * ldw]. */
INLINE_AVX512 void few_steps(__m512 *acc, const float *xt, const float *W, size_t ldw, size_t kc,
			     __mmask16 lanes, const float *next, int R, int masked)
{
	for (size_t k = 0; k < kc; k++) {
		/* seek to W[k, 0] */
		__m512 wk = masked ? _mm512_maskz_loadu_ps(lanes, W + k * ldw)
				   : _mm512_loadu_ps(W + k * ldw);

		_mm_prefetch((const char *)(next + k * ldw), _MM_HINT_T0);
		UNROLL
		for (int r = 0; r < R; r++)
			acc[r] =
			    _mm512_fmadd_ps(_mm512_set1_ps(xt[k * ROWS + (size_t)r]), wk, acc[r]);
	}
}

/*
 * out[r, 0 .. 16) under `lanes` += xt[0 .. kc, r] W[0 .. kc, 0 .. 16) for
 * r < R (<= ROWS), W's rows ldw apart; prefetches the line of next[k * ldw],
 * k < kc.
 */
INLINE_AVX512 void few_tile(float *out, size_t ld_out, const float *xt, const float *W, size_t ldw,
			    size_t kc, __mmask16 lanes, const float *next, int R)
{
	__m512 acc[ROWS];

	UNROLL
	for (int r = 0; r < R; r++)
		acc[r] = _mm512_maskz_loadu_ps(lanes, out + (size_t)r * ld_out);
	if (lanes == (__mmask16)0xffff)
		few_steps(acc, xt, W, ldw, kc, lanes, next, R, 0);
	else
		few_steps(acc, xt, W, ldw, kc, lanes, next, R, 1);
	UNROLL
	for (int r = 0; r < R; r++)
		_mm512_mask_storeu_ps(out + (size_t)r * ld_out, lanes, acc[r]);
}

/* Every strip of the block for one register tile of R rows (out at its
 * first row, column 0), xt [kc, ROWS] their rows of x; with prefetch 1 it
 * fetches a strip ahead, else it finds W where the tile before left it. */
INLINE_AVX512 void few_rows(float *out, size_t ld_out, const float *xt, const struct few_block *b,
			    int prefetch, int R)
{
	/* lanes of the last strip of W that hold columns (w % 16 of them, or all) */
	__mmask16 tail =
	    b->w % VEC == 0 ? (__mmask16)0xffff : (__mmask16)((1u << (b->w % VEC)) - 1u);

	for (size_t v = b->c0 / VEC; v * VEC < b->c1; v++) {
		__mmask16 lanes = (v + 1) * VEC <= b->w ? (__mmask16)0xffff : tail;
		/* seek to W[k0, 16 v] */
		const float *Wv = b->W + b->k0 * b->ldw + v * VEC;
		const float *next =
		    prefetch ? next_strip(b->W, b->ldw, b->k0, b->kc, v, b->w, b->E) : Wv;

		/* seek to out[0, 16 v] */
		few_tile(out + v * VEC, ld_out, xt, Wv, b->ldw, b->kc, lanes, next, R);
	}
}

/* A tile of R < ROWS rows, as register tiles of 8, 4, 2 and 1 rows. */
AVX512 static void few_part(float *out, size_t ld_out, const float *xt, const struct few_block *b,
			    int prefetch, size_t R)
{
	static const int sizes[] = {8, 4, 2, 1};

	for (size_t i = 0, r = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		if (R - r < (size_t)sizes[i])
			continue;
		/* seek to out[r, 0] and xt[0, r] */
		if (sizes[i] == 8)
			few_rows(out + r * ld_out, ld_out, xt + r, b, prefetch, 8);
		else if (sizes[i] == 4)
			few_rows(out + r * ld_out, ld_out, xt + r, b, prefetch, 4);
		else if (sizes[i] == 2)
			few_rows(out + r * ld_out, ld_out, xt + r, b, prefetch, 2);
		else
			few_rows(out + r * ld_out, ld_out, xt + r, b, prefetch, 1);
		r += (size_t)sizes[i];
		prefetch = 0;
	}
}

/* The block for every register tile of the group's n rows. */
AVX512 static void few_block_avx512(float *out, size_t ld_out, const float *xt, size_t n,
				    const struct few_block *b)
{
	for (size_t r = 0; r < n; r += ROWS) {
		size_t R = n - r < ROWS ? n - r : ROWS;
		/* seek to out[r, 0] and tile r / ROWS of xt */
		float *out_r = out + r * ld_out;
		const float *xt_r = xt + (r / ROWS) * KC * ROWS;

		if (R == ROWS)
			few_rows(out_r, ld_out, xt_r, b, r == 0, ROWS);
		else
			few_part(out_r, ld_out, xt_r, b, r == 0, R);
	}
}

/* ---- AVX2 kernel ------------------------------------------------------------ */

#define AVX2 __attribute__((target("avx2,fma")))
#define INLINE_AVX2 __attribute__((target("avx2,fma"), always_inline)) static inline

/* maskload masks of a strip's two halves for its first `cols` (1 .. 16) lanes */
INLINE_AVX2 void half_masks(size_t cols, __m256i *lo, __m256i *hi)
{
	const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);

	*lo = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)cols), lane);
	*hi = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)cols - 8), lane);
}

/* acc[2 r], acc[2 r + 1] += xt[k, r] W[k, 0 .. 8), W[k, 8 .. 16) for k < kc,
 * r < R, W's rows ldw apart, loading W under lo and hi when masked (a
 * constant at each call); prefetches the line of next[k * ldw]. A masked-off
 * lane is never read, so a strip may end at the end of W. */
INLINE_AVX2 void few_steps2(__m256 *acc, const float *xt, const float *W, size_t ldw, size_t kc,
			    __m256i lo, __m256i hi, const float *next, int R, int masked)
{
	for (size_t k = 0; k < kc; k++) {
		/* seek to W[k, 0] */
		const float *wk = W + k * ldw;
		__m256 w0 = masked ? _mm256_maskload_ps(wk, lo) : _mm256_loadu_ps(wk);
		__m256 w1 = masked ? _mm256_maskload_ps(wk + 8, hi) : _mm256_loadu_ps(wk + 8);

		_mm_prefetch((const char *)(next + k * ldw), _MM_HINT_T0);
		UNROLL
		for (int r = 0; r < R; r++) {
			__m256 xr = _mm256_broadcast_ss(xt + k * ROWS + (size_t)r);

			acc[2 * r] = _mm256_fmadd_ps(xr, w0, acc[2 * r]);
			acc[2 * r + 1] = _mm256_fmadd_ps(xr, w1, acc[2 * r + 1]);
		}
	}
}

/* out[r, 0 .. cols) += xt[0 .. kc, r] W[0 .. kc, 0 .. cols) for r < R
 * (<= ROWS2), cols <= 16; prefetches as few_steps2. Whole strips load and
 * store out without masks (vmaskmovps stores are slow on AMD's cores). */
INLINE_AVX2 void few_tile2(float *out, size_t ld_out, const float *xt, const float *W, size_t ldw,
			   size_t kc, size_t cols, const float *next, int R)
{
	__m256 acc[2 * ROWS2];
	__m256i lo, hi;

	half_masks(cols, &lo, &hi);
	if (cols == VEC) {
		UNROLL
		for (int r = 0; r < R; r++) {
			acc[2 * r] = _mm256_loadu_ps(out + (size_t)r * ld_out);
			acc[2 * r + 1] = _mm256_loadu_ps(out + (size_t)r * ld_out + 8);
		}
		few_steps2(acc, xt, W, ldw, kc, lo, hi, next, R, 0);
		UNROLL
		for (int r = 0; r < R; r++) {
			_mm256_storeu_ps(out + (size_t)r * ld_out, acc[2 * r]);
			_mm256_storeu_ps(out + (size_t)r * ld_out + 8, acc[2 * r + 1]);
		}
		return;
	}
	UNROLL
	for (int r = 0; r < R; r++) {
		acc[2 * r] = _mm256_maskload_ps(out + (size_t)r * ld_out, lo);
		acc[2 * r + 1] = _mm256_maskload_ps(out + (size_t)r * ld_out + 8, hi);
	}
	few_steps2(acc, xt, W, ldw, kc, lo, hi, next, R, 1);
	UNROLL
	for (int r = 0; r < R; r++) {
		_mm256_maskstore_ps(out + (size_t)r * ld_out, lo, acc[2 * r]);
		_mm256_maskstore_ps(out + (size_t)r * ld_out + 8, hi, acc[2 * r + 1]);
	}
}

/* few_rows for the AVX2 register tiles. */
INLINE_AVX2 void few_rows2(float *out, size_t ld_out, const float *xt, const struct few_block *b,
			   int prefetch, int R)
{
	for (size_t v = b->c0 / VEC; v * VEC < b->c1; v++) {
		size_t cols = b->w - v * VEC < VEC ? b->w - v * VEC : VEC;
		/* seek to W[k0, 16 v] */
		const float *Wv = b->W + b->k0 * b->ldw + v * VEC;
		const float *next =
		    prefetch ? next_strip(b->W, b->ldw, b->k0, b->kc, v, b->w, b->E) : Wv;

		/* seek to out[0, 16 v] */
		few_tile2(out + v * VEC, ld_out, xt, Wv, b->ldw, b->kc, cols, next, R);
	}
}

/* few_block_avx512 for the AVX2 kernel: each packed tile of up to 16 rows
 * as register tiles of 6 rows, then 4, 2 or 1 for the rest. */
AVX2 static void few_block_avx2(float *out, size_t ld_out, const float *xt, size_t n,
				const struct few_block *b)
{
	for (size_t r = 0; r < n; r += ROWS) {
		size_t R = n - r < ROWS ? n - r : ROWS;

		for (size_t i = 0; i < R;) {
			/* seek to out[r + i, 0] and lane i of tile r / ROWS of xt */
			float *o = out + (r + i) * ld_out;
			const float *xi = xt + (r / ROWS) * KC * ROWS + i;
			int first = r == 0 && i == 0;

			if (R - i >= ROWS2) {
				few_rows2(o, ld_out, xi, b, first, ROWS2);
				i += ROWS2;
			} else if (R - i >= 4) {
				few_rows2(o, ld_out, xi, b, first, 4);
				i += 4;
			} else if (R - i >= 2) {
				few_rows2(o, ld_out, xi, b, first, 2);
				i += 2;
			} else {
				few_rows2(o, ld_out, xi, b, first, 1);
				i += 1;
			}
		}
	}
}

/* ---- the walk, for either vector kernel ----------------------------------- */

/* Groups of GROUP rows; in each, blocks of KC rows of W, x packed once a
 * block for all column tiles; the column tiles CT wide, so that a tile's
 * block of W (KC x CT floats, 256 KB) stays in L2 while the group's
 * register tiles pass over it. */
static void few_vector(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n,
		       const float *W, size_t ldw, size_t w, size_t E, enum few_isa isa)
{
	float xt[GROUP * KC]; /* [GROUP / ROWS, KC, ROWS]: the group's x in one block */
	struct few_block b = {.W = W, .ldw = ldw, .w = w, .E = E};

	for (size_t g = 0; g < n; g += GROUP) {
		size_t ng = n - g < GROUP ? n - g : GROUP;

		for (b.k0 = 0; b.k0 < E; b.k0 += KC) {
			b.kc = E - b.k0 < KC ? E - b.k0 : KC;
			/* seek to x[g, k0] */
			pack_rows(xt, x + g * ld_x + b.k0, ld_x, ng, b.kc);
			for (b.c0 = 0; b.c0 < w; b.c0 += CT) {
				b.c1 = w - b.c0 < CT ? w : b.c0 + CT;
				/* seek to out[g, 0] */
				if (isa == FEW_AVX512)
					few_block_avx512(out + g * ld_out, ld_out, xt, ng, &b);
				else
					few_block_avx2(out + g * ld_out, ld_out, xt, ng, &b);
			}
		}
	}
}
#endif

/* out [n, w] = bias, or 0: where the vector kernel's chains start. */
static void start_from_bias(float *out, size_t ld_out, size_t n, const float *bias, size_t w)
{
	for (size_t r = 0; r < n; r++) {
		if (bias != NULL)
			memcpy(out + r * ld_out, bias, w * sizeof(float));
		else
			memset(out + r * ld_out, 0, w * sizeof(float));
	}
}

void linear_few(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n, const float *W,
		size_t ldw, const float *bias, size_t w, size_t E, enum few_isa isa)
{
#ifdef HAVE_FEW_SIMD
	if (isa != FEW_SCALAR) {
		start_from_bias(out, ld_out, n, bias, w);
		few_vector(out, ld_out, x, ld_x, n, W, ldw, w, E, isa);
		return;
	}
#endif
	(void)isa;
	few_scalar(out, ld_out, x, ld_x, n, W, ldw, bias, w, E);
}
