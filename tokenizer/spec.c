/*
 * spec.c: freeing a tokenizer's description (spec.h). Every part frees what
 * it owns, recursing into its Sequence items; compiled patterns go with
 * their text.
 */
#include "spec.h"

#include <stdlib.h>
#include <string.h>

#include "stages.h"

void tok_normalizer_release(struct tok_normalizer *n)
{
	if (n == NULL)
		return;
	for (size_t i = 0; i < n->n_items; i++)
		tok_normalizer_release(&n->items[i]);
	free(n->items);
	free(n->prepend);
	free(n->content);
	tok_pattern_release(&n->pattern);
	memset(n, 0, sizeof *n);
}

void tok_pretokenizer_release(struct tok_pretokenizer *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->n_items; i++)
		tok_pretokenizer_release(&p->items[i]);
	free(p->items);
	free(p->replacement);
	tok_pattern_release(&p->pattern);
	memset(p, 0, sizeof *p);
}

void tok_model_release(struct tok_model *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->n_vocab; i++)
		free(m->vocab[i].piece);
	free(m->vocab);
	for (size_t i = 0; i < m->n_merges; i++) {
		free(m->merges[i].left);
		free(m->merges[i].right);
	}
	free(m->merges);
	free(m->unk_token);
	free(m->continuing_subword_prefix);
	free(m->end_of_word_suffix);
	memset(m, 0, sizeof *m);
}

void tok_post_release(struct tok_post *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->n_single; i++)
		free(p->single[i].special);
	free(p->single);
	for (size_t i = 0; i < p->n_specials; i++) {
		struct tok_template_special *sp = &p->specials[i];
		for (size_t j = 0; j < sp->n; j++)
			free(sp->tokens[j]);
		free(sp->tokens);
		free(sp->ids);
		free(sp->name);
	}
	free(p->specials);
	free(p->cls);
	free(p->sep);
	for (size_t i = 0; i < p->n_items; i++)
		tok_post_release(&p->items[i]);
	free(p->items);
	memset(p, 0, sizeof *p);
}

void tok_decoder_release(struct tok_decoder *d)
{
	if (d == NULL)
		return;
	free(d->replacement);
	free(d->prefix);
	free(d->content);
	tok_pattern_release(&d->pattern);
	for (size_t i = 0; i < d->n_items; i++)
		tok_decoder_release(&d->items[i]);
	free(d->items);
	memset(d, 0, sizeof *d);
}

void tok_spec_release(struct tok_spec *s)
{
	if (s == NULL)
		return;
	tok_normalizer_release(s->normalizer);
	free(s->normalizer);
	tok_pretokenizer_release(s->pretokenizer);
	free(s->pretokenizer);
	tok_model_release(&s->model);
	for (size_t i = 0; i < s->n_added; i++)
		free(s->added[i].content);
	free(s->added);
	tok_post_release(s->post);
	free(s->post);
	tok_decoder_release(s->decoder);
	free(s->decoder);
	memset(s, 0, sizeof *s);
}
