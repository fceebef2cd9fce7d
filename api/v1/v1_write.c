/*
 * v1_write.c: the parts of a /v1/attention answer that one-layer and
 * checkpoint answers share: the tokens, tensors shaped as the request was,
 * and the positions (see v1.h).
 */
#include "v1.h"

#include <string.h>

#include "api/json/json_write.h"
#include "common/jsonstr.h"

/* A tokenizer's ids and offsets, in the tokens' shape: [Lq] or [B][q_len]. */
static void write_token_ids(struct buf *b, const struct attention_job *job)
{
	buf_puts(b, ",\"token_ids\":");
	if (job->batched)
		buf_putc(b, '[');
	for (size_t bi = 0; bi < job->B; bi++) {
		buf_puts(b, bi ? ",[" : "[");
		for (size_t i = 0; i < job->q_len[bi]; i++) {
			if (i > 0)
				buf_putc(b, ',');
			buf_put_u64(b, (unsigned long long)job->token_ids[bi * job->Lq + i]);
		}
		buf_putc(b, ']');
	}
	buf_puts(b, job->batched ? "],\"offsets\":[" : ",\"offsets\":");
	for (size_t bi = 0; bi < job->B; bi++) {
		buf_puts(b, bi ? ",[" : "[");
		for (size_t i = 0; i < job->q_len[bi]; i++) {
			const size_t *o = &job->offsets[2 * (bi * job->Lq + i)];

			buf_puts(b, i > 0 ? ",[" : "[");
			buf_put_u64(b, (unsigned long long)o[0]);
			buf_putc(b, ',');
			buf_put_u64(b, (unsigned long long)o[1]);
			buf_putc(b, ']');
		}
		buf_putc(b, ']');
	}
	if (job->batched)
		buf_putc(b, ']');
}

void v1_write_tokens(struct buf *b, const struct attention_job *job)
{
	if (job->tokens == NULL)
		return;
	buf_puts(b, ",\"tokens\":");
	if (job->batched)
		buf_putc(b, '[');
	for (size_t bi = 0; bi < job->B; bi++) {
		buf_puts(b, bi ? ",[" : "[");
		for (size_t i = 0; i < job->q_len[bi]; i++) {
			const char *label = job->tokens[bi * job->Lq + i];

			if (i > 0)
				buf_putc(b, ',');
			if (label)
				jsonstr_put(b, label);
			else
				buf_put_u64(b,
					    (unsigned long long)job->token_ids[bi * job->Lq + i]);
		}
		buf_putc(b, ']');
	}
	if (job->batched)
		buf_putc(b, ']');
	if (job->offsets != NULL)
		write_token_ids(b, job);
}

int v1_write_batched(struct api_writer *w, const struct attention_job *job, const float *x,
		     size_t heads, size_t cols, const size_t *k_len, float *scratch)
{
	struct v1_items rows = {job->Lq, job->q_len}, columns = {cols, k_len};

	return v1_write_items(w, job, x, heads, rows, columns, scratch);
}

int v1_write_items(struct api_writer *w, const struct attention_job *job, const float *x,
		   size_t heads, struct v1_items rows, struct v1_items cols, float *scratch)
{
	size_t hh = heads ? heads : 1, item = hh * rows.n * cols.n;
	size_t shape[4] = {job->B, hh, rows.n, cols.n}, *sh = heads ? shape : shape + 1;

	if (!job->ragged) {
		if (!heads)
			shape[1] = job->B;
		if (job->batched)
			return api_tensor_write(w, x, heads ? 4 : 3, heads ? shape : sh);
		return api_tensor_write(w, x, heads ? 3 : 2, heads ? shape + 1 : shape + 2);
	}
	buf_putc(w->out, '[');
	for (size_t b = 0; b < job->B; b++) {
		size_t r = rows.len[b], kc = cols.len ? cols.len[b] : cols.n, n = 0;
		size_t ishape[3] = {hh, r, kc};

		/* item b's [hh, r, kc] corner of its [hh, rows.n, cols.n] block */
		for (size_t h = 0; h < hh; h++)
			for (size_t i = 0; i < r; i++, n += kc)
				memcpy(scratch + n, x + b * item + (h * rows.n + i) * cols.n,
				       kc * sizeof(float));
		if (b > 0)
			buf_putc(w->out, ',');
		if (api_tensor_write(w, scratch, heads ? 3 : 2, heads ? ishape : ishape + 1) != 0)
			return -1;
	}
	return buf_putc(w->out, ']');
}

int v1_write_positions(struct api_writer *w, const char *type, const float *x, size_t L, size_t dim)
{
	size_t enc_shape[2] = {L, dim}, square[2] = {L, L};

	buf_puts(w->out, ",\"positions\":{\"type\":");
	jsonstr_put(w->out, type);
	buf_puts(w->out, ",\"encoding\":");
	if (api_tensor_write(w, x, 2, enc_shape) != 0)
		return -1;
	buf_puts(w->out, ",\"similarity\":");
	if (api_tensor_write(w, x + L * dim, 2, square) != 0) /* seek past the encoding */
		return -1;
	buf_puts(w->out, ",\"distance\":");
	if (api_tensor_write(w, x + L * dim + L * L, 2, square) != 0) /* past the similarity */
		return -1;
	return buf_putc(w->out, '}');
}
