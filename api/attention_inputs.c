/*
 * attention_inputs.c: the typed inputs of an attention request made ready for
 * the engine, whichever front end read them (see attention_job.h): tokens and
 * texts become the query [B, Lq, E] through the model's embedding table, keys
 * default to the query, and a mask's typed fields become struct attn_mask.
 * Errors point where the front end says each value came from.
 */
#include "api/attention_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/engine_error.h"
#include "common/buf.h"
#include "engine/sizes.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

/* How far to step from s, 0 at its end, and in *space whether a step of
 * Unicode's White_Space (what Rust's split_whitespace and, but for
 * \x1c-\x1f, Python's str.split() split on) begins there, so that a no-break
 * space or an ideographic space pasted from a web page splits words as an
 * ASCII space does. Past ASCII only the lead bytes C2 (U+0085, U+00A0), E1
 * (U+1680), E2 (U+2000..U+205F) and E3 (U+3000) begin a White_Space
 * character, and only they are decoded (a step of the whole character); any
 * other byte, a continuation byte or the lead byte of, say, a Hangul
 * syllable, is one byte of a word. */
static inline size_t next_step(const char *s, int *space)
{
	const unsigned char c = (unsigned char)*s;
	size_t clen;

	if (c == '\0')
		return 0;
	if (c < 0x80) {
		*space = c == ' ' || (c >= '\t' && c <= '\r');
		return 1;
	}
	if (c != 0xC2 && (c < 0xE1 || c > 0xE3)) {
		*space = 0;
		return 1;
	}
	*space = tok_uc_is_space(tok_uc_decode(s, strnlen(s, 4), &clen));
	return clen;
}

/*
 * The words of s, split on Unicode whitespace; returns their count. With tok
 * (and *store), each word is also copied to *store, NUL-terminated, and
 * appended to tok; *store advances past them. Without, it only counts.
 */
static size_t split_text(const char *s, char **store, struct api_token *tok)
{
	char *p = store ? *store : NULL;
	size_t n = 0, step;
	int space = 0;

	while (*s) {
		const char *word;

		while ((step = next_step(s, &space)) != 0 && space)
			s += step;
		if (!*s)
			break;
		word = s;
		while ((step = next_step(s, &space)) != 0 && !space)
			s += step;
		if (tok != NULL) {
			memcpy(p, word, (size_t)(s - word));
			tok[n].str = p;
			tok[n].len = (size_t)(s - word);
			p += tok[n].len;
			*p++ = '\0';
		}
		n++;
	}
	if (store != NULL)
		*store = p;
	return n;
}

/* Token inputs grow into [B, Lq, E] floats: refuse before allocating them when
 * that alone passes the request memory limit. */
static int check_embed_memory(size_t limit, size_t B, size_t L, size_t E, const char *where,
			      struct api_error *err)
{
	size_t bytes;

	if (size_mul4(&bytes, B, L, E, sizeof(float)) != 0 || bytes > limit)
		return api_fail(err, API_E_REQUEST_TOO_LARGE, where,
				"%zu x %zu tokens of d_model %zu pass the request memory limit of "
				"%zu MB",
				B, L, E, limit >> 20);
	return 0;
}

/* Tokens and text need rows to look up. An inline model (no registry entry)
 * gets them from its vocab_size, which the message names: that is the fix a
 * learner trying the README's inline model without it needs. */
static int need_embedding_table(const struct attention_job *job, const struct api_where *where,
				struct api_error *err)
{
	if (job->model->vocab > 0)
		return 0;
	if (job->entry == NULL)
		return api_fail(err, API_E_NO_EMBEDDING_TABLE, where->base,
				"the inline model has no token embedding table (vocab_size 0): "
				"give it a vocab_size, or send embeddings");
	return api_fail(err, API_E_NO_EMBEDDING_TABLE, where->base,
			"model '%s' has no token embedding table; send embeddings",
			job->model_name);
}

/* Label and id of token i of item b: strings map through the model's
 * vocabulary, or its hash when it has none; ids must index the table. */
static int token_id(struct attention_job *job, const struct api_token *t,
		    const struct api_where *where, size_t b, size_t i, size_t L, int64_t *id,
		    const char **label, struct api_error *err)
{
	int64_t V = (int64_t)job->model->vocab;
	char ptr[API_PTR_MAX];

	if (t->str != NULL && job->entry != NULL && job->entry->ckpt != NULL &&
	    job->entry->vocab == NULL)
		return api_fail(err, API_E_UNKNOWN_TOKEN,
				api_where_elem(ptr, where, job->batched, b, i, L),
				"checkpoint model '%s' takes token ids or text, not token strings",
				job->model_name);
	if (t->str != NULL) {
		*label = t->str;
		*id = job->entry ? registry_token_id(job->entry, t->str, t->len)
				 : (int64_t)(registry_fnv1a(t->str, t->len) % (uint64_t)V);
		/* a word of a text (/v1's and /v2's, whose words are no JSON
		 * values: placed by their text) or a token string, a JSON value */
		if (*id < 0 && where->elems != API_WHERE_NESTED)
			return api_fail(err, API_E_UNKNOWN_TOKEN,
					api_where_elem(ptr, where, job->batched, b, i, L),
					"word %zu of the text (from 0), '%s', is not in the model's "
					"vocabulary",
					i, t->str);
		if (*id < 0)
			return api_fail(err, API_E_UNKNOWN_TOKEN,
					api_where_elem(ptr, where, job->batched, b, i, L),
					"'%s' is not in the model's vocabulary", t->str);
		return 0;
	}
	if (t->id < 0 || t->id >= V)
		return api_fail(err, API_E_TOKEN_OUT_OF_RANGE,
				api_where_elem(ptr, where, job->batched, b, i, L),
				"token id %lld is outside [0, %lld): a token is a string or an id in "
				"that range",
				(long long)t->id, (long long)V);
	*id = t->id;
	*label = job->entry && job->entry->vocab ? job->entry->vocab[t->id] : NULL;
	return 0;
}

static int label_ids(struct attention_job *job, const struct tokenizer *tok,
		     struct api_error *err);

int attention_query_from_tokens(struct attention_job *job, const struct api_token *tok,
				const size_t *len, size_t B, int batched,
				const struct api_where *where, size_t limit, struct api_error *err)
{
	size_t E = job->model->E, L = 0, at = 0;

	if (need_embedding_table(job, where, err) != 0)
		return -1;
	job->B = B;
	job->batched = batched;
	for (size_t b = 0; b < B; b++) {
		char ptr[API_PTR_MAX];

		if (len[b] == 0)
			return api_fail(err, API_E_EMPTY_SEQUENCE,
					api_where_item(ptr, where, batched, b),
					"a sequence needs at least one token");
		L = len[b] > L ? len[b] : L;
	}
	if (check_embed_memory(limit, B, L, E, where->base, err) != 0)
		return -1;
	job->Lq = L;
	job->q_len = calloc(B, sizeof(size_t));
	job->tokens = calloc(B * L, sizeof(char *));
	job->token_ids = calloc(B * L, sizeof(int64_t));
	if (!job->q_len || !job->tokens || !job->token_ids)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	for (size_t b = 0; b < B; b++) {
		int64_t *ids = job->token_ids + b * L; /* seek to item b's [L] ids */

		for (size_t i = 0; i < len[b]; i++)
			if (token_id(job, &tok[at + i], where, b, i, len[b], &ids[i],
				     &job->tokens[b * L + i], err) != 0)
				return -1;
		at += len[b];
		job->q_len[b] = len[b];
		job->ragged |= len[b] < L;
	}
	/* ids on a model with a tokenizer and no vocabulary file: its pieces */
	if (job->entry != NULL && job->entry->tok != NULL && job->entry->vocab == NULL &&
	    job->tok_store == NULL)
		return label_ids(job, job->entry->tok, err);
	return 0;
}

/* Item b's text of len bytes against --max-text-bytes, whether a tokenizer
 * or the whitespace split takes it: refused at the item's pointer. */
static int check_text_bytes(const struct attention_job *job, size_t len, size_t b,
			    const struct api_where *where, struct api_error *err)
{
	char ptr[API_PTR_MAX];

	if (job->max_text_bytes == 0 || len <= job->max_text_bytes)
		return 0;
	return api_fail(err, API_E_TOO_LARGE, api_where_item(ptr, where, job->batched, b),
			"text is %zu bytes, over the limit of %zu (--max-text-bytes)", len,
			job->max_text_bytes);
}

/* ---- text through a tokenizer ----------------------------------------- */

/* Encodes item b's text into enc, refusing a text too long or not UTF-8. */
static int encode_text(const struct attention_job *job, const char *text, size_t b,
		       const struct api_where *where, struct tok_encoding *enc,
		       struct api_error *err)
{
	char ptr[API_PTR_MAX];
	size_t len = strlen(text), bad = 0;
	enum tok_status st;

	api_where_item(ptr, where, job->batched, b);
	if (check_text_bytes(job, len, b, where, err) != 0)
		return -1;
	st = tok_encode(job->entry->tok, text, len, 1, enc, &bad);
	return st == TOK_OK ? 0 : api_tokenize_fail(err, st, bad, ptr);
}

/* A token whose id has no row in the embedding table: the tokenizer and the
 * model do not belong together (or the text found a rare piece past a small
 * table); named, so that a person sees which. */
static int check_rows(const struct attention_job *job, const struct tok_encoding *enc, size_t b,
		      const struct api_where *where, struct api_error *err)
{
	char ptr[API_PTR_MAX];

	for (size_t i = 0; i < enc->n; i++) {
		const struct tok_token *t = &enc->tokens[i];

		if ((size_t)t->id < job->model->vocab)
			continue;
		return api_fail(err, API_E_TOKEN_OUT_OF_RANGE,
				api_where_item(ptr, where, job->batched, b),
				"token '%s' (id %d, characters %zu to %zu) has no row in model "
				"'%s''s embedding table of %zu rows",
				t->piece, (int)t->id, t->start, t->end, job->model_name,
				job->model->vocab);
	}
	return 0;
}

/* The labels of the tokens given as ids (those without one), as a person
 * reads them (tok_display: "Ġthe" as " the"), in one store (job->tok_store,
 * which holds nothing before). */
static int label_ids(struct attention_job *job, const struct tokenizer *tok,
		     struct api_error *err)
{
	size_t L = job->Lq, *at = calloc(job->B * L, sizeof(size_t));
	struct buf store;
	int rc = -1;

	buf_init(&store, (size_t)-1);
	for (size_t b = 0; at != NULL && b < job->B; b++)
		for (size_t i = 0; i < job->q_len[b]; i++) {
			if (job->tokens[b * L + i] != NULL)
				continue;
			int64_t id = job->token_ids[b * L + i];
			enum tok_status st;

			at[b * L + i] = store.len;
			st = tok_display(tok, (int32_t)id, &store);
			/* a row past the tokenizer's pieces, or one its decoder would
			 * blow up or gives up on (tokenizer.h): its number */
			if (st == TOK_EID || st == TOK_ETOOLONG || st == TOK_ELIMIT)
				buf_put_u64(&store, (unsigned long long)id);
			else if (st != TOK_OK)
				goto out;
			buf_putc(&store, '\0');
		}
	if (at == NULL || store.failed)
		goto out;
	job->tok_store = buf_detach(&store, NULL);
	for (size_t b = 0; b < job->B; b++)
		for (size_t i = 0; i < job->q_len[b]; i++)
			if (job->tokens[b * L + i] == NULL)
				job->tokens[b * L + i] = job->tok_store + at[b * L + i];
	rc = 0;
out:
	if (rc != 0)
		api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory labelling the tokens");
	buf_release(&store);
	free(at);
	return rc;
}

/* Each token's offsets in code points of its text. */
static int token_offsets(struct attention_job *job, const struct tok_encoding *enc,
			 struct api_error *err)
{
	size_t L = job->Lq;

	job->offsets = calloc(job->B * L * 2, sizeof *job->offsets);
	if (job->offsets == NULL)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	for (size_t b = 0; b < job->B; b++)
		for (size_t i = 0; i < enc[b].n; i++) {
			job->offsets[2 * (b * L + i)] = enc[b].tokens[i].start;
			job->offsets[2 * (b * L + i) + 1] = enc[b].tokens[i].end;
		}
	return 0;
}

/* Text through the entry's tokenizer: encode, check every id has a row,
 * then the query from the ids, labelled for people. */
static int query_from_tokenizer(struct attention_job *job, const char *const *text, size_t B,
				int batched, const struct api_where *where, size_t limit,
				struct api_error *err)
{
	struct tok_encoding *enc = calloc(B, sizeof *enc);
	struct api_token *tok = NULL;
	size_t *len = calloc(B, sizeof *len), n = 0, at = 0;
	int rc = -1;

	job->batched = batched;
	if (enc == NULL || len == NULL) {
		api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
		goto out;
	}
	for (size_t b = 0; b < B; b++) {
		if (encode_text(job, text[b], b, where, &enc[b], err) != 0 ||
		    check_rows(job, &enc[b], b, where, err) != 0)
			goto out;
		len[b] = enc[b].n;
		n += enc[b].n;
	}
	tok = calloc(n + 1, sizeof *tok);
	if (tok == NULL) {
		api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
		goto out;
	}
	for (size_t b = 0; b < B; b++)
		for (size_t i = 0; i < enc[b].n; i++)
			tok[at++] = (struct api_token){NULL, 0, enc[b].tokens[i].id};
	/* labelled by the tokenizer there, as ids are */
	if (attention_query_from_tokens(job, tok, len, B, batched, where, limit, err) != 0 ||
	    token_offsets(job, enc, err) != 0)
		goto out;
	rc = 0;
out:
	for (size_t b = 0; enc != NULL && b < B; b++)
		tok_encoding_release(&enc[b]);
	free(enc);
	free(tok);
	free(len);
	return rc;
}

int attention_query_from_text(struct attention_job *job, const char *const *text, size_t B,
			      int batched, const struct api_where *where, size_t limit,
			      struct api_error *err)
{
	size_t bytes = 0, words = 0, longest = 0, at = 0;
	struct api_token *tok = NULL;
	size_t *len = NULL;
	char *store;
	int rc = -1;

	if (need_embedding_table(job, where, err) != 0)
		return -1;
	if (job->entry != NULL && job->entry->tok != NULL)
		return query_from_tokenizer(job, text, B, batched, where, limit, err);
	job->batched = batched;
	for (size_t b = 0; b < B; b++) {
		size_t n, text_len = strlen(text[b]);

		/* the split's words bounded as a tokenizer's text is */
		if (check_text_bytes(job, text_len, b, where, err) != 0)
			return -1;
		n = split_text(text[b], NULL, NULL);
		bytes += text_len + 1;
		words += n;
		longest = n > longest ? n : longest;
	}
	/* before the words are split (a token each): a 10 MB text would
	 * otherwise take far more memory to be refused */
	if (check_embed_memory(limit, B, longest, job->model->E, where->base, err) != 0)
		return -1;
	job->tok_store = store = malloc(bytes + 1);
	tok = malloc((words + 1) * sizeof(*tok));
	len = malloc(B * sizeof(*len));
	if (store == NULL || tok == NULL || len == NULL) {
		api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
		goto out;
	}
	for (size_t b = 0; b < B; b++) {
		len[b] = split_text(text[b], &store, tok + at);
		at += len[b];
	}
	rc = attention_query_from_tokens(job, tok, len, B, batched, where, limit, err);
out:
	free(tok);
	free(len);
	return rc;
}

int attention_self_keys(struct attention_job *job, struct api_error *err)
{
	job->Lk = job->Lq;
	job->k_len = malloc(job->B * sizeof(size_t));
	if (job->k_len == NULL)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	memcpy(job->k_len, job->q_len, job->B * sizeof(size_t));
	return 0;
}

/* kv_lengths: each item's own key length, capped by the mask's lengths. */
static int apply_lengths(struct attention_job *job, const struct api_mask_spec *spec,
			 struct api_error *err)
{
	int padded = 0;

	if (spec->lengths != NULL && spec->n_lengths != job->B)
		return api_fail(err, API_E_DIMENSION_MISMATCH, spec->where_lengths,
				"needs one length per batch item (%zu)", job->B);
	for (size_t b = 0; b < job->B; b++)
		padded |= job->k_len[b] < job->Lk;
	if (spec->lengths == NULL && !padded)
		return 0;
	job->kv_lengths = malloc(job->B * sizeof(size_t));
	if (job->kv_lengths == NULL)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	for (size_t b = 0; b < job->B; b++) {
		job->kv_lengths[b] = job->k_len[b];
		if (spec->lengths && (size_t)spec->lengths[b] < job->kv_lengths[b])
			job->kv_lengths[b] = (size_t)spec->lengths[b];
	}
	job->mask.kv_lengths = job->kv_lengths;
	return 0;
}

int attention_apply_mask(struct attention_job *job, const struct api_mask_spec *spec,
			 struct api_error *err)
{
	job->mask.window = spec->window;
	if (job->ragged)
		job->mask.q_lengths = job->q_len; /* each item aligns on its own length */
	if (spec->causal)
		job->mask.causal = spec->bottom_right ? ATTN_CAUSAL_BOTTOM_RIGHT : ATTN_CAUSAL_TOP_LEFT;
	else
		job->mask.bottom_right = spec->bottom_right; /* each item on its own lengths */
	return apply_lengths(job, spec, err);
}
