/* tok_models.c: model builders for the tokenizer suites (see tok_models.h). */
#include "tok_models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_stages.h"

struct tok_model tst_model(enum tok_model_kind kind, const char *const *pieces, size_t n,
			   const char *const *merges, size_t n_merges)
{
	struct tok_model m;

	memset(&m, 0, sizeof m);
	m.kind = kind;
	m.unk_id = -1;
	m.vocab = calloc(n + 1, sizeof *m.vocab);
	m.merges = calloc(n_merges + 1, sizeof *m.merges);
	ck_assert_ptr_nonnull(m.vocab);
	ck_assert_ptr_nonnull(m.merges);
	for (size_t i = 0; i < n; i++) {
		m.vocab[i].piece = tst_dup(pieces[i]);
		m.vocab[i].id = (int32_t)i;
	}
	m.n_vocab = n;
	for (size_t i = 0; i < n_merges; i++) {
		const char *sp = strchr(merges[i], ' ');

		ck_assert_ptr_nonnull(sp);
		m.merges[i].left = strndup(merges[i], (size_t)(sp - merges[i]));
		m.merges[i].right = tst_dup(sp + 1);
	}
	m.n_merges = n_merges;
	return m;
}

struct tok_model_rt *tst_build_ok(const struct tok_model *m)
{
	struct tok_model_rt *rt = NULL;
	char err[256] = "";
	enum tok_status st = tok_model_build(m, &rt, err, sizeof err);

	ck_assert_msg(st == TOK_OK, "build: %d %s", (int)st, err);
	return rt;
}

void tst_expect_tokens(const struct tok_model_rt *rt, const char *s, const char *want)
{
	struct tok_pieces p = {0};
	char got[4096] = "";
	size_t at = 0;

	ck_assert_int_eq(tok_model_tokenize(rt, s, strlen(s), &p), TOK_OK);
	for (size_t i = 0; i < p.n; i++)
		at += (size_t)snprintf(got + at, sizeof got - at, "%s%d:%zu:%zu", i ? " " : "",
				       (int)p.v[i].id, p.v[i].start, p.v[i].end);
	ck_assert_msg(strcmp(got, want) == 0, "'%s': got '%s', want '%s'", s, got, want);
	tok_pieces_release(&p);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

uint32_t tst_rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 11) % n;
}
