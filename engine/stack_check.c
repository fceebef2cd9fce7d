/* stack_check.c: attn_stack_check and the run's checks (see stack_check.h). */
#include "stack_check.h"

#include "sizes.h"

/* ---- the stack ---------------------------------------------------------- */

static int linear_is(const struct attn_linear *lin, size_t out, size_t in)
{
	return lin->w != NULL && lin->out == out && lin->in == in;
}

/* Each block's maps have the family's shapes. */
static enum attn_status check_block(const struct attn_stack *s, const struct attn_block *blk,
				    size_t l, struct attn_error *err)
{
	size_t q = s->H * s->D, kv = s->Hkv * s->D;
	int ok = blk->n_qkv == 1 ? linear_is(&blk->qkv[0], q + 2 * kv, s->E)
		 : blk->n_qkv == 3 ? linear_is(&blk->qkv[0], q, s->E) &&
					     linear_is(&blk->qkv[1], kv, s->E) &&
					     linear_is(&blk->qkv[2], kv, s->E)
				   : 0;

	ok = ok && linear_is(&blk->o, s->E, q) && linear_is(&blk->up, s->F, s->E) &&
	     linear_is(&blk->down, s->E, s->F);
	if (s->family == ATTN_FAMILY_LLAMA)
		ok = ok && linear_is(&blk->gate, s->F, s->E);
	else
		ok = ok && blk->gate.w == NULL;
	if (!ok)
		return attn_fail(err, ATTN_ERR_SHAPE_MISMATCH, "blocks", l,
				 "layer %zu: a projection is missing or has the wrong shape", l);
	return ATTN_OK;
}

static enum attn_status check_dims(const struct attn_stack *s, struct attn_error *err)
{
	size_t heads, width, table;

	if ((unsigned)s->family > ATTN_FAMILY_LLAMA || (unsigned)s->norm_kind > ATTN_NORM_RMS ||
	    (unsigned)s->act > ATTN_ACT_RELU)
		return attn_fail(err, ATTN_ERR_ARGUMENT, "family", 0,
				 "unknown family, norm or activation");
	if (s->n_layers == 0 || s->E == 0 || s->H == 0 || s->Hkv == 0 || s->D == 0 ||
	    s->F == 0 || s->vocab == 0)
		return attn_fail(err, ATTN_ERR_DIMENSION, "stack", 0,
				 "layers, E, H, Hkv, D, F and vocab must be positive");
	if (s->H % s->Hkv != 0)
		return attn_fail(err, ATTN_ERR_KV_HEADS, "Hkv", 0,
				 "H = %zu is not a multiple of Hkv = %zu", s->H, s->Hkv);
	/* (H + 2 Hkv) D, the widest map's width, and the table [V, E] */
	if (size_mul(&heads, 2, s->Hkv) != 0 || size_add(&heads, heads, s->H) != 0 ||
	    size_mul(&width, heads, s->D) != 0 || !size_fits_int(width) ||
	    !size_fits_int(s->E) || !size_fits_int(s->F) || size_mul(&table, s->vocab, s->E) != 0)
		return attn_fail(err, ATTN_ERR_OVERFLOW, "stack", 0,
				 "a projection width does not fit a BLAS int");
	return ATTN_OK;
}

/* The tables each family reads. */
static enum attn_status check_tables(const struct attn_stack *s, struct attn_error *err)
{
	int learned = s->family != ATTN_FAMILY_LLAMA;

	if (s->wte == NULL || s->blocks == NULL)
		return attn_fail(err, ATTN_ERR_ARGUMENT, "wte", 0, "no embeddings or blocks");
	if (learned && (s->wpe == NULL || s->max_positions == 0))
		return attn_fail(err, ATTN_ERR_ARGUMENT, "wpe", 0,
				 "gpt2 and bert need position embeddings");
	if (s->family == ATTN_FAMILY_BERT && (s->wtt == NULL || s->type_vocab == 0))
		return attn_fail(err, ATTN_ERR_ARGUMENT, "wtt", 0, "bert needs token types");
	if (s->family == ATTN_FAMILY_LLAMA && (s->inv_freq == NULL || s->D % 2 != 0))
		return attn_fail(err, ATTN_ERR_ROPE_DIM, "inv_freq", 0,
				 "llama needs an even head dim and a RoPE table");
	if (s->positions_from_ids && (s->family != ATTN_FAMILY_BERT || attn_stack_context(s) == 0))
		return attn_fail(err, ATTN_ERR_ARGUMENT, "pad_id", s->pad_id,
				 "positions from ids need the bert family and pad id %zu + 1 below "
				 "%zu positions",
				 s->pad_id, s->max_positions);
	if (s->window != 0 && s->family != ATTN_FAMILY_LLAMA)
		return attn_fail(err, ATTN_ERR_ARGUMENT, "window", 0,
				 "only the llama family has a sliding window");
	return ATTN_OK;
}

enum attn_status attn_stack_check(const struct attn_stack *stack, struct attn_error *err)
{
	enum attn_status st;

	if (stack == NULL)
		return attn_fail(err, ATTN_ERR_ARGUMENT, "stack", 0, "no stack");
	st = check_dims(stack, err);
	if (st == ATTN_OK)
		st = check_tables(stack, err);
	for (size_t l = 0; st == ATTN_OK && l < stack->n_layers; l++)
		st = check_block(stack, &stack->blocks[l], l, err);
	return st;
}

/* ---- the run ------------------------------------------------------------ */

int stack_captured(const struct attn_stack_run *run, size_t l)
{
	return run->capture != NULL && run->capture[l] != 0;
}

size_t stack_n_captured(const struct attn_stack_run *run)
{
	size_t c = 0;

	for (size_t l = 0; l <= run->last_layer; l++)
		c += stack_captured(run, l) ? 1 : 0;
	return c;
}

size_t stack_n_heads(const struct attn_stack_run *run)
{
	return run->heads ? run->n_heads : run->stack->H;
}

int stack_weights_captured(const struct attn_stack_run *run)
{
	return stack_n_captured(run) > 0 && run->weights_mode != ATTN_WEIGHTS_NONE;
}

int stack_scores_captured(const struct attn_stack_run *run)
{
	return stack_n_captured(run) > 0 && run->scores_view == ATTN_SCORES_MASKED;
}

int stack_projections_captured(const struct attn_stack_run *run)
{
	return stack_n_captured(run) > 0 && run->show_projections;
}

int stack_head_outputs_captured(const struct attn_stack_run *run)
{
	return stack_n_captured(run) > 0 && run->show_head_outputs;
}

/* Floats of B slabs [hc, L, L], and of C of them; -1 on overflow. */
static int slab_of(const struct attn_stack_run *run, size_t hc, size_t *floats)
{
	size_t per_item, all;

	if (size_mul3(&per_item, hc, run->L, run->L) != 0 ||
	    size_mul(floats, per_item, run->B) != 0)
		return -1;
	return size_mul(&all, *floats, stack_n_captured(run));
}

int stack_slab_floats(const struct attn_stack_run *run, size_t *floats)
{
	return slab_of(run, run->weights_mode == ATTN_WEIGHTS_MEAN ? 1 : stack_n_heads(run),
		       floats);
}

int stack_score_floats(const struct attn_stack_run *run, size_t *floats)
{
	return slab_of(run, stack_n_heads(run), floats);
}

/* Floats of B slabs [parts, hc, L, D], and of C of them; -1 on overflow. */
static int row_slab_of(const struct attn_stack_run *run, size_t parts, size_t *floats)
{
	size_t per_item, all;

	if (size_mul4(&per_item, parts, stack_n_heads(run), run->L, run->stack->D) != 0 ||
	    size_mul(floats, per_item, run->B) != 0)
		return -1;
	return size_mul(&all, *floats, stack_n_captured(run));
}

int stack_projection_floats(const struct attn_stack_run *run, size_t *floats)
{
	return row_slab_of(run, 3, floats);
}

int stack_head_output_floats(const struct attn_stack_run *run, size_t *floats)
{
	return row_slab_of(run, 1, floats);
}

enum attn_status stack_check_scalars(const struct attn_stack_run *run, struct attn_error *err)
{
	const struct attn_stack *s = run ? run->stack : NULL;

	if (s == NULL || run->ids == NULL)
		return attn_fail(err, ATTN_ERR_ARGUMENT, "ids", 0, "no stack or no ids");
	if (run->B == 0 || run->L == 0)
		return attn_fail(err, ATTN_ERR_EMPTY, "ids", 0, "an empty batch or sequence");
	if (s->family != ATTN_FAMILY_LLAMA && run->L > attn_stack_context(s))
		return attn_fail(err, ATTN_ERR_POSITION, "ids", attn_stack_context(s),
				 "%zu tokens, the model has %zu positions", run->L,
				 attn_stack_context(s));
	if (run->last_layer >= s->n_layers)
		return attn_fail(err, ATTN_ERR_ARGUMENT, "layers", run->last_layer,
				 "layer %zu of a %zu-layer model", run->last_layer, s->n_layers);
	if (stack_n_captured(run) == 0)
		return ATTN_OK;
	if (run->scores_view != ATTN_SCORES_NONE && run->scores_view != ATTN_SCORES_MASKED)
		return attn_fail(err, ATTN_ERR_ARGUMENT, "scores_view", 0,
				 "a stack captures the masked scores or none");
	if (run->weights_mode != ATTN_WEIGHTS_PER_HEAD && run->weights_mode != ATTN_WEIGHTS_MEAN &&
	    !(run->weights_mode == ATTN_WEIGHTS_NONE &&
	      (run->scores_view == ATTN_SCORES_MASKED || run->show_projections ||
	       run->show_head_outputs)))
		return attn_fail(err, ATTN_ERR_ARGUMENT, "weights_mode", 0,
				 "captured layers need per-head or mean weights, the scores, "
				 "the projections or the head outputs");
	if (run->heads != NULL && (run->n_heads == 0 || run->n_heads > s->H))
		return attn_fail(err, ATTN_ERR_ARGUMENT, "heads", 0,
				 "%zu heads of %zu", run->n_heads, s->H);
	return ATTN_OK;
}

enum attn_status stack_check_outputs(const struct attn_stack_run *run, struct attn_error *err)
{
	if (run->attentions == NULL && stack_weights_captured(run))
		return attn_fail(err, ATTN_ERR_ARGUMENT, "attentions", 0,
				 "captured layers need a buffer");
	if (run->scores == NULL && stack_scores_captured(run))
		return attn_fail(err, ATTN_ERR_ARGUMENT, "scores", 0,
				 "captured scores need a buffer");
	if (run->projections == NULL && stack_projections_captured(run))
		return attn_fail(err, ATTN_ERR_ARGUMENT, "projections", 0,
				 "captured projections need a buffer");
	if (run->head_outputs == NULL && stack_head_outputs_captured(run))
		return attn_fail(err, ATTN_ERR_ARGUMENT, "head_outputs", 0,
				 "captured head outputs need a buffer");
	return ATTN_OK;
}

/* Every id of [B, L] in [0, bound): padding too, as the embedding reads it. */
static enum attn_status check_ids(const int64_t *ids, size_t n, size_t bound,
				  const char *field, struct attn_error *err)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] < 0 || (uint64_t)ids[i] >= (uint64_t)bound)
			return attn_fail(err, ATTN_ERR_TOKEN, field, i,
					 "%s[%zu] = %lld is outside [0, %zu)", field, i,
					 (long long)ids[i], bound);
	return ATTN_OK;
}

static enum attn_status check_heads(const struct attn_stack_run *run, struct attn_error *err)
{
	for (size_t i = 0; run->heads && i < run->n_heads; i++) {
		if (run->heads[i] >= run->stack->H)
			return attn_fail(err, ATTN_ERR_ARGUMENT, "heads", i,
					 "head %zu of %zu", run->heads[i], run->stack->H);
		for (size_t j = 0; j < i; j++)
			if (run->heads[j] == run->heads[i])
				return attn_fail(err, ATTN_ERR_ARGUMENT, "heads", i,
						 "head %zu twice", run->heads[i]);
	}
	return ATTN_OK;
}

enum attn_status stack_check_arrays(const struct attn_stack_run *run, struct attn_error *err)
{
	const struct attn_stack *s = run->stack;
	size_t n = run->B * run->L; /* the caller checked it */
	enum attn_status st = check_ids(run->ids, n, s->vocab, "ids", err);

	if (st == ATTN_OK && s->family == ATTN_FAMILY_BERT && run->type_ids)
		st = check_ids(run->type_ids, n, s->type_vocab, "type_ids", err);
	for (size_t b = 0; st == ATTN_OK && run->lengths && b < run->B; b++)
		if (run->lengths[b] == 0 || run->lengths[b] > run->L)
			st = attn_fail(err, ATTN_ERR_POSITION, "lengths", b,
				       "lengths[%zu] = %zu is outside 1 .. %zu", b,
				       run->lengths[b], run->L);
	if (st == ATTN_OK && stack_n_captured(run) > 0)
		st = check_heads(run, err);
	return st;
}

size_t attn_stack_context(const struct attn_stack *s)
{
	if (!s->positions_from_ids)
		return s->max_positions;
	return s->pad_id < s->max_positions - 1 ? s->max_positions - s->pad_id - 1 : 0;
}

enum attn_status stack_check_hidden(const struct attn_stack_run *run, const float *x, size_t n,
				    size_t layer, struct attn_error *err)
{
	const struct attn_stack *s = run->stack;

	if (attn_all_finite(x, n * s->E))
		return ATTN_OK;
	if (layer == s->n_layers)
		return attn_fail(err, ATTN_ERR_RESULT_OVERFLOW, "hidden", layer,
				 "the final norm's output overflows float32: the model's "
				 "weights are too large for this input");
	return attn_fail(err, ATTN_ERR_RESULT_OVERFLOW, "hidden", layer,
			 "the hidden state after layer %zu overflows float32: the model's "
			 "weights are too large for this input",
			 layer);
}
