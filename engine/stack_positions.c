/*
 * stack_positions.c: a stack's own position signal, as a learner looks at
 * it (stack.h, attn_stack_positions), made by the code the forward pass
 * runs, never derived again:
 *   gpt2, bert   the rows of wpe that stack_embed adds to the tokens of an
 *                item at positions 0 .. L - 1: rows 0 .. L - 1, or from
 *                pad_id + 1 on when positions come from the ids (RoBERTa's
 *                create_position_ids_from_input_ids on an item of no pad id:
 *                pad_id + the count of non-pad ids so far)
 *   llama        u, every entry 1 / sqrt(D), rotated as the forward pass
 *                rotates one head's query at position l: attn_rope_table_rows
 *                with the stack's inv_freq and rope_attention_scaling
 */
#include "stack.h"

#include <math.h>
#include <string.h>

#include "positional.h"

size_t attn_stack_position_dim(const struct attn_stack *s)
{
	return s->family == ATTN_FAMILY_LLAMA ? s->D : s->E;
}

/* The row of wpe that position 0 of an item reads (see the file comment). */
static size_t first_wpe_row(const struct attn_stack *s)
{
	return s->positions_from_ids ? s->pad_id + 1 : 0;
}

/* enc [L, D]: u at every position, then each row turned by its angle, one
 * head of D channels a row, rows D apart, one item. */
static void rope_rows(float *enc, const struct attn_stack *s, size_t L)
{
	const float u = (float)(1.0 / sqrt((double)s->D));

	for (size_t k = 0; k < L * s->D; k++)
		enc[k] = u;
	attn_rope_table_rows(enc, 0, 1, s->D, L, 1, s->D, s->D, s->inv_freq,
			     s->rope_attention_scaling);
}

enum attn_status attn_stack_positions(float *enc, const struct attn_stack *s, size_t L,
				      struct attn_error *err)
{
	size_t P = attn_stack_context(s);

	if (L == 0)
		return attn_fail(err, ATTN_ERR_EMPTY, "ids", 0, "no positions to show");
	if (s->family == ATTN_FAMILY_LLAMA) {
		rope_rows(enc, s, L);
		return ATTN_OK;
	}
	if (L > P) /* wpe has no row for them */
		return attn_fail(err, ATTN_ERR_POSITION, "ids", P,
				 "%zu positions pass the context length of %zu", L, P);
	/* seek to the wpe row of position 0; L rows of E follow */
	memcpy(enc, s->wpe + first_wpe_row(s) * s->E, L * s->E * sizeof(float));
	return ATTN_OK;
}
