/*
 * stack_check.h: the checks of a struct attn_stack_run (stack.h), shared by
 * the fast path (stack.c) and its twin (stack_ref.c). Internal to the engine.
 *
 * The scalars come first, then the caller checks the sizes it derives, and
 * only then are the [B, L] arrays read: a run whose sizes overflow is
 * refused before anything of that size is touched.
 *
 * Ownership: run and err are borrowed for the call; nothing is allocated or
 * kept.
 */
#ifndef ATTN_STACK_CHECK_H
#define ATTN_STACK_CHECK_H

#include "stack.h"

/* The run's scalars: stack, B and L, last_layer, the capture options. */
enum attn_status stack_check_scalars(const struct attn_stack_run *run, struct attn_error *err);

/* The run's arrays: ids, type ids, lengths, heads. */
enum attn_status stack_check_arrays(const struct attn_stack_run *run, struct attn_error *err);

/* The output buffers the captured layers write (attentions, scores,
 * projections, head outputs) are
 * given: ATTN_ERR_ARGUMENT with that field when not. The forward passes call
 * it; planning does not, as a caller plans before it allocates. */
enum attn_status stack_check_outputs(const struct attn_stack_run *run, struct attn_error *err);

/*
 * Finite weights can still overflow float32 on the way: a sublayer's
 * output, the residual stream, the final norm. The attention core refuses
 * what overflows inside it (q, k, v, the scores); the forward passes check
 * the rest with this, x [n, E] after each layer and the final norm's output
 * (layer = n_layers): ATTN_ERR_RESULT_OVERFLOW, field "hidden", index the
 * layer, so that the refusal names where it happened instead of the next
 * layer's projections, or an answer of NaN after the last.
 */
enum attn_status stack_check_hidden(const struct attn_stack_run *run, const float *x, size_t n,
				    size_t layer, struct attn_error *err);

/* 1 when layer l (<= last_layer) is captured. */
int stack_captured(const struct attn_stack_run *run, size_t l);

/* Captured layers among 0 .. last_layer. */
size_t stack_n_captured(const struct attn_stack_run *run);

/* Heads per captured layer: n_heads, or H when heads is NULL. */
size_t stack_n_heads(const struct attn_stack_run *run);

/* Whether the captured layers write weights (weights_mode not NONE) and
 * scores (scores_view MASKED); 0 when no layer is captured. */
int stack_weights_captured(const struct attn_stack_run *run);
int stack_scores_captured(const struct attn_stack_run *run);
int stack_projections_captured(const struct attn_stack_run *run);
int stack_head_outputs_captured(const struct attn_stack_run *run);

/* Floats of one captured layer's slab of weights: [B, Hc, L, L] or
 * [B, L, L] (MEAN); -1 on overflow, and when C such slabs overflow. */
int stack_slab_floats(const struct attn_stack_run *run, size_t *floats);

/* The same for one captured layer's scores: [B, Hc, L, L] always. */
int stack_score_floats(const struct attn_stack_run *run, size_t *floats);

/* The same for one captured layer's projections: [3, B, Hc, L, D]. */
int stack_projection_floats(const struct attn_stack_run *run, size_t *floats);

/* The same for one captured layer's head outputs: [B, Hc, L, D]. */
int stack_head_output_floats(const struct attn_stack_run *run, size_t *floats);

#endif
