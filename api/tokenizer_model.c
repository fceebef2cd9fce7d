/*
 * tokenizer_model.c: a tokenizer.json's model, BPE, WordPiece or Unigram,
 * and the checks of its vocabulary (see tokenizer_model.h).
 *
 * A {"piece": id} vocabulary and the merges were read before jansson, straight
 * from the bytes (tokenizer_vocab.c); the tree holds `{}` and `[]` in their
 * place, and they are checked whole here. A Unigram vocabulary (an array of
 * [piece, score]) is read from the tree, each element leaving it once copied
 * (from the end of the array, where removing is O(1)), so malloc hands the
 * tree's memory to the copies.
 *
 * Ownership: the JSON is borrowed; what is read is the model's, on failure
 * too (tok_model_release frees it).
 */
#include "tokenizer_model.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- models ---------------------------------------------------------------- */

static const struct kind_name MODELS[] = {
	{"BPE", TOK_MODEL_BPE},
	{"WordPiece", TOK_MODEL_WORDPIECE},
	{"Unigram", TOK_MODEL_UNIGRAM},
	{NULL, 0},
};

/* Older files leave the model's "type" out: Hugging Face then tells the
 * kinds apart by their fields, as here. */
static int model_kind(struct rd *r, json_t *j, int *kind)
{
	if (!json_is_object(j))
		return rd_fail(r, "expected a model object");
	if (json_object_get(j, "type") != NULL)
		return rd_kind(r, j, "model", MODELS, kind);
	if (json_object_get(j, "merges") != NULL)
		*kind = TOK_MODEL_BPE;
	else if (json_is_array(json_object_get(j, "vocab")))
		*kind = TOK_MODEL_UNIGRAM;
	else if (json_object_get(j, "max_input_chars_per_word") != NULL)
		*kind = TOK_MODEL_WORDPIECE;
	else
		return rd_fail(r, "missing \"type\" of the model, and its fields do not say it");
	return 0;
}

static int id_cmp(const void *pa, const void *pb)
{
	const struct tok_vocab_entry *a = pa, *b = pb;

	return a->id < b->id ? -1 : a->id > b->id;
}

/* FNV-1a, 32 bit, for the table of pieces below. */
static uint32_t fnv1a(const char *p)
{
	uint32_t h = 2166136261u;

	for (; *p != '\0'; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	return h;
}

/* Refuses a piece given twice: jansson would refuse the duplicate key, and
 * the vocabulary read without it must too. An open-addressing table of
 * indices + 1, at most half full. */
static int pieces_unique(struct rd *r, const struct tok_model *m)
{
	char q[QUOTE_MAX + 4];
	size_t slots = 16;
	uint32_t *t;
	int rc = 0;

	while (slots < 2 * m->n_vocab)
		slots *= 2;
	t = calloc(slots, sizeof *t);
	if (t == NULL)
		return rd_oom(r);
	for (size_t i = 0; i < m->n_vocab && rc == 0; i++) {
		size_t h = fnv1a(m->vocab[i].piece) & (slots - 1);

		while (t[h] != 0 && strcmp(m->vocab[t[h] - 1].piece, m->vocab[i].piece) != 0)
			h = (h + 1) & (slots - 1);
		if (t[h] != 0)
			rc = rd_fail(r, "'%s' is given twice", rd_quote(q, m->vocab[i].piece));
		t[h] = (uint32_t)i + 1;
	}
	free(t);
	return rc;
}

/* Refuses a piece given twice and two pieces with one id. Leaves the
 * vocabulary sorted by id (the order of a {"piece": id} object means
 * nothing; by id is how a reader expects it). */
int tokmodel_vocab_unique(struct rd *r, struct tok_model *m)
{
	char q[QUOTE_MAX + 4], q2[QUOTE_MAX + 4];

	if (m->n_vocab == 0)
		return 0; /* and m->vocab may be NULL, which qsort may not take */
	if (m->n_vocab > INT32_MAX)
		return rd_fail(r, "more than 2^31 - 1 pieces");
	if (pieces_unique(r, m) != 0)
		return -1;
	qsort(m->vocab, m->n_vocab, sizeof *m->vocab, id_cmp);
	for (size_t i = 1; i < m->n_vocab; i++) {
		if (m->vocab[i - 1].id == m->vocab[i].id)
			return rd_fail(r, "id %d is given to both '%s' and '%s'",
				       (int)m->vocab[i].id, rd_quote(q, m->vocab[i - 1].piece),
				       rd_quote(q2, m->vocab[i].piece));
	}
	return 0;
}

/* One merge "left right" (exactly one space, as Hugging Face splits it) into m. */
int tokmodel_split_merge(struct rd *r, const char *s, size_t len, struct tok_merge *m)
{
	const char *sp = memchr(s, ' ', len);

	if (sp == NULL || sp == s || sp + 1 == s + len || memchr(sp + 1, ' ', len - (size_t)(sp + 1 - s)))
		return rd_fail(r, "expected two pieces separated by one space");
	if (rd_dup(r, s, (size_t)(sp - s), &m->left) != 0)
		return -1;
	return rd_dup(r, sp + 1, len - (size_t)(sp - s) - 1, &m->right);
}

/* A {"piece": id} vocabulary, read before jansson (tokenizer_vocab.c: the
 * tree holds `{}` in its place), checked whole here. */
static int read_vocab(struct rd *r, json_t *j, struct tok_model *m)
{
	json_t *v = json_object_get(j, "vocab");
	size_t up;

	if (v == NULL)
		return rd_fail_key(r, "vocab", "missing (expected an object {\"piece\": id, ...})");
	if (!json_is_object(v))
		return rd_fail_key(r, "vocab", "expected an object {\"piece\": id, ...}");
	up = rd_key(r, "vocab");
	if (tokmodel_vocab_unique(r, m) != 0)
		return -1;
	rd_up(r, up);
	return 0;
}

/* The merges, read before jansson (the tree holds `[]` in their place). */
static int read_merges(struct rd *r, json_t *j)
{
	json_t *v = json_object_get(j, "merges");

	if (v == NULL)
		return rd_fail_key(r, "merges", "missing (expected an array)");
	if (!json_is_array(v))
		return rd_fail_key(r, "merges", "expected an array of merges");
	return 0;
}

static int read_bpe(struct rd *r, json_t *j, struct tok_model *m)
{
	json_t *dropout = json_object_get(j, "dropout");

	if (dropout != NULL && !json_is_null(dropout))
		return rd_fail_key(r, "dropout",
				   "BPE dropout is not supported (it makes encoding random); "
				   "expected null");
	if (read_vocab(r, j, m) != 0 || read_merges(r, j) != 0)
		return -1;
	if (rd_str(r, j, "unk_token", F_NULLABLE, NULL, &m->unk_token) != 0 ||
	    rd_str(r, j, "continuing_subword_prefix", F_NULLABLE, NULL,
		   &m->continuing_subword_prefix) != 0 ||
	    rd_str(r, j, "end_of_word_suffix", F_NULLABLE, NULL, &m->end_of_word_suffix) != 0)
		return -1;
	if (rd_bool(r, j, "fuse_unk", 0, &m->fuse_unk) != 0 ||
	    rd_bool(r, j, "byte_fallback", 0, &m->byte_fallback) != 0)
		return -1;
	return rd_bool(r, j, "ignore_merges", 0, &m->ignore_merges);
}

static int read_wordpiece(struct rd *r, json_t *j, struct tok_model *m)
{
	json_int_t max;

	if (read_vocab(r, j, m) != 0)
		return -1;
	if (rd_str(r, j, "unk_token", F_OPTIONAL, "[UNK]", &m->unk_token) != 0 ||
	    rd_str(r, j, "continuing_subword_prefix", F_OPTIONAL, "##",
		   &m->continuing_subword_prefix) != 0 ||
	    rd_int(r, j, "max_input_chars_per_word", 100, INT32_MAX, &max) != 0)
		return -1;
	m->max_input_chars_per_word = (size_t)max;
	return 0;
}

/* One [piece, score] of a Unigram vocabulary; its id is its index. */
static int read_unigram_piece(struct rd *r, json_t *v, size_t i, struct tok_vocab_entry *e)
{
	json_t *piece = json_array_get(v, 0), *score = json_array_get(v, 1);

	if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_string(piece) ||
	    !json_is_number(score))
		return rd_fail(r, "expected [\"piece\", score]");
	e->id = (int32_t)i;
	e->score = json_number_value(score);
	return rd_dup(r, json_string_value(piece), json_string_length(piece), &e->piece);
}

static int read_unigram(struct rd *r, json_t *j, struct tok_model *m)
{
	json_t *arr, *unk;
	size_t up;

	if (rd_array(r, j, "vocab", &arr) != 0)
		return -1;
	if (json_array_size(arr) > INT32_MAX)
		return rd_fail_key(r, "vocab", "more than 2^31 - 1 pieces");
	m->vocab = rd_calloc(json_array_size(arr), sizeof *m->vocab);
	if (m->vocab == NULL)
		return rd_oom(r);
	m->n_vocab = json_array_size(arr);
	up = rd_key(r, "vocab");
	for (size_t i = m->n_vocab; i-- > 0;) {
		size_t at = rd_index(r, i);

		if (read_unigram_piece(r, json_array_get(arr, i), i, &m->vocab[i]) != 0)
			return -1;
		rd_up(r, at);
		json_array_remove(arr, i);
	}
	rd_up(r, up);
	m->unk_id = -1;
	unk = json_object_get(j, "unk_id");
	if (unk != NULL && !json_is_null(unk)) {
		json_int_t id;

		if (m->n_vocab == 0)
			return rd_fail_key(r, "unk_id", "the vocabulary is empty");
		if (rd_int(r, j, "unk_id", -1, (json_int_t)m->n_vocab - 1, &id) != 0)
			return -1;
		m->unk_id = (int32_t)id;
	}
	return rd_bool(r, j, "byte_fallback", 0, &m->byte_fallback);
}

int tokmodel_read(struct rd *r, json_t *j, struct tok_model *m)
{
	int kind;

	if (model_kind(r, j, &kind) != 0)
		return -1;
	m->kind = (enum tok_model_kind)kind;
	m->unk_id = -1;
	if (m->kind != TOK_MODEL_BPE && r->pre.merges_end > 0)
		return rd_fail_key(r, "merges", "only a BPE model has merges");
	switch (m->kind) {
	case TOK_MODEL_BPE:
		return read_bpe(r, j, m);
	case TOK_MODEL_WORDPIECE:
		return read_wordpiece(r, j, m);
	default:
		return read_unigram(r, j, m);
	}
}
