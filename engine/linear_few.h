/*
 * linear_few.h: a projection of a few rows with W stored [E, width] (GPT-2's
 * Conv1D), read straight from the weights without sgemm's packing. Internal
 * to the engine; linear.c picks it for short sequences. Buffers belong to the
 * caller; nothing is kept.
 *
 * At L = 16 a forward pass is one stream of the weights (340 MB for GPT-2
 * small) with 16 multiply-adds per weight read. sgemm copies each tile of W
 * into its packed layout first and then reads the copy (a third of the time
 * went to the copy, perf): the pass costs the memory stream plus the
 * arithmetic, one after the other. The kernel here reads W in place, 256
 * rows at a time, and prefetches the next strip of those rows while it
 * works on this one, so that the stream and the arithmetic overlap.
 * One call packs x once a block for every column: call it on whole runs of
 * columns, not tile by tile.
 *
 * Two vector kernels, AVX-512F and AVX2 with FMA (chosen at run time:
 * linear_few_best), and a scalar twin: each output element is one chain of
 * fused multiply-adds over k in order, starting from its bias (or 0), in
 * all three, so all give the same bits.
 */
#ifndef ATTN_LINEAR_FEW_H
#define ATTN_LINEAR_FEW_H

#include <stddef.h>

/* Which kernel runs: the scalar twin or a vector kernel. */
enum few_isa { FEW_SCALAR, FEW_AVX2, FEW_AVX512 };

/* The fastest kernel this machine runs: FEW_AVX512 (AVX-512F), else
 * FEW_AVX2 (AVX2 and FMA), else FEW_SCALAR. Every kernel up to it runs here. */
enum few_isa linear_few_best(void);

/*
 * out [n, w] (rows ld_out apart) = x [n, E] (rows ld_x apart) W [E, w]
 * (rows ldw apart) + bias, bias [w] or NULL. out must not overlap x or W.
 * isa: the kernel, at most linear_few_best(). Any n; it is meant for at
 * most a hundred-odd rows (up to 128 are packed at once, 128 KB of the
 * caller's stack).
 */
void linear_few(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n, const float *W,
		size_t ldw, const float *bias, size_t w, size_t E, enum few_isa isa);

#endif
