/*
 * unigram.c: the Unigram model, as Hugging Face's models/unigram
 * (model.rs: encode_optimized and tokenize), itself after SentencePiece.
 *
 * Building: a byte trie of the pieces (edges (node, byte) -> (child, the
 * entry whose piece ends at child) in one hash map), the pieces' ids and
 * scores (log probabilities), and unk_score = min score - 10 (kUnkPenalty).
 *
 * Tokenizing one word, in two passes over its bytes:
 *   1. Viterbi: best[e] is the best-scoring segmentation of s[0, e); from
 *      each character boundary `start` in order, every piece the trie finds
 *      at start offers best[start] + score to best[start + its length],
 *      taken when strictly better (so on ties the earliest start, i.e. the
 *      longest piece, wins); a character no one-character piece covers
 *      offers the unknown token with unk_score.
 *   2. Backtrack from len, fusing runs of unknown tokens into one stretch;
 *      each stretch becomes the id of its text, else its bytes "<0xHH>"
 *      (byte_fallback, all with the stretch's range), else the unknown id.
 * Words of up to WORD_STACK bytes use a stack array; longer ones the heap.
 *
 * Ownership: tok_unigram_build returns a model freed by tok_unigram_free;
 * it keeps no pointer into the spec.
 */
#include "stages.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

#define WORD_STACK 128
#define UNK_PENALTY 10.0

struct tok_unigram {
	struct tok_vocab *vocab;
	struct tok_idmap trie; /* (node << 8 | byte) -> (child, entry or -1) */
	int32_t *ids;	       /* [n] the entries' ids */
	double *scores;	       /* [n] the entries' scores */
	size_t n;
	int32_t unk_id; /* -1: none (unknown characters are dropped) */
	double unk_score;
	int byte_fallback;
	int32_t byte_ids[256];
};

/* The best segmentation of a prefix of the word that ends here. */
struct best {
	double score;
	size_t start; /* where its last piece starts */
	int32_t id;   /* its last piece's id (unk_id for an unknown one) */
	int set;
};

static uint64_t edge_key(size_t node, unsigned char byte)
{
	return (uint64_t)node << 8 | byte;
}

/* Adds entry i's piece to the trie; *nodes counts the nodes. */
static enum tok_status trie_add(struct tok_unigram *u, const char *p, size_t len, int32_t i,
				size_t *nodes)
{
	size_t node = 0;

	for (size_t k = 0; k < len; k++) {
		uint64_t key = edge_key(node, (unsigned char)p[k]);
		const struct tok_idmap_slot *e = tok_idmap_get(&u->trie, key);
		int32_t child = e != NULL ? e->a : (int32_t)++*nodes;
		int32_t entry = e != NULL ? e->b : -1;
		enum tok_status st;

		if (*nodes > INT32_MAX - 1)
			return TOK_ENOMEM;
		if (k + 1 == len)
			entry = i;
		if (e == NULL || entry != e->b) {
			st = tok_idmap_set(&u->trie, key, child, entry);
			if (st != TOK_OK)
				return st;
		}
		node = (size_t)child;
	}
	return TOK_OK;
}

static enum tok_status build_tables(struct tok_unigram *u, const struct tok_model *m, char *err,
				    size_t errlen)
{
	double min_score = INFINITY;
	size_t nodes = 0;
	int unk_found = m->unk_id < 0;

	if (m->n_vocab > INT32_MAX || m->n_vocab > SIZE_MAX / sizeof(double))
		return TOK_ENOMEM;
	u->ids = malloc((m->n_vocab + 1) * sizeof *u->ids);
	u->scores = malloc((m->n_vocab + 1) * sizeof *u->scores);
	if (u->ids == NULL || u->scores == NULL)
		return TOK_ENOMEM;
	u->n = m->n_vocab;
	for (size_t i = 0; i < m->n_vocab; i++) {
		const struct tok_vocab_entry *e = &m->vocab[i];
		enum tok_status st = trie_add(u, e->piece, strlen(e->piece), (int32_t)i, &nodes);

		if (st != TOK_OK)
			return st;
		u->ids[i] = e->id;
		u->scores[i] = e->score;
		if (e->score < min_score)
			min_score = e->score;
		if (e->id == m->unk_id)
			unk_found = 1;
	}
	if (!unk_found) {
		snprintf(err, errlen, "model: unk_id %d is not in the vocabulary", (int)m->unk_id);
		return TOK_ESPEC;
	}
	u->unk_score = (m->n_vocab == 0 ? 0.0 : min_score) - UNK_PENALTY;
	return TOK_OK;
}

enum tok_status tok_unigram_build(const struct tok_model *m, struct tok_unigram **out,
				  char *err, size_t errlen)
{
	struct tok_unigram *u = calloc(1, sizeof *u);
	enum tok_status st;

	*out = NULL;
	if (u == NULL)
		return TOK_ENOMEM;
	tok_idmap_init(&u->trie);
	st = tok_vocab_from_model(m, &u->vocab, err, errlen);
	if (st == TOK_OK)
		st = build_tables(u, m, err, errlen);
	if (st != TOK_OK) {
		tok_unigram_free(u);
		return st;
	}
	u->unk_id = m->unk_id < 0 ? -1 : m->unk_id;
	u->byte_fallback = m->byte_fallback;
	tok_byte_ids(u->vocab, u->byte_ids);
	*out = u;
	return TOK_OK;
}

void tok_unigram_free(struct tok_unigram *u)
{
	if (u == NULL)
		return;
	tok_vocab_free(u->vocab);
	tok_idmap_release(&u->trie);
	free(u->ids);
	free(u->scores);
	free(u);
}

/* ---- pass 1: Viterbi ------------------------------------------------------ */

static void offer(struct best *b, double score, size_t start, int32_t id)
{
	if (!b->set || score > b->score) {
		b->score = score;
		b->start = start;
		b->id = id;
		b->set = 1;
	}
}

static void viterbi(const struct tok_unigram *u, const char *s, size_t len, struct best *best)
{
	for (size_t i = 0; i <= len; i++)
		best[i].set = 0;
	best[0].score = 0.0;
	for (size_t start = 0; start < len;) {
		size_t mblen = utf8_char((const unsigned char *)s + start, len - start);
		double base = best[start].score;
		size_t node = 0;
		int single = 0;

		if (mblen == 0)
			mblen = 1; /* not UTF-8: one byte stands alone */
		/* every piece that is a prefix of s[start, len): walk the trie */
		for (size_t k = start; k < len; k++) {
			const struct tok_idmap_slot *e =
				tok_idmap_get(&u->trie, edge_key(node, (unsigned char)s[k]));

			if (e == NULL)
				break;
			node = (size_t)e->a;
			if (e->b < 0)
				continue;
			offer(&best[k + 1], u->scores[e->b] + base, start, u->ids[e->b]);
			if (k + 1 - start == mblen)
				single = 1;
		}
		if (!single)
			offer(&best[start + mblen], u->unk_score + base, start, u->unk_id);
		start += mblen;
	}
}

/* ---- pass 2: the pieces, backwards ---------------------------------------- */

/* Pushes the tokens of the stretch s[a, b) in reverse order. */
static enum tok_status push_stretch(const struct tok_unigram *u, const char *s, size_t a,
				    size_t b, struct tok_pieces *out)
{
	int32_t id = tok_vocab_get(u->vocab, s + a, b - a);
	int all = u->byte_fallback;

	if (id >= 0)
		return tok_pieces_push(out, id, a, b);
	for (size_t k = a; k < b && all; k++)
		all = u->byte_ids[(unsigned char)s[k]] >= 0;
	if (all) {
		for (size_t k = b; k > a; k--) {
			enum tok_status st =
				tok_pieces_push(out, u->byte_ids[(unsigned char)s[k - 1]], a, b);

			if (st != TOK_OK)
				return st;
		}
		return TOK_OK;
	}
	if (u->unk_id < 0)
		return TOK_OK;
	return tok_pieces_push(out, u->unk_id, a, b);
}

static enum tok_status backtrack(const struct tok_unigram *u, const char *s, size_t len,
				 const struct best *best, struct tok_pieces *out)
{
	size_t first = out->n;
	size_t end = len;
	size_t unk_end = 0; /* > 0: a run of unknown tokens ends there */
	enum tok_status st = TOK_OK;

	while (end > 0 && st == TOK_OK) {
		const struct best *b = &best[end];

		if (b->id == u->unk_id) {
			if (unk_end == 0)
				unk_end = end;
		} else {
			if (unk_end > 0)
				st = push_stretch(u, s, end, unk_end, out);
			unk_end = 0;
			if (st == TOK_OK)
				st = push_stretch(u, s, b->start, end, out);
		}
		end = b->start;
	}
	if (st == TOK_OK && unk_end > 0)
		st = push_stretch(u, s, 0, unk_end, out);
	if (st != TOK_OK)
		return st;
	for (size_t i = first, j = out->n; i + 1 < j; i++, j--) {
		struct tok_piece t = out->v[i];

		out->v[i] = out->v[j - 1];
		out->v[j - 1] = t;
	}
	return TOK_OK;
}

enum tok_status tok_unigram_tokenize(const struct tok_unigram *u, const char *s, size_t len,
				     struct tok_pieces *out)
{
	struct best stack[WORD_STACK + 1];
	struct best *best = stack;
	enum tok_status st;

	if (len == 0)
		return TOK_OK;
	if (len > WORD_STACK) {
		if (len > SIZE_MAX / sizeof *best - 1)
			return TOK_ENOMEM;
		best = malloc((len + 1) * sizeof *best);
		if (best == NULL)
			return TOK_ENOMEM;
	}
	viterbi(u, s, len, best);
	st = backtrack(u, s, len, best, out);
	if (best != stack)
		free(best);
	return st;
}
