/*
 * gemm.h: the engine's one matrix product, cblas_sgemm's row-major
 *   C [m, n] = alpha A [m, k] B + beta C,   B [k, n], or [n, k] read
 *                                           transposed (b_trans)
 * with a plain kernel for products too small for sgemm's setup to pay.
 * Internal to the engine; buffers belong to the caller, nothing is kept.
 *
 * OpenBLAS spends some thousand instructions on a call before the first
 * multiply (argument checks, a buffer from its pool under a mutex, packing
 * both operands): at the seeds' shapes (E = 8, four tokens, head size 4)
 * that was every product's whole cost: 75-120 ns a call where the kernel
 * here takes 30-85 (bench_gemm), and a lock both I/O threads take. Products
 * of at most GEMM_SMALL_MACS multiply-adds run here instead: each element
 * one chain of fused multiply-adds over k in order, from 0, then alpha
 * times it plus beta C in one rounding (as tile.h's and linear_few.h's
 * kernels sum). OpenBLAS's kernels sum in an order of their own, so the two
 * differ in the last bits as any two orders do (tests/engine/check_kernels.c
 * bounds both against a double-precision product).
 *
 * The small kernel needs FMA (AVX2's machines); elsewhere every product goes
 * to sgemm. gemm_small_twin is its scalar twin (fmaf from libm), for tests.
 */
#ifndef ATTN_GEMM_H
#define ATTN_GEMM_H

#include <stddef.h>

/* Products up to GEMM_SMALL_MACS multiply-adds (m n k) take the small
 * kernel: about where sgemm, its setup paid, starts to win on one thread
 * (bench/bench_gemm.c's table: 4 x 32 x 8 still a little faster on the
 * kernel, 4 x 24 x 16 slower). The kernel copies B into GEMM_SMALL_PACK
 * floats of its stack. */
enum { GEMM_SMALL_MACS = 1024, GEMM_SMALL_PACK = 4096 };

/* C = alpha A B + beta C as above; rows lda, ldb, ldc apart. C must not
 * overlap A or B. Any size sgemm takes (each of m, n, k below INT_MAX). */
void gemm(int b_trans, size_t m, size_t n, size_t k, float alpha, const float *A, size_t lda,
	  const float *B, size_t ldb, float beta, float *C, size_t ldc);

/* 1 when gemm would take the small kernel for m n k on this machine. */
int gemm_small_taken(size_t m, size_t n, size_t k);

/* The small kernel (FMA machines only: gemm_small_taken(1, 1, 1) says) for
 * any m and a B of k x n with k (n rounded up to 8) <= GEMM_SMALL_PACK, and
 * its scalar twin (any machine, any size): the same bits. */
void gemm_small(int b_trans, size_t m, size_t n, size_t k, float alpha, const float *A,
		size_t lda, const float *B, size_t ldb, float beta, float *C, size_t ldc);
void gemm_small_twin(int b_trans, size_t m, size_t n, size_t k, float alpha, const float *A,
		     size_t lda, const float *B, size_t ldb, float beta, float *C, size_t ldc);

#endif
