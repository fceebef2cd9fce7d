/*
 * check_text_linear.c: the tokenizer's text stages stay linear in the text
 * (tokenizer/stages.h): 1 MiB of one character, 1 MiB without spaces,
 * 100,000 emoji ZWJ sequences, runs of combining marks, 1 MiB of '<' against
 * 6415 added tokens, 1 MiB of 'a' against an added token of "a"x5000 "b"
 * (its work counted), every other kind at its worst. Results are asserted;
 * the test case's timeout bounds the time. 64 KiB and 5,000 emoji in light
 * mode (tests/lib/light.h). The stages' behavior is check_text.c's.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/light.h"
#include "tests/lib/suite_main.h"
#include "tests/lib/tok_stages.h"
#include "tokenizer/spec.h"
#include "tokenizer/stages.h"

/* ---- linear time ----------------------------------------------------------------------- */

/* A megabyte, or 64 KiB in light mode (tests/lib/light.h: under valgrind);
 * and the emoji count likewise. */
#define MIB (test_light() ? (size_t)1 << 16 : (size_t)1 << 20)
#define EMOJI (test_light() ? (size_t)5000 : (size_t)100000)

static char *repeat(const char *unit, size_t times, size_t *len)
{
	size_t ul = strlen(unit);
	char *s = malloc(ul * times + 1);

	ck_assert_ptr_nonnull(s);
	for (size_t i = 0; i < times; i++)
		memcpy(s + i * ul, unit, ul);
	s[ul * times] = '\0';
	*len = ul * times;
	return s;
}

/* Runs BERT's normalizer and pre-tokenizer, NFC, and GPT-2's ByteLevel on
 * text; returns the ByteLevel split count and the BERT one in *bert_n. */
static size_t run_pipelines(const char *text, size_t len, size_t *bert_n)
{
	struct tok_normalizer bn = {.kind = TOK_NORM_BERT, 1, 1, -1, 1};
	struct tok_normalizer nfc = {.kind = TOK_NORM_NFC};
	struct tok_pretokenizer bp = {.kind = TOK_PRE_BERT};
	struct tok_pretokenizer bl = {.kind = TOK_PRE_BYTE_LEVEL, .use_regex = 1};
	struct tok_splits s = {0};
	struct tok_nstr n;
	char err[64];
	size_t count;

	ck_assert_int_eq(tok_pretokenizer_compile(&bl, err, sizeof err), TOK_OK);
	tok_nstr_init(&n);
	ck_assert_int_eq(tok_nstr_from_text(&n, text, len), TOK_OK);
	ck_assert_int_eq(tok_normalize(&bn, &n), TOK_OK);
	ck_assert_int_eq(tok_splits_push(&s, &n, -1), TOK_OK);
	ck_assert_int_eq(tok_pretokenize(&bp, &s), TOK_OK);
	*bert_n = s.n;
	tok_splits_release(&s);
	ck_assert_int_eq(tok_nstr_from_text(&n, text, len), TOK_OK);
	ck_assert_int_eq(tok_normalize(&nfc, &n), TOK_OK);
	ck_assert_int_eq(tok_splits_push(&s, &n, -1), TOK_OK);
	ck_assert_int_eq(tok_pretokenize(&bl, &s), TOK_OK);
	count = s.n;
	tok_splits_release(&s);
	tok_pretokenizer_release(&bl);
	return count;
}

START_TEST(linear_one_char)
{
	size_t len, bert_n;
	char *a = repeat("a", MIB, &len);
	char *sp = repeat(" ", MIB, &len);

	ck_assert_uint_eq(run_pipelines(a, len, &bert_n), 1);
	ck_assert_uint_eq(bert_n, 1);
	ck_assert_uint_eq(run_pipelines(sp, len, &bert_n), 1);
	ck_assert_uint_eq(bert_n, 0);
	free(a);
	free(sp);
}
END_TEST

START_TEST(linear_no_spaces)
{
	size_t len, bert_n;
	char *w = repeat("ab1,", MIB / 4, &len);

	/* ByteLevel: "ab", "1", "," each time; BERT: "ab1", "," */
	ck_assert_uint_eq(run_pipelines(w, len, &bert_n), 3 * (MIB / 4));
	ck_assert_uint_eq(bert_n, 2 * (MIB / 4));
	free(w);
}
END_TEST

START_TEST(linear_emoji_zwj)
{
	size_t len, bert_n;
	/* man ZWJ woman ZWJ girl: 18 bytes, one ByteLevel split each
	 * (\p{L}, \p{N} and \s match none of it: " ?[^\s\p{L}\p{N}]+"),
	 * and the last space alone */
	char *e = repeat("\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7 ",
			 EMOJI, &len);

	ck_assert_uint_eq(run_pipelines(e, len, &bert_n), EMOJI + 1);
	/* BERT: ZWJ (Cf) removed by clean_text, the three emoji one word
	 * (they are no punctuation) */
	ck_assert_uint_eq(bert_n, EMOJI);
	free(e);
}
END_TEST

START_TEST(linear_combining_marks)
{
	struct tok_normalizer nfc = {.kind = TOK_NORM_NFC};
	struct tok_nstr n;
	size_t len;
	char *marks = repeat("\xcc\x81", MIB / 2, &len);

	tok_nstr_init(&n);
	ck_assert_int_eq(tok_nstr_from_text(&n, marks, len), TOK_OK);
	ck_assert_int_eq(tok_normalize(&nfc, &n), TOK_OK);
	ck_assert_uint_eq(n.len, len);
	tok_nstr_release(&n);
	free(marks);
}
END_TEST

START_TEST(linear_added_many_tokens)
{
	enum { NT = 6415 };
	struct tok_added *a = calloc(NT, sizeof *a);
	char (*names)[24] = calloc(NT, sizeof *names);
	struct tok_added_set *set;
	struct tok_splits s;
	size_t len;
	char *lt, *text;

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(names);
	for (size_t i = 0; i < NT; i++) {
		snprintf(names[i], sizeof names[i], "<unused%zu>", i);
		a[i] = (struct tok_added){.content = names[i], .id = (int32_t)(1000 + i), .special = 1};
	}
	set = tst_added_set(a, NT, NULL);
	lt = repeat("<", MIB, &len);
	tst_splits_of(&s, lt);
	ck_assert_int_eq(tok_added_split(set, 0, &s), TOK_OK);
	ck_assert_uint_eq(s.n, 1);
	tok_splits_release(&s);
	text = repeat("x<unused94>", MIB / 11, &len);
	tst_splits_of(&s, text);
	ck_assert_int_eq(tok_added_split(set, 0, &s), TOK_OK);
	ck_assert_uint_eq(s.n, 2 * (MIB / 11));
	ck_assert_int_eq(s.v[1].id, 1094);
	tok_splits_release(&s);
	tok_added_free(set);
	free(lt);
	free(text);
	free(a);
	free(names);
}
END_TEST

/* A hostile tokenizer's added token, "a"x5000 "b", on a megabyte of 'a':
 * the trie walk from every 'a' went 5000 bytes deep each time. The
 * automaton's edges tried are counted (tok_added_split_steps) and must
 * stay within added.c's bound, 6 * text + 2 * longest token, with no
 * match and with "a" added, which matches at every byte. */
START_TEST(linear_added_long_token)
{
	enum { LONG = 5000 };
	struct tok_added a[2] = {{.id = 1}, {.content = "a", .id = 2}};
	char *lng = malloc(LONG + 2), *text;
	struct tok_splits s;
	size_t len;

	ck_assert_ptr_nonnull(lng);
	memset(lng, 'a', LONG);
	memcpy(lng + LONG, "b", 2);
	a[0].content = lng;
	text = repeat("a", MIB, &len);
	for (size_t n = 1; n <= 2; n++) {
		struct tok_added_set *set = tst_added_set(a, n, NULL);
		uint64_t steps = 0;
		tst_splits_of(&s, text);
		ck_assert_int_eq(tok_added_split_steps(set, 0, &s, &steps), TOK_OK);
		ck_assert_uint_eq(s.n, n == 1 ? 1 : len);
		ck_assert_int_eq(s.v[s.n - 1].id, n == 1 ? -1 : 2);
		ck_assert_msg(steps <= 6 * (uint64_t)len + 2 * (LONG + 1),
			      "%zu tokens: %llu steps for %zu bytes", n,
			      (unsigned long long)steps, len);
		tok_splits_release(&s);
		tok_added_free(set);
	}
	free(lng);
	free(text);
}
END_TEST

/* Each other kind on a megabyte that makes the most splits or the longest
 * runs it can: one split count each, as their rules give. */
START_TEST(linear_other_kinds)
{
	struct tok_pretokenizer ms = {.kind = TOK_PRE_METASPACE,
				      .replacement = tst_dup("\xe2\x96\x81"),
				      .prepend_scheme = TOK_PREPEND_ALWAYS,
				      .split = 1};
	struct tok_pretokenizer ws = {.kind = TOK_PRE_WHITESPACE};
	struct tok_pretokenizer punct = {.kind = TOK_PRE_PUNCTUATION, .behavior = TOK_SPLIT_ISOLATED};
	struct tok_pretokenizer dig = {.kind = TOK_PRE_DIGITS};
	struct tok_normalizer strip = {.kind = TOK_NORM_STRIP, .strip_left = 1, .strip_right = 1};
	struct tok_added mask = {.content = "[MASK]", .id = 9, .lstrip = 1, .rstrip = 1};
	struct tok_added_set *set = tst_added_set(&mask, 1, NULL);
	struct tok_splits s;
	struct tok_nstr n;
	size_t len;
	char *sp = repeat(" ", MIB, &len), *a = repeat("a", MIB, &len);
	char *bang = repeat("!", MIB, &len), *one = repeat("1", MIB, &len);
	char *masked = repeat(" ", MIB + 6, &len);
	char err[64];

	memcpy(masked + MIB / 2, "[MASK]", 6);
	ck_assert_int_eq(tok_pretokenizer_compile(&ms, err, sizeof err), TOK_OK);
	const struct {
		const struct tok_pretokenizer *p;
		const char *text;
		size_t want;
	} runs[] = {
		{&ms, sp, MIB}, /* "▁" each; none prepended, as it starts with one */
		{&ws, a, 1},
		{&punct, bang, MIB},
		{&dig, one, 1},
	};
	for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
		struct tok_nstr t;
		tok_nstr_init(&t);
		memset(&s, 0, sizeof s);
		ck_assert_int_eq(tok_nstr_from_text(&t, runs[i].text, MIB), TOK_OK);
		ck_assert_int_eq(tok_splits_push(&s, &t, -1), TOK_OK);
		ck_assert_int_eq(tok_pretokenize(runs[i].p, &s), TOK_OK);
		ck_assert_msg(s.n == runs[i].want, "run %zu: %zu splits", i, s.n);
		tok_splits_release(&s);
	}
	tok_nstr_init(&n);
	ck_assert_int_eq(tok_nstr_from_text(&n, sp, MIB), TOK_OK);
	ck_assert_int_eq(tok_normalize(&strip, &n), TOK_OK);
	ck_assert_uint_eq(n.len, 0);
	tok_nstr_release(&n);
	/* the whitespace on both sides of the one token goes with it */
	tst_splits_of(&s, masked);
	ck_assert_int_eq(tok_added_split(set, 0, &s), TOK_OK);
	ck_assert_uint_eq(s.n, 1);
	ck_assert_int_eq(s.v[0].id, 9);
	ck_assert_uint_eq(s.v[0].n.len, MIB + 6);
	tok_splits_release(&s);
	tok_added_free(set);
	tok_pretokenizer_release(&ms);
	free(sp);
	free(a);
	free(bang);
	free(one);
	free(masked);
}
END_TEST

/* A Replace chosen by the file lengthens the text by its content at each
 * match, and a Sequence of them compounds: 'a' -> 'aa' forty times makes one
 * byte 2^40 (a few bytes of tokenizer.json, and --max-text-bytes bounds
 * nothing). The normalizer stops at TOK_NORM_GROWTH times its input plus
 * TOK_NORM_SLACK, with TOK_ETOOLONG; the worst that Hugging Face's own
 * normalizers do, NFKC on U+FDFA (3 bytes to 33) then Metaspace's
 * Replace(' ', U+2581), stays below it. */
START_TEST(linear_replace_growth)
{
	struct tok_normalizer *dbl = calloc(40, sizeof *dbl);
	struct tok_normalizer seq = {.kind = TOK_NORM_SEQUENCE, .items = dbl, .n_items = 40};
	struct tok_normalizer fat = {.kind = TOK_NORM_REPLACE,
				     .pattern = {.text = tst_dup("l"), .is_regex = 0}};
	struct tok_normalizer *sp = calloc(2, sizeof *sp);
	struct tok_normalizer meta = {.kind = TOK_NORM_SEQUENCE, .items = sp, .n_items = 2};
	struct tok_normalizer pre = {.kind = TOK_NORM_PREPEND};
	struct tok_nstr n;
	size_t len, alen;
	char *ls = repeat("l", 300, &len), *arabic = repeat("\xef\xb7\xba", 4096, &alen);
	char err[256];

	ck_assert_ptr_nonnull(dbl);
	ck_assert_ptr_nonnull(sp);
	for (size_t i = 0; i < 40; i++)
		dbl[i] = (struct tok_normalizer){.kind = TOK_NORM_REPLACE,
						 .pattern = {.text = tst_dup("a"), .is_regex = 0},
						 .content = tst_dup("aa")};
	fat.content = repeat("l", 100000, &len);
	pre.prepend = repeat("x", 1000, &len);
	sp[0] = (struct tok_normalizer){.kind = TOK_NORM_NFKC};
	sp[1] = (struct tok_normalizer){.kind = TOK_NORM_REPLACE,
					.pattern = {.text = tst_dup(" "), .is_regex = 0},
					.content = tst_dup("\xe2\x96\x81")};
	ck_assert_int_eq(tok_normalizer_compile(&seq, err, sizeof err), TOK_OK);
	ck_assert_int_eq(tok_normalizer_compile(&fat, err, sizeof err), TOK_OK);
	ck_assert_int_eq(tok_normalizer_compile(&meta, err, sizeof err), TOK_OK);
	tok_nstr_init(&n);
	ck_assert_int_eq(tok_nstr_from_text(&n, "a", 1), TOK_OK);
	ck_assert_int_eq(tok_normalize(&seq, &n), TOK_ETOOLONG);
	ck_assert_int_eq(tok_nstr_from_text(&n, ls, 300), TOK_OK);
	ck_assert_int_eq(tok_normalize(&fat, &n), TOK_ETOOLONG);
	ck_assert_int_eq(tok_nstr_from_text(&n, "a", 1), TOK_OK);
	ck_assert_int_eq(tok_normalize(&pre, &n), TOK_ETOOLONG);
	/* five doublings of 8 bytes stay below 32 times */
	seq.n_items = 5;
	ck_assert_int_eq(tok_nstr_from_text(&n, "aaaaaaaa", 8), TOK_OK);
	ck_assert_int_eq(tok_normalize(&seq, &n), TOK_OK);
	ck_assert_uint_eq(n.len, 256);
	seq.n_items = 40;
	/* U+FDFA: 15 Arabic letters (2 bytes) and 3 spaces, each space made U+2581 */
	ck_assert_int_eq(tok_nstr_from_text(&n, arabic, alen), TOK_OK);
	ck_assert_int_eq(tok_normalize(&meta, &n), TOK_OK);
	ck_assert_uint_eq(n.len, alen / 3 * 39);
	tok_nstr_release(&n);
	tok_normalizer_release(&seq);
	tok_normalizer_release(&fat);
	tok_normalizer_release(&meta);
	tok_normalizer_release(&pre);
	free(ls);
	free(arabic);
}
END_TEST

static Suite *text_linear_suite(void)
{
	Suite *s = suite_create("text_linear");
	TCase *lin = tcase_create("linear");

	tcase_set_timeout(lin, 30);
	tcase_add_test(lin, linear_one_char);
	tcase_add_test(lin, linear_no_spaces);
	tcase_add_test(lin, linear_emoji_zwj);
	tcase_add_test(lin, linear_combining_marks);
	tcase_add_test(lin, linear_added_many_tokens);
	tcase_add_test(lin, linear_added_long_token);
	tcase_add_test(lin, linear_other_kinds);
	tcase_add_test(lin, linear_replace_growth);
	suite_add_tcase(s, lin);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, text_linear_suite, NULL);
}
