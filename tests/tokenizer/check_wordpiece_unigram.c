/*
 * check_wordpiece_unigram.c: the WordPiece and Unigram models of tokenizer/
 * (stages.h: models); BPE and the byte-level table are in check_models.c.
 *
 *   WordPiece    greedy longest match, unk for the whole word, max chars
 *   Unigram      Hugging Face's example, byte fallback, and a brute force
 *                over all segmentations as the naive twin
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/suite_main.h"
#include "tests/lib/tok_models.h"
#include "tests/lib/tok_stages.h"
#include "tokenizer/stages.h"

/* ---- WordPiece ------------------------------------------------------------------- */

START_TEST(test_wordpiece)
{
	static const char *const pieces[] = {"[UNK]", "un",  "##aff",	 "##able",
					     "a",     "##a", "\xc3\xa9", "##\xc3\xa9"};
	struct tok_model m = tst_model(TOK_MODEL_WORDPIECE, pieces, 8, NULL, 0);
	struct tok_model_rt *rt;

	m.unk_token = tst_dup("[UNK]");
	m.continuing_subword_prefix = tst_dup("##");
	m.max_input_chars_per_word = 100;
	rt = tst_build_ok(&m);
	tst_expect_tokens(rt, "unaffable", "1:0:2 2:2:5 3:5:9");
	tst_expect_tokens(rt, "aaa", "4:0:1 5:1:2 5:2:3");
	tst_expect_tokens(rt, "\xc3\xa9\xc3\xa9", "6:0:2 7:2:4");
	tst_expect_tokens(rt, "unaffablex", "0:0:10"); /* not covered: the whole word */
	/* a word past the longest piece ("##able", 6 bytes) still matches it */
	tst_expect_tokens(rt, "unaffablea", "1:0:2 2:2:5 3:5:9 5:9:10");
	tst_expect_tokens(rt, "b", "0:0:1");
	tok_model_free(rt);
	free(m.unk_token);
	m.unk_token = NULL; /* no unknown token: HF fails, here the word is dropped */
	rt = tst_build_ok(&m);
	tst_expect_tokens(rt, "unaffablex", "");
	tok_model_free(rt);
	m.unk_token = tst_dup("[UNK]");
	m.max_input_chars_per_word = 3;
	rt = tst_build_ok(&m);
	tst_expect_tokens(rt, "aaa", "4:0:1 5:1:2 5:2:3");
	tst_expect_tokens(rt, "aaaa", "0:0:4");
	tst_expect_tokens(rt, "\xc3\xa9\xc3\xa9\xc3\xa9",
			  "6:0:2 7:2:4 7:4:6"); /* chars, not bytes */
	tok_model_free(rt);
	tok_model_release(&m);
}
END_TEST

/* ---- Unigram --------------------------------------------------------------------- */

static struct tok_model unigram_model(const char *const *pieces, const double *scores, size_t n,
				      int32_t unk_id)
{
	struct tok_model m = tst_model(TOK_MODEL_UNIGRAM, pieces, n, NULL, 0);

	for (size_t i = 0; i < n; i++)
		m.vocab[i].score = scores[i];
	m.unk_id = unk_id;
	return m;
}

START_TEST(test_unigram_hf)
{
	/* the example of HF's Unigram::encode */
	static const char *const pieces[] = {"<unk>", "a",  "b",   "c",	  "d",
					     "cd",    "ab", "abc", "abcd"};
	static const double scores[] = {0, 0, 0, 0, 0, 1, 2, 5, 10};
	static const char *const bf_pieces[] = {"<unk>", "a", "<0x78>"};
	static const double bf_scores[] = {0, -1, -1};
	struct tok_model m = unigram_model(pieces, scores, 9, 0);
	struct tok_model bf = unigram_model(bf_pieces, bf_scores, 3, 0);
	struct tok_model_rt *rt = tst_build_ok(&m), *rbf;
	char err[256];

	tst_expect_tokens(rt, "abcdacdxx", "8:0:4 1:4:5 5:5:7 0:7:9");
	tst_expect_tokens(rt, "xx", "0:0:2");
	tok_model_free(rt);
	bf.byte_fallback = 1;
	rbf = tst_build_ok(&bf);
	/* fused unknown "xx" -> its bytes, each with the whole stretch */
	tst_expect_tokens(rbf, "axx", "1:0:1 2:1:3 2:1:3");
	tst_expect_tokens(rbf, "ay", "1:0:1 0:1:2");
	tok_model_free(rbf);
	bf.unk_id = -1; /* none: HF fails (MissingUnkId), here "y" is dropped */
	rbf = tst_build_ok(&bf);
	tst_expect_tokens(rbf, "aya", "1:0:1 1:2:3");
	tst_expect_tokens(rbf, "ax", "1:0:1 2:1:2");
	tok_model_free(rbf);
	bf.unk_id = 7;
	ck_assert_int_eq(tok_model_build(&bf, &rbf, err, sizeof err), TOK_ESPEC);
	ck_assert_str_eq(err, "model: unk_id 7 is not in the vocabulary");
	tok_model_release(&m);
	tok_model_release(&bf);
}
END_TEST

/* The best score over all segmentations of w[at..] into pieces, or an
 * unknown character where no one-character piece is. */
static double brute_best(const struct tok_model *m, const char *w, size_t at, size_t len,
			 double unk_score)
{
	double best = -1e300;
	int single = 0;

	if (at == len)
		return 0.0;
	for (size_t i = 0; i < m->n_vocab; i++) {
		size_t pl = strlen(m->vocab[i].piece);

		if (i == 0 || pl > len - at || memcmp(w + at, m->vocab[i].piece, pl) != 0)
			continue;
		single |= pl == 1;
		double s = m->vocab[i].score + brute_best(m, w, at + pl, len, unk_score);
		if (s > best)
			best = s;
	}
	if (!single) {
		double s = unk_score + brute_best(m, w, at + 1, len, unk_score);
		if (s > best)
			best = s;
	}
	return best;
}

START_TEST(test_unigram_naive_twin)
{
	for (int round = 0; round < 30; round++) {
		const char *pieces[24];
		char store[24][8];
		double scores[24];
		double min = 0.0;
		size_t n = 1;
		struct tok_model m;
		struct tok_model_rt *rt;

		pieces[0] = "<unk>";
		scores[0] = -1.0;
		while (n < 20) {
			size_t pl = 1 + tst_rnd(4), dup = 0;

			for (size_t k = 0; k < pl; k++)
				store[n][k] = (char)('a' + tst_rnd(4)); /* 'd' rarely alone */
			store[n][pl] = '\0';
			for (size_t k = 1; k < n; k++)
				dup |= strcmp(pieces[k], store[n]) == 0;
			if (dup)
				continue;
			pieces[n] = store[n];
			scores[n] = -(double)(1 + tst_rnd(100000)) / 1000.0;
			n++;
		}
		for (size_t k = 0; k < n; k++)
			min = scores[k] < min ? scores[k] : min;
		m = unigram_model(pieces, scores, n, 0);
		rt = tst_build_ok(&m);
		for (int t = 0; t < 40; t++) {
			char w[13];
			size_t wl = 1 + tst_rnd(12), at = 0;
			struct tok_pieces p = {0};
			double got = 0.0, want;

			for (size_t i = 0; i < wl; i++)
				w[i] = (char)('a' + tst_rnd(5));
			w[wl] = '\0';
			want = brute_best(&m, w, 0, wl, min - 10.0);
			TST_EXPECT(tok_model_tokenize(rt, w, wl, &p) == TOK_OK);
			for (size_t i = 0; i < p.n; i++) {
				TST_EXPECT(p.v[i].start == at);
				if (p.v[i].id == 0)
					got += (min - 10.0) * (double)(p.v[i].end - at);
				else
					got += scores[p.v[i].id];
				TST_EXPECT(p.v[i].id == 0 ||
					   p.v[i].end - at == strlen(pieces[p.v[i].id]));
				at = p.v[i].end;
			}
			TST_EXPECT(at == wl);
			ck_assert_msg(got > want - 1e-9 && got < want + 1e-9, "'%s': %f vs %f", w,
				      got, want);
			tok_pieces_release(&p);
		}
		tok_model_free(rt);
		tok_model_release(&m);
	}
}
END_TEST

static Suite *wordpiece_unigram_suite(void)
{
	Suite *s = suite_create("wordpiece_unigram");
	TCase *tm = tcase_create("wordpiece_unigram");

	tcase_set_timeout(tm, 30);
	tcase_add_test(tm, test_wordpiece);
	tcase_add_test(tm, test_unigram_hf);
	tcase_add_test(tm, test_unigram_naive_twin);
	suite_add_tcase(s, tm);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, wordpiece_unigram_suite, NULL);
}
