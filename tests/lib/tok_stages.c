/* tok_stages.c: inputs for the tokenizer's stage suites (see tok_stages.h). */
#include "tests/lib/tok_stages.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

char *tst_dup(const char *s)
{
	char *d = strdup(s);

	ck_assert_ptr_nonnull(d);
	return d;
}

void tst_splits_of(struct tok_splits *s, const char *text)
{
	struct tok_nstr n;

	memset(s, 0, sizeof *s);
	tok_nstr_init(&n);
	ck_assert_int_eq(tok_nstr_from_text(&n, text, strlen(text)), TOK_OK);
	ck_assert_int_eq(tok_splits_push(s, &n, -1), TOK_OK);
}

struct tok_added_set *tst_added_set(struct tok_added *a, size_t n,
				    const struct tok_normalizer *norm)
{
	struct tok_added_set *set = NULL;
	char err[128];

	ck_assert_int_eq(tok_added_build(a, n, norm, &set, err, sizeof err), TOK_OK);
	ck_assert_ptr_nonnull(set);
	return set;
}
