/*
 * tok_stages.h: what the tokenizer's stage suites (tests/tokenizer/
 * check_text*.c, check_added.c) build their inputs and check splits with. Failures are Check assertions.
 * Ownership: each returns a new object the caller releases (free,
 * tok_splits_release, tok_added_set_free).
 */
#ifndef ATTN_TESTS_TOK_STAGES_H
#define ATTN_TESTS_TOK_STAGES_H

#include <stddef.h>

#include "tokenizer/stages.h"

/* An expected split: its text and the union of its bytes' original spans. */
struct tst_want {
	const char *s;
	size_t start, end;
};

#define TST_WANT(...) ((const struct tst_want[]){__VA_ARGS__})
#define TST_NWANT(...) (sizeof((const struct tst_want[]){__VA_ARGS__}) / sizeof(struct tst_want))

/* s holds exactly the n splits of w, texts and spans. */
void tst_check_splits(const struct tok_splits *s, const struct tst_want *w, size_t n);

/* strdup that cannot fail the caller. */
char *tst_dup(const char *s);

/* s = one split holding all of text (aligned to itself). */
void tst_splits_of(struct tok_splits *s, const char *text);

/* The added-token set of a[n], matched after norm (or NULL). */
struct tok_added_set *tst_added_set(struct tok_added *a, size_t n,
				    const struct tok_normalizer *norm);

#endif
