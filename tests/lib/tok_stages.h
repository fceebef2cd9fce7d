/*
 * tok_stages.h: what the tokenizer's stage suites (tests/tokenizer/
 * check_text*.c) build their inputs with. Failures are Check assertions.
 * Ownership: each returns a new object the caller releases (free,
 * tok_splits_release, tok_added_set_free).
 */
#ifndef ATTN_TESTS_TOK_STAGES_H
#define ATTN_TESTS_TOK_STAGES_H

#include <stddef.h>

#include "tokenizer/stages.h"

/* strdup that cannot fail the caller. */
char *tst_dup(const char *s);

/* s = one split holding all of text (aligned to itself). */
void tst_splits_of(struct tok_splits *s, const char *text);

/* The added-token set of a[n], matched after norm (or NULL). */
struct tok_added_set *tst_added_set(struct tok_added *a, size_t n,
				    const struct tok_normalizer *norm);

#endif
