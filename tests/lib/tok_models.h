/*
 * tok_models.h: what the tokenizer's model suites (tests/tokenizer/
 * check_models.c, check_wordpiece_unigram.c) build and check models with.
 * Failures are Check assertions.
 * Ownership: tst_model's model is the caller's (tok_model_release), as is
 * tst_build_ok's runtime (tok_model_free).
 */
#ifndef ATTN_TESTS_TOK_MODELS_H
#define ATTN_TESTS_TOK_MODELS_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/stages.h"

/* An assertion for hot loops: Check records every ck_assert it passes (a
 * write each), so loops of millions check with this and fail through it. */
#define TST_EXPECT(c)                                                                              \
	do {                                                                                       \
		if (!(c))                                                                          \
			ck_abort_msg("%s:%d: %s", __FILE__, __LINE__, #c);                         \
	} while (0)

/* A model of `kind` whose vocab is pieces[i] -> id i, with merges
 * "left right" (n_merges may be 0, merges NULL). */
struct tok_model tst_model(enum tok_model_kind kind, const char *const *pieces, size_t n,
			   const char *const *merges, size_t n_merges);

/* tok_model_build that must succeed. */
struct tok_model_rt *tst_build_ok(const struct tok_model *m);

/* Tokenizes s and checks its pieces against "id:start:end ..." */
void tst_expect_tokens(const struct tok_model_rt *rt, const char *s, const char *want);

/* A pseudo-random number in [0, n), from one fixed xorshift sequence per
 * process (the suites' random cases are the same every run). */
uint32_t tst_rnd(uint32_t n);

#endif
