/*
 * model.c: a built model of any kind (stages.h, "models"): the dispatch to
 * bpe.c, wordpiece.c and unigram.c, and the list of pieces they append to.
 *
 * Ownership: tok_model_build returns a model the caller frees with
 * tok_model_free; it borrows the spec's model, which must outlive it.
 */
#include "stages.h"

#include <stdio.h>
#include <stdlib.h>

struct tok_model_rt {
	enum tok_model_kind kind;
	struct tok_bpe *bpe;
	struct tok_wordpiece *wordpiece;
	struct tok_unigram *unigram;
};

enum tok_status tok_model_build(const struct tok_model *m, struct tok_model_rt **out, char *err,
				size_t errlen)
{
	struct tok_model_rt *rt = calloc(1, sizeof *rt);
	enum tok_status st;

	*out = NULL;
	if (rt == NULL)
		return TOK_ENOMEM;
	rt->kind = m->kind;
	switch (m->kind) {
	case TOK_MODEL_BPE:
		st = tok_bpe_build(m, &rt->bpe, err, errlen);
		break;
	case TOK_MODEL_WORDPIECE:
		st = tok_wordpiece_build(m, &rt->wordpiece, err, errlen);
		break;
	case TOK_MODEL_UNIGRAM:
		st = tok_unigram_build(m, &rt->unigram, err, errlen);
		break;
	default:
		snprintf(err, errlen, "model: unknown kind %d", (int)m->kind);
		st = TOK_ESPEC;
		break;
	}
	if (st != TOK_OK) {
		tok_model_free(rt);
		return st;
	}
	*out = rt;
	return TOK_OK;
}

void tok_model_free(struct tok_model_rt *rt)
{
	if (rt == NULL)
		return;
	tok_bpe_free(rt->bpe);
	tok_wordpiece_free(rt->wordpiece);
	tok_unigram_free(rt->unigram);
	free(rt);
}

enum tok_status tok_model_tokenize(const struct tok_model_rt *rt, const char *s, size_t len,
				   struct tok_pieces *out)
{
	if (len == 0)
		return TOK_OK;
	switch (rt->kind) {
	case TOK_MODEL_BPE:
		return tok_bpe_tokenize(rt->bpe, s, len, out);
	case TOK_MODEL_WORDPIECE:
		return tok_wordpiece_tokenize(rt->wordpiece, s, len, out);
	case TOK_MODEL_UNIGRAM:
		return tok_unigram_tokenize(rt->unigram, s, len, out);
	}
	return TOK_OK;
}

void tok_pieces_release(struct tok_pieces *p)
{
	if (p == NULL)
		return;
	free(p->v);
	p->v = NULL;
	p->n = p->cap = 0;
}

enum tok_status tok_pieces_push(struct tok_pieces *p, int32_t id, size_t start, size_t end)
{
	if (p->n == p->cap) {
		size_t cap = p->cap < 16 ? 16 : p->cap * 2;
		struct tok_piece *v;

		if (p->cap > SIZE_MAX / 2 / sizeof *v)
			return TOK_ENOMEM;
		v = realloc(p->v, cap * sizeof *v);
		if (v == NULL)
			return TOK_ENOMEM;
		p->v = v;
		p->cap = cap;
	}
	p->v[p->n].id = id;
	p->v[p->n].start = start;
	p->v[p->n].end = end;
	p->n++;
	return TOK_OK;
}
