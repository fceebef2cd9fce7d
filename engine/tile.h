/*
 * tile.h: the two attention products of one (query tile, keys, head) step,
 * S = scale Q K^T and acc += P V, without sgemm's packing. Internal to the
 * engine; used by the streaming layer (mha_stream.c) and the whole-row path
 * (attention.c).
 *
 * sgemm packs both operands on every call; across query tiles the keys' K
 * and V are the same, and a tile's probabilities are used once, so packing
 * them again per call cost a quarter of the time (perf, L = 2048). Here K and
 * V are laid out once (tile_pack_kt, tile_pack_v) in the shapes the kernels
 * read:
 *   kt  [D, ldk]   K transposed: row d holds keys 0 .. n-1, then zeros up to
 *                  tile_cols(n); ldk = tile_ld(n) keeps rows off 4 KiB apart
 *   v   [n, D]     V rows, contiguous
 * and q and p are read in place (rows ldq, ldp apart).
 *
 * Each product has a vector kernel (AVX-512F, chosen at run time) and a
 * scalar twin with the same summation order per element, which the tests
 * compare it with. Buffers belong to the caller; nothing is kept.
 */
#ifndef ATTN_TILE_H
#define ATTN_TILE_H

#include <stddef.h>

enum { TILE_COLS = 16 }; /* kt rows are padded to a multiple of this */

/* n rounded up to TILE_COLS. */
size_t tile_cols(size_t n);

/* The row stride of kt for n keys: tile_cols(n) plus one cache line. */
size_t tile_ld(size_t n);

/* 1 when the vector kernels can run here for head dimension D (AVX-512F and
 * D a multiple of 16); the caller then uses tile_* with simd = 1. */
int tile_simd_available(size_t D);

/* kt [D, ldk] = k [n, D] (rows ldk_in apart) transposed, zero-padded. */
void tile_pack_kt(float *kt, size_t ldk, const float *k, size_t ldk_in, size_t n, size_t D);

/* v_out [n, D] = v [n, D] (rows ldv_in apart). */
void tile_pack_v(float *v_out, const float *v, size_t ldv_in, size_t n, size_t D);

/*
 * s [m, n] (rows lds apart, lds >= n) = scale * q [m, D] (rows ldq apart) kt,
 * kt as tile_pack_kt left it (ldk >= tile_cols(n), read up to tile_cols(n)).
 * Nothing past column n is written. Sums over d in order.
 *
 * vmax [m, TILE_COLS], unless NULL: lane l of row r becomes the max of
 * s[r, j] over the columns j = l (mod TILE_COLS), -inf where there is none,
 * so that the row's max (tile_row_max) costs no pass over s. With a scale
 * above 0 the kernel keeps it from its registers (below 0 it takes a pass
 * over s). A NaN score need not show in it.
 */
void tile_qk(float *s, size_t lds, float *vmax, const float *q, size_t ldq, const float *kt,
	     size_t ldk, size_t m, size_t n, size_t D, float scale, int simd);

/* The max of one row of tile_qk's vmax (its TILE_COLS lanes). */
float tile_row_max(const float *vmax_row);

/*
 * acc [m, D] (rows lda apart) += p [m, n] (rows ldp apart) v [n, D].
 * Sums over keys in order, onto acc. simd needs D % 16 == 0.
 */
void tile_pv(float *acc, size_t lda, const float *p, size_t ldp, const float *v, size_t m,
	     size_t n, size_t D, int simd);

#endif
