/*
 * check_added.c: a tokenizer's added tokens (tokenizer/added.c), against the
 * behaviour of Hugging Face's AddedVocabulary: leftmost-longest matches,
 * single_word, lstrip/rstrip, normalized tokens matched after
 * normalization, splits already matched passed through; and the automaton
 * against its naive twin (a trie walk from every position) on random token
 * sets and texts, short and past a window of positions. The linear-time
 * case is check_text_linear.c.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/light.h"
#include "tests/lib/suite_main.h"
#include "tests/lib/tok_models.h"
#include "tests/lib/tok_stages.h"
#include "tokenizer/spec.h"
#include "tokenizer/stages.h"

static void check_added(const struct tok_added_set *set, int normalized, const char *text,
			const struct tst_want *w, const int32_t *ids, size_t n)
{
	struct tok_splits s;

	tst_splits_of(&s, text);
	ck_assert_int_eq(tok_added_split(set, normalized, &s), TOK_OK);
	tst_check_splits(&s, w, n);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(s.v[i].id == ids[i], "split %zu: id %d, want %d", i, s.v[i].id,
			      ids[i]);
	tok_splits_release(&s);
}

#define IDS(...) ((const int32_t[]){__VA_ARGS__})

START_TEST(added_leftmost_longest)
{
	struct tok_added a[] = {
		{.content = "<un", .id = 10},
		{.content = "<unused94>", .id = 11, .special = 1},
		{.content = "used", .id = 12},
		{.content = "\xe2\x96\x81\xe2\x96\x81", .id = 13},
	};
	struct tok_added_set *set = tst_added_set(a, 4, NULL);

	check_added(set, 0, "a<unused94>b<unusedX",
		    TST_WANT({"a", 0, 1}, {"<unused94>", 1, 11}, {"b", 11, 12}, {"<un", 12, 15},
			 {"used", 15, 19}, {"X", 19, 20}),
		    IDS(-1, 11, -1, 10, 12, -1), 6);
	/* non-overlapping, left to right */
	check_added(set, 0, "\xe2\x96\x81\xe2\x96\x81\xe2\x96\x81",
		    TST_WANT({"\xe2\x96\x81\xe2\x96\x81", 0, 6}, {"\xe2\x96\x81", 6, 9}), IDS(13, -1),
		    2);
	check_added(set, 0, "nothing", TST_WANT({"nothing", 0, 7}), IDS(-1), 1);
	/* no token is normalized: the second pass changes nothing */
	check_added(set, 1, "<un", TST_WANT({"<un", 0, 3}), IDS(-1), 1);
	tok_added_free(set);
}
END_TEST

START_TEST(added_single_word_and_strip)
{
	struct tok_added a[] = {
		{.content = "ok", .id = 1, .single_word = 1},
		{.content = "[MASK]", .id = 2, .lstrip = 1, .rstrip = 1},
		{.content = "<L>", .id = 3, .lstrip = 1},
	};
	struct tok_added_set *set = tst_added_set(a, 3, NULL);

	/* inside "look" a word character precedes: passed over */
	check_added(set, 0, "ok look ok.",
		    TST_WANT({"ok", 0, 2}, {" look ", 2, 8}, {"ok", 8, 10}, {".", 10, 11}),
		    IDS(1, -1, 1, -1), 4);
	check_added(set, 0, "okay", TST_WANT({"okay", 0, 4}), IDS(-1), 1);
	/* the whitespace on both sides goes with the token */
	check_added(set, 0, "a  [MASK] \tb",
		    TST_WANT({"a", 0, 1}, {"  [MASK] \t", 1, 11}, {"b", 11, 12}), IDS(-1, 2, -1), 3);
	/* lstrip stops where the previous match ended */
	check_added(set, 0, "[MASK]  <L>x",
		    TST_WANT({"[MASK]  ", 0, 8}, {"<L>", 8, 11}, {"x", 11, 12}), IDS(2, 3, -1), 3);
	check_added(set, 0, "\xe3\x80\x80<L>", TST_WANT({"\xe3\x80\x80<L>", 0, 6}), IDS(3), 1);
	tok_added_free(set);
}
END_TEST

START_TEST(added_normalized)
{
	struct tok_normalizer low = {.kind = TOK_NORM_LOWERCASE};
	struct tok_added a[] = {
		{.content = "YES", .id = 5, .normalized = 1},
		{.content = "<S>", .id = 6, .normalized = 0, .special = 1},
	};
	struct tok_added_set *set = tst_added_set(a, 2, &low);
	struct tok_splits s;

	/* pass 1 on the raw text: only <S> */
	tst_splits_of(&s, "<S>say Yes");
	ck_assert_int_eq(tok_added_split(set, 0, &s), TOK_OK);
	tst_check_splits(&s, TST_WANT({"<S>", 0, 3}, {"say Yes", 3, 10}), 2);
	/* normalize the text splits, then pass 2 finds "yes" */
	for (size_t i = 0; i < s.n; i++)
		if (s.v[i].id < 0)
			ck_assert_int_eq(tok_normalize(&low, &s.v[i].n), TOK_OK);
	ck_assert_int_eq(tok_added_split(set, 1, &s), TOK_OK);
	tst_check_splits(&s, TST_WANT({"<S>", 0, 3}, {"say ", 3, 7}, {"yes", 7, 10}), 3);
	ck_assert_int_eq(s.v[0].id, 6);
	ck_assert_int_eq(s.v[1].id, -1);
	ck_assert_int_eq(s.v[2].id, 5);
	tok_splits_release(&s);
	tok_added_free(set);
}
END_TEST

/* Two lists of splits that are the same: texts, spans and ids. */
static void same_splits(const struct tok_splits *got, const struct tok_splits *want, int round)
{
	ck_assert_msg(got->n == want->n, "round %d: %zu splits, want %zu", round, got->n, want->n);
	for (size_t i = 0; i < got->n; i++) {
		const struct tok_nstr *g = &got->v[i].n, *w = &want->v[i].n;
		TST_EXPECT(got->v[i].id == want->v[i].id);
		TST_EXPECT(g->len == w->len);
		TST_EXPECT(g->len == 0 || memcmp(g->s, w->s, g->len) == 0);
		TST_EXPECT(g->len == 0 ||
			   memcmp(g->align, w->align, g->len * sizeof *g->align) == 0);
	}
}

/* Appends `count` random pieces (ASCII, spaces, a two- and a three-byte
 * character, a capital the lowercase normalizer changes) to buf[0, len);
 * returns the new length. */
static size_t random_pieces(char *buf, size_t len, size_t count)
{
	static const char *const pieces[] = {
		"a", "a", "b", "A", " ", "\xc3\xa9", "\xe3\x80\x80", "x",
	};

	for (size_t i = 0; i < count; i++) {
		const char *p = pieces[tst_rnd(sizeof pieces / sizeof pieces[0])];
		memcpy(buf + len, p, strlen(p));
		len += strlen(p);
	}
	return len;
}

static int is_continuation(char c)
{
	return ((unsigned char)c & 0xC0) == 0x80;
}

/* A content: random pieces, or a prefix, a suffix or an extension of an
 * earlier one (so that contents nest and overlap), or a copy of one. */
static void random_content(char *c, size_t cap, char (*earlier)[64], size_t n)
{
	size_t len;
	const char *e = n > 0 ? earlier[tst_rnd((uint32_t)n)] : NULL;
	uint32_t how = e != NULL ? tst_rnd(5) : 0;

	if (how == 0) {
		len = random_pieces(c, 0, 1 + tst_rnd(5));
	} else if (how == 4 || strlen(e) < 2) {
		len = strlen(e); /* a copy: the one added first keeps the content */
		memcpy(c, e, len);
	} else {
		size_t cut = 1 + tst_rnd((uint32_t)strlen(e) - 1);
		if (how == 3 && cut > 40)
			cut = 40; /* room for what is added */
		while (cut < strlen(e) && is_continuation(how == 2 ? e[strlen(e) - cut] : e[cut]))
			cut++; /* on a character boundary */
		const char *from = how == 2 ? e + strlen(e) - cut : e;
		memcpy(c, from, cut);
		len = how == 3 ? random_pieces(c, cut, 1 + tst_rnd(3)) : cut;
	}
	ck_assert_uint_lt(len, cap);
	c[len] = '\0';
}

/* A text: `skip` bytes no content holds, then random pieces with contents
 * dropped in among them. */
static size_t random_text(char *t, size_t skip, size_t pieces, char (*contents)[64], size_t n)
{
	size_t len = skip;

	memset(t, 'z', skip);
	for (size_t i = 0; i < pieces; i++) {
		if (tst_rnd(4) == 0) {
			const char *c = contents[tst_rnd((uint32_t)n)];
			memcpy(t + len, c, strlen(c));
			len += strlen(c);
		} else {
			len = random_pieces(t, len, 1);
		}
	}
	t[len] = '\0';
	return len;
}

/* Both passes over text: the raw one, then lowercase, then the normalized
 * one, by the automaton and by the naive twin. */
static void fast_as_naive(const struct tok_added_set *set, const struct tok_normalizer *low,
			  const char *text, int round)
{
	struct tok_splits fast, naive;

	tst_splits_of(&fast, text);
	tst_splits_of(&naive, text);
	ck_assert_int_eq(tok_added_split(set, 0, &fast), TOK_OK);
	ck_assert_int_eq(tok_added_split_ref(set, 0, &naive), TOK_OK);
	same_splits(&fast, &naive, round);
	for (size_t i = 0; i < fast.n; i++)
		if (fast.v[i].id < 0) {
			ck_assert_int_eq(tok_normalize(low, &fast.v[i].n), TOK_OK);
			ck_assert_int_eq(tok_normalize(low, &naive.v[i].n), TOK_OK);
		}
	ck_assert_int_eq(tok_added_split(set, 1, &fast), TOK_OK);
	ck_assert_int_eq(tok_added_split_ref(set, 1, &naive), TOK_OK);
	same_splits(&fast, &naive, round);
	tok_splits_release(&fast);
	tok_splits_release(&naive);
}

/* The automaton against the naive twin: random token sets of up to 10
 * contents (nested, overlapping, repeated; any flags, normalized or not)
 * on texts of up to 40 pieces; in each round one text that starts a few
 * bytes before the end of the automaton's first window (added.c's
 * WINDOW_MIN, 4096 positions), so that contents cross it; every 25th round
 * one of 3,000 pieces, which spans several windows. */
START_TEST(added_fast_matches_naive)
{
	struct tok_normalizer low = {.kind = TOK_NORM_LOWERCASE};
	enum { WINDOW = 4096 };
	int rounds = test_light() ? 100 : 1000;
	char *text = malloc(WINDOW + 3000 * 64 + 1);

	ck_assert_ptr_nonnull(text);
	for (int round = 0; round < rounds; round++) {
		char contents[10][64];
		struct tok_added a[10];
		size_t n = 1 + tst_rnd(10);
		for (size_t i = 0; i < n; i++) {
			random_content(contents[i], sizeof contents[i], contents, i);
			a[i] = (struct tok_added){.content = contents[i],
						  .id = (int32_t)(100 + i),
						  .single_word = tst_rnd(3) == 0,
						  .lstrip = tst_rnd(3) == 0,
						  .rstrip = tst_rnd(3) == 0,
						  .normalized = tst_rnd(2),
						  .special = tst_rnd(2)};
		}
		struct tok_added_set *set = tst_added_set(a, n, &low);
		for (int t = 0; t < 20; t++) {
			size_t pieces = t == 0 && round % 25 == 0 ? 3000 : tst_rnd(41);
			size_t skip = t == 1 ? WINDOW - 1 - tst_rnd(16) : 0;
			random_text(text, skip, pieces, contents, n);
			fast_as_naive(set, &low, text, round);
		}
		tok_added_free(set);
	}
	free(text);
}
END_TEST

/* A content longer than the automaton's least window, so the window is
 * the content's length: "a"x4500 "b" starting 0 to 2 bytes before the end
 * of the first window, then runs of 'a' up to its length, each ended by
 * 'b' or ' ', against that content alone, with "a" (rstrip) and with "aab"
 * (single_word) too. */
START_TEST(added_fast_matches_naive_long_token)
{
	enum { LONG = 4500 };
	struct tok_normalizer low = {.kind = TOK_NORM_LOWERCASE};
	char *lng = malloc(LONG + 2), *text = malloc(6 * (LONG + 1) + 1);
	int rounds = test_light() ? 1 : 6;

	ck_assert_ptr_nonnull(lng);
	ck_assert_ptr_nonnull(text);
	memset(lng, 'a', LONG);
	lng[LONG] = 'b';
	lng[LONG + 1] = '\0';
	struct tok_added a[] = {
		{.content = lng, .id = 1},
		{.content = "a", .id = 2, .rstrip = 1},
		{.content = "aab", .id = 3, .single_word = 1},
	};
	for (int round = 0; round < rounds; round++) {
		struct tok_added_set *set = tst_added_set(a, 1 + (size_t)round % 3, &low);
		/* the window holds LONG + 1 positions: the content starts near its end */
		size_t len = LONG + 1 - (size_t)round % 3;
		memset(text, 'x', len);
		memcpy(text + len, lng, LONG + 1);
		len += LONG + 1;
		for (int part = 0; part < 4; part++) {
			size_t run = tst_rnd(LONG + 1);
			memset(text + len, 'a', run);
			len += run;
			text[len++] = tst_rnd(3) == 0 ? ' ' : 'b';
		}
		text[len] = '\0';
		fast_as_naive(set, &low, text, round);
		tok_added_free(set);
	}
	free(lng);
	free(text);
}
END_TEST

static Suite *added_suite(void)
{
	Suite *s = suite_create("added");
	TCase *added = tcase_create("added");

	tcase_add_test(added, added_leftmost_longest);
	tcase_add_test(added, added_single_word_and_strip);
	tcase_add_test(added, added_normalized);
	tcase_add_test(added, added_fast_matches_naive);
	tcase_add_test(added, added_fast_matches_naive_long_token);
	suite_add_tcase(s, added);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, added_suite, NULL);
}
