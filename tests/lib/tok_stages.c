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

static struct tok_span union_span(const struct tok_nstr *n)
{
	struct tok_span sp = {0, 0};

	for (size_t i = 0; i < n->len; i++) {
		if (i == 0 || n->align[i].start < sp.start)
			sp.start = n->align[i].start;
		if (i == 0 || n->align[i].end > sp.end)
			sp.end = n->align[i].end;
	}
	return sp;
}

void tst_check_splits(const struct tok_splits *s, const struct tst_want *w, size_t n)
{
	for (size_t i = 0; i < s->n && i < n; i++) {
		const struct tok_nstr *x = &s->v[i].n;
		struct tok_span sp = union_span(x);
		ck_assert_msg(x->len == strlen(w[i].s) && (x->len == 0 || memcmp(x->s, w[i].s, x->len) == 0),
			      "split %zu: '%.*s', want '%s'", i, (int)x->len, x->s, w[i].s);
		ck_assert_msg(sp.start == w[i].start && sp.end == w[i].end,
			      "split %zu '%s': (%zu, %zu), want (%zu, %zu)", i, w[i].s,
			      (size_t)sp.start, (size_t)sp.end, w[i].start, w[i].end);
	}
	ck_assert_uint_eq(s->n, n);
}
