/*
 * check_models.c: the models of tokenizer/ (stages.h: models; bytelevel.h).
 *
 *   bytelevel    all 256 bytes against GPT-2's bytes_to_unicode built the
 *                way GPT-2 builds it, both directions
 *   vocab        put / set / get, duplicates, growth past many doublings
 *   BPE          Hugging Face's own cases (models/bpe/model.rs tests),
 *                priority and ties, continuing prefix, end-of-word suffix,
 *                byte fallback, unk fused or not, dropped unknowns,
 *                ignore_merges, a merge out of the vocabulary, a pair
 *                listed twice (its last rank, small ids and large); a naive twin
 *                (rescan for the lowest rank, leftmost) on random merges and
 *                words; a 1 MiB word of one character and one of no spaces;
 *                the word cache against the model itself; words cut before
 *                U+2581 against the whole word merged at once, and where
 *                the cuts fall
 *
 * WordPiece and Unigram are in check_wordpiece_unigram.c, the
 * post-processors and decoders in check_post_decode.c.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/lib/light.h"
#include "tests/lib/suite_main.h"
#include "tests/lib/tok_models.h"
#include "tests/lib/tok_stages.h"
#include "tokenizer/bytelevel.h"
#include "tokenizer/stages.h"

/* ---- bytelevel --------------------------------------------------------------- */

START_TEST(test_bytelevel_table)
{
	/* GPT-2: bs = printable ranges, cs = bs; the rest get 256 + n in order */
	uint32_t cp[256];
	int printable[256] = {0};
	uint32_t next = 256;

	for (int b = '!'; b <= '~'; b++)
		printable[b] = 1;
	for (int b = 0xa1; b <= 0xac; b++)
		printable[b] = 1;
	for (int b = 0xae; b <= 0xff; b++)
		printable[b] = 1;
	for (int b = 0; b < 256; b++)
		cp[b] = printable[b] ? (uint32_t)b : 0;
	for (int b = 0; b < 256; b++)
		if (!printable[b])
			cp[b] = next++;
	for (int b = 0; b < 256; b++) {
		char out[2];
		size_t n = tok_byte_to_char((uint8_t)b, out);
		uint32_t got = n == 1
				   ? (uint8_t)out[0]
				   : ((uint32_t)(out[0] & 0x1f) << 6 | (uint32_t)(out[1] & 0x3f));

		ck_assert_uint_eq(n, cp[b] < 0x80 ? 1 : 2);
		ck_assert_uint_eq(got, cp[b]);
		ck_assert_int_eq(tok_char_to_byte(cp[b]), b);
	}
	ck_assert_int_eq(tok_char_to_byte(0x20), -1);
	ck_assert_int_eq(tok_char_to_byte(0xad), -1);
	ck_assert_int_eq(tok_char_to_byte(324), -1);
	ck_assert_int_eq(tok_char_to_byte(0x2581), -1);
	ck_assert_int_eq(tok_char_to_byte(0x120), ' ');
}
END_TEST

/* ---- vocab --------------------------------------------------------------------- */

START_TEST(test_vocab_map)
{
	struct tok_vocab *v = tok_vocab_new(2);
	char key[32];

	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(tok_vocab_put(v, "ab", 2, 7), TOK_OK);
	ck_assert_int_eq(tok_vocab_put(v, "ab", 2, 8), TOK_ESPEC);
	ck_assert_int_eq(tok_vocab_get(v, "ab", 2), 7);
	ck_assert_int_eq(tok_vocab_set(v, "ab", 2, 9), TOK_OK);
	ck_assert_int_eq(tok_vocab_get(v, "ab", 2), 9);
	ck_assert_int_eq(tok_vocab_get(v, "a", 1), -1);
	ck_assert_int_eq(tok_vocab_put(v, "", 0, 1), TOK_OK);
	ck_assert_int_eq(tok_vocab_get(v, "", 0), 1);
	for (int i = 0; i < 20000; i++) {
		int n = snprintf(key, sizeof key, "k%d", i);

		TST_EXPECT(tok_vocab_put(v, key, (size_t)n, i + 10) == TOK_OK);
	}
	for (int i = 0; i < 20000; i++) {
		int n = snprintf(key, sizeof key, "k%d", i);

		TST_EXPECT(tok_vocab_get(v, key, (size_t)n) == i + 10);
	}
	ck_assert_int_eq(tok_vocab_get(v, "ab", 2), 9);
	tok_vocab_free(v);
	tok_vocab_free(NULL);
}
END_TEST

/* ---- BPE ------------------------------------------------------------------------- */

START_TEST(test_bpe_hf_unrelated)
{
	static const char *const pieces[] = {"u",    "n",   "r",       "e",	   "l",	 "a",
					     "t",    "d",   "re",      "at",	   "ed", "un",
					     "ated", "rel", "related", "unrelated"};
	static const char *const merges[] = {"r e",   "a t",  "e d",	  "u n",
					     "at ed", "re l", "rel ated", "un related"};
	struct tok_model m = tst_model(TOK_MODEL_BPE, pieces, 16, merges, 8);
	struct tok_model_rt *rt = tst_build_ok(&m);

	tst_expect_tokens(rt, "unrelated", "15:0:9");
	tst_expect_tokens(rt, "relate", "13:0:3 9:3:5 3:5:6");
	tok_model_free(rt);
	tok_model_release(&m);
}
END_TEST

START_TEST(test_bpe_priority_and_ties)
{
	/* 0 a, 1 b, 2 c, 3 bc, 4 ab, 5 aa, 6 aaaa, 7 abc */
	static const char *const pieces[] = {"a", "b", "c", "bc", "ab", "aa", "aaaa", "abc"};
	static const char *const merges[] = {"b c", "a b", "a a", "aa aa", "a bc"};
	struct tok_model m = tst_model(TOK_MODEL_BPE, pieces, 8, merges, 5);
	struct tok_model_rt *rt = tst_build_ok(&m);

	tst_expect_tokens(rt, "abc", "7:0:3"); /* b c first (rank 0), then a bc */
	tst_expect_tokens(rt, "ab", "4:0:2");
	tst_expect_tokens(rt, "aaa", "5:0:2 0:2:3"); /* a tie: the leftmost pair */
	tst_expect_tokens(rt, "aaaaa", "6:0:4 0:4:5");
	tst_expect_tokens(rt, "aaaaaaa", "6:0:4 5:4:6 0:6:7");
	tok_model_free(rt);
	tok_model_release(&m);
}
END_TEST

START_TEST(test_bpe_prefix_suffix)
{
	static const char *const p1[] = {"a", "##b", "##c", "ab", "abc"};
	static const char *const m1[] = {"a ##b", "ab ##c"};
	static const char *const p2[] = {"a", "b</w>", "ab</w>", "b", "c</w>"};
	static const char *const m2[] = {"a b</w>"};
	struct tok_model a = tst_model(TOK_MODEL_BPE, p1, 5, m1, 2);
	struct tok_model b = tst_model(TOK_MODEL_BPE, p2, 5, m2, 1);
	struct tok_model_rt *ra, *rb;

	a.unk_token = tst_dup("[UNK]");
	a.continuing_subword_prefix = tst_dup("##");
	b.end_of_word_suffix = tst_dup("</w>");
	ra = tst_build_ok(&a);
	rb = tst_build_ok(&b);
	tst_expect_tokens(ra, "ab", "3:0:2"); /* HF's test_bpe_with_continuing_subword_prefix */
	tst_expect_tokens(ra, "abc", "4:0:3");
	tst_expect_tokens(ra, "acb", "0:0:1 2:1:2 1:2:3");
	tst_expect_tokens(rb, "ab", "2:0:2");
	tst_expect_tokens(rb, "bb", "3:0:1 1:1:2");
	tst_expect_tokens(rb, "ac", "0:0:1 4:1:2");
	tok_model_free(ra);
	tok_model_free(rb);
	tok_model_release(&a);
	tok_model_release(&b);
}
END_TEST

/* An unknown token named but not in the vocabulary: a text that needs it
 * fails (TOK_EUNK), as Hugging Face's MissingUnkToken (WordPiece) and
 * UnkTokenOutOfVocabulary (BPE); one that does not need it, or whose
 * characters byte fallback covers, is tokenized. */
START_TEST(test_unk_not_in_vocabulary)
{
	static const char *const bpe_pieces[] = {"a", "b", "<0x63>"};
	static const char *const wp_pieces[] = {"a", "##b"};
	struct tok_model bpe = tst_model(TOK_MODEL_BPE, bpe_pieces, 2, NULL, 0);
	struct tok_model bf = tst_model(TOK_MODEL_BPE, bpe_pieces, 3, NULL, 0);
	struct tok_model wp = tst_model(TOK_MODEL_WORDPIECE, wp_pieces, 2, NULL, 0);
	struct tok_model_rt *rbpe, *rbf, *rwp;
	struct tok_pieces p = { 0 };

	bpe.unk_token = tst_dup("<unk>");
	bf.unk_token = tst_dup("<unk>");
	bf.byte_fallback = 1;
	wp.unk_token = tst_dup("[UNK]");
	wp.continuing_subword_prefix = tst_dup("##");
	wp.max_input_chars_per_word = 100;
	rbpe = tst_build_ok(&bpe);
	rbf = tst_build_ok(&bf);
	rwp = tst_build_ok(&wp);
	tst_expect_tokens(rbpe, "ab", "0:0:1 1:1:2");
	ck_assert_int_eq(tok_model_tokenize(rbpe, "acb", 3, &p), TOK_EUNK);
	tst_expect_tokens(rbf, "ac", "0:0:1 2:1:2");
	tst_expect_tokens(rwp, "ab", "0:0:1 1:1:2");
	ck_assert_int_eq(tok_model_tokenize(rwp, "ac", 2, &p), TOK_EUNK);
	tok_pieces_release(&p);
	tok_model_free(rbpe);
	tok_model_free(rbf);
	tok_model_free(rwp);
	tok_model_release(&bpe);
	tok_model_release(&bf);
	tok_model_release(&wp);
}
END_TEST

START_TEST(test_bpe_unknowns)
{
	static const char *const pieces[] = {"<unk>", "a", "b", "<0x61>", "<0xC3>", "<0xA9>"};
	struct tok_model m = tst_model(TOK_MODEL_BPE, pieces, 3, NULL, 0);
	struct tok_model f = tst_model(TOK_MODEL_BPE, pieces, 3, NULL, 0);
	struct tok_model bf = tst_model(TOK_MODEL_BPE, pieces, 6, NULL, 0);
	struct tok_model none = tst_model(TOK_MODEL_BPE, pieces + 1, 2, NULL, 0);
	struct tok_model_rt *rm, *rf, *rbf, *rnone;

	m.unk_token = tst_dup("<unk>");
	f.unk_token = tst_dup("<unk>");
	f.fuse_unk = 1;
	free(bf.vocab[1].piece); /* 'a' only through its byte */
	bf.vocab[1].piece = tst_dup("x");
	bf.unk_token = tst_dup("<unk>");
	bf.byte_fallback = 1;
	rm = tst_build_ok(&m);
	rf = tst_build_ok(&f);
	rbf = tst_build_ok(&bf);
	rnone = tst_build_ok(&none);
	/* HF's test_unk_not_fused, test_unk_get_fused */
	tst_expect_tokens(rm, "c", "0:0:1");
	tst_expect_tokens(rm, "cc", "0:0:1 0:1:2");
	tst_expect_tokens(rm, "accb", "1:0:1 0:1:2 0:2:3 2:3:4");
	tst_expect_tokens(rf, "c", "0:0:1");
	tst_expect_tokens(rf, "cc", "0:0:2");
	tst_expect_tokens(rf, "accb", "1:0:1 0:1:3 2:3:4");
	/* HF's test_bpe_byte_fallback, and a two-byte character */
	tst_expect_tokens(rbf, "c", "0:0:1");
	tst_expect_tokens(rbf, "a", "3:0:1");
	tst_expect_tokens(rbf,
			  "\xc3\xa9"
			  "b",
			  "4:0:1 5:1:2 2:2:3");
	/* no unk: dropped, and the ranges after it shift as in HF */
	tst_expect_tokens(rnone, "axb", "0:0:1 1:1:2");
	tok_model_free(rm);
	tok_model_free(rf);
	tok_model_free(rbf);
	tok_model_free(rnone);
	tok_model_release(&m);
	tok_model_release(&f);
	tok_model_release(&bf);
	tok_model_release(&none);
}
END_TEST

START_TEST(test_bpe_ignore_merges)
{
	/* from HF's test_ignore_merges */
	static const char *const pieces[] = {
	    ".:.:",	  "Ġbelirtilen", ".",  ":", "bel", "irtilen", "Ġ",  ".:",
	    "belirtilen", ".:.",	 "be", "l", "ir",  "ti",      "en", "irtil",
	    "irti",	  "i",		 "r",  "t", "b",   "e",	      "n",
	};
	static const char *const merges[] = {". :", "b e",   "be l", "i r",
					     "t i", "ir ti", "e n",  "irti l"};
	struct tok_model m = tst_model(TOK_MODEL_BPE, pieces, 23, merges, 8);
	struct tok_model_rt *with, *without;

	without = tst_build_ok(&m);
	m.ignore_merges = 1;
	with = tst_build_ok(&m);
	tst_expect_tokens(with, ".:.:", "0:0:4");
	tst_expect_tokens(without, ".:.:", "7:0:2 7:2:4");
	tst_expect_tokens(with, "Ġbelirtilen", "1:0:12");
	tst_expect_tokens(without, "Ġbelirtilen", "6:0:2 4:2:5 15:5:10 14:10:12");
	tok_model_free(with);
	tok_model_free(without);
	tok_model_release(&m);
}
END_TEST

START_TEST(test_bpe_merge_not_in_vocab)
{
	static const char *const pieces[] = {"a", "b", "c", "ab"};
	static const char *const bad_part[] = {"a b", "a d"};
	static const char *const bad_result[] = {"a b", "b c"};
	struct tok_model m1 = tst_model(TOK_MODEL_BPE, pieces, 4, bad_part, 2);
	struct tok_model m2 = tst_model(TOK_MODEL_BPE, pieces, 4, bad_result, 2);
	struct tok_model_rt *rt = (struct tok_model_rt *)1;
	char err[256] = "";

	ck_assert_int_eq(tok_model_build(&m1, &rt, err, sizeof err), TOK_ESPEC);
	ck_assert_ptr_null(rt);
	ck_assert_str_eq(err, "model: merges[1]: 'd' is not in the vocabulary");
	ck_assert_int_eq(tok_model_build(&m2, &rt, err, sizeof err), TOK_ESPEC);
	ck_assert_str_eq(err, "model: merges[1]: 'bc' is not in the vocabulary");
	tok_model_release(&m1);
	tok_model_release(&m2);
}
END_TEST

/* The naive twin: rescan for the lowest-ranked pair (leftmost) each time. */
static size_t naive_bpe(char **pieces, size_t n_pieces, char (*merges)[2][64], size_t n_merges,
			const char *w, int32_t *out)
{
	char sym[64][64];
	size_t n = strlen(w);

	for (size_t i = 0; i < n; i++) {
		sym[i][0] = w[i];
		sym[i][1] = '\0';
	}
	for (;;) {
		size_t best_rank = SIZE_MAX, best_pos = 0;

		for (size_t i = 0; i + 1 < n; i++)
			for (size_t r = 0; r < n_merges && r < best_rank; r++)
				if (strcmp(sym[i], merges[r][0]) == 0 &&
				    strcmp(sym[i + 1], merges[r][1]) == 0) {
					best_rank = r;
					best_pos = i;
				}
		if (best_rank == SIZE_MAX)
			break;
		memcpy(sym[best_pos] + strlen(sym[best_pos]), sym[best_pos + 1],
		       strlen(sym[best_pos + 1]) + 1);
		memmove(sym[best_pos + 1], sym[best_pos + 2], (n - best_pos - 2) * sizeof sym[0]);
		n--;
	}
	for (size_t i = 0; i < n; i++) {
		out[i] = -1;
		for (size_t k = 0; k < n_pieces; k++)
			if (strcmp(pieces[k], sym[i]) == 0)
				out[i] = (int32_t)k;
	}
	return n;
}

/* A pair listed twice keeps its last rank (HF's HashMap): "a b" ranks after
 * "b c", so "abc" is a + bc. Twice: with ids below 256 (bpe.c's table of
 * small pairs) and past them (its hash map), 256 fillers first. */
START_TEST(test_bpe_merge_listed_twice)
{
	static const char *const merges[] = {"a b", "b c", "a b"};
	static const char *const abc[] = {"a", "b", "c", "ab", "bc"};
	static char fill[256][8];
	const char *pieces[256 + 5];

	for (size_t shift = 0; shift <= 256; shift += 256) {
		struct tok_model m;
		struct tok_model_rt *rt;
		char want[64];

		for (size_t i = 0; i < shift; i++) {
			snprintf(fill[i], sizeof fill[i], "<%zu>", i);
			pieces[i] = fill[i];
		}
		for (size_t i = 0; i < 5; i++)
			pieces[shift + i] = abc[i];
		m = tst_model(TOK_MODEL_BPE, pieces, shift + 5, merges, 3);
		rt = tst_build_ok(&m);
		snprintf(want, sizeof want, "%zu:0:1 %zu:1:3", shift, shift + 4);
		tst_expect_tokens(rt, "abc", want);
		snprintf(want, sizeof want, "%zu:0:2", shift + 3);
		tst_expect_tokens(rt, "ab", want);
		tok_model_free(rt);
		tok_model_release(&m);
	}
}
END_TEST

START_TEST(test_bpe_naive_twin)
{
	for (int round = 0; round < 40; round++) {
		char *pieces[64];
		char merges[40][2][64];
		char lines[40][130];
		const char *mp[40];
		size_t np = 3, nm = 0;
		struct tok_model m;
		struct tok_model_rt *rt;

		pieces[0] = "a";
		pieces[1] = "b";
		pieces[2] = "c";
		while (nm < 30 && np < 60) {
			const char *l = pieces[tst_rnd((uint32_t)np)],
				   *r = pieces[tst_rnd((uint32_t)np)];
			char cat[128];
			int dup = 0;

			if (strlen(l) + strlen(r) > 12)
				continue;
			snprintf(cat, sizeof cat, "%s%s", l, r);
			for (size_t k = 0; k < nm; k++)
				dup |= strcmp(merges[k][0], l) == 0 && strcmp(merges[k][1], r) == 0;
			if (dup)
				continue;
			snprintf(merges[nm][0], 64, "%s", l);
			snprintf(merges[nm][1], 64, "%s", r);
			snprintf(lines[nm], sizeof lines[nm], "%s %s", l, r);
			mp[nm] = lines[nm];
			nm++;
			dup = 0;
			for (size_t k = 0; k < np; k++)
				dup |= strcmp(pieces[k], cat) == 0;
			if (!dup)
				pieces[np++] = tst_dup(cat);
		}
		m = tst_model(TOK_MODEL_BPE, (const char *const *)pieces, np, mp, nm);
		rt = tst_build_ok(&m);
		for (int t = 0; t < 50; t++) {
			char w[41];
			size_t wl = 1 + tst_rnd(40);
			int32_t want[64];
			size_t nw;
			struct tok_pieces p = {0};
			size_t at = 0;

			for (size_t i = 0; i < wl; i++)
				w[i] = (char)('a' + tst_rnd(3));
			w[wl] = '\0';
			nw = naive_bpe(pieces, np, merges, nm, w, want);
			TST_EXPECT(tok_model_tokenize(rt, w, wl, &p) == TOK_OK);
			TST_EXPECT(p.n == nw);
			for (size_t i = 0; i < nw; i++) {
				TST_EXPECT(p.v[i].id == want[i]);
				TST_EXPECT(p.v[i].start == at);
				at += strlen(pieces[want[i]]);
				TST_EXPECT(p.v[i].end == at);
			}
			tok_pieces_release(&p);
		}
		tok_model_free(rt);
		tok_model_release(&m);
		for (size_t k = 3; k < np; k++)
			free(pieces[k]);
	}
}
END_TEST

/* The most a 1 MiB word may take: a second of this process's CPU time (a
 * busy machine stretches the wall clock, not the work), unless under
 * valgrind (light mode) or a sanitizer, where only finishing counts. */
static double time_limit(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return 1e9;
#else
	return test_light() ? 1e9 : 1.0;
#endif
}

static double seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

START_TEST(test_bpe_one_mib_word)
{
	/* a, aa, a4 .. a1024 and the merges doubling them; b */
	char *pieces[12];
	char lines[10][2100];
	const char *mp[10];
	size_t len = (size_t)1 << 20;
	char *w = malloc(len);
	struct tok_model m;
	struct tok_model_rt *rt;
	struct tok_pieces p = {0};
	double t0;

	ck_assert_ptr_nonnull(w);
	for (int k = 0; k <= 10; k++) {
		pieces[k] = malloc(((size_t)1 << k) + 1);
		memset(pieces[k], 'a', (size_t)1 << k);
		pieces[k][(size_t)1 << k] = '\0';
	}
	for (int k = 0; k < 10; k++) {
		snprintf(lines[k], sizeof lines[k], "%s %s", pieces[k], pieces[k]);
		mp[k] = lines[k];
	}
	pieces[11] = tst_dup("b");
	m = tst_model(TOK_MODEL_BPE, (const char *const *)pieces, 12, mp, 10);
	rt = tst_build_ok(&m);
	memset(w, 'a', len);
	t0 = seconds();
	ck_assert_int_eq(tok_model_tokenize(rt, w, len, &p), TOK_OK);
	t0 = seconds() - t0;
	ck_assert_msg(t0 < time_limit(), "1 MiB of 'a' took %.2f s", t0);
	ck_assert_uint_eq(p.n, 1024);
	for (size_t i = 0; i < p.n; i++) {
		TST_EXPECT(p.v[i].id == 10);
		TST_EXPECT(p.v[i].start == i * 1024);
		TST_EXPECT(p.v[i].end == (i + 1) * 1024);
	}
	/* no spaces, no repeats to speak of: letters in a pseudo-random order */
	for (size_t i = 0; i < len; i++)
		w[i] = (char)('a' + tst_rnd(2));
	p.n = 0;
	t0 = seconds();
	ck_assert_int_eq(tok_model_tokenize(rt, w, len, &p), TOK_OK);
	t0 = seconds() - t0;
	ck_assert_msg(t0 < time_limit(), "1 MiB of no spaces took %.2f s", t0);
	ck_assert_uint_eq(p.v[0].start, 0);
	for (size_t i = 1; i < p.n; i++)
		TST_EXPECT(p.v[i].start == p.v[i - 1].end);
	ck_assert_uint_eq(p.v[p.n - 1].end, len);
	tok_pieces_release(&p);
	tok_model_free(rt);
	tok_model_release(&m);
	for (int k = 0; k <= 11; k++)
		free(pieces[k]);
	free(w);
}
END_TEST

/* Tokenizes w through the cache c (NULL: none), which cuts BPE words
 * (tok_bpe_cut), and asserts the tokens are tok_model_tokenize's, the
 * whole word uncached; want and got are scratch the caller releases. */
static void same_as_uncached(const struct tok_model_rt *rt, struct tok_model_cache *c,
			     const char *w, size_t wl, struct tok_pieces *want,
			     struct tok_pieces *got)
{
	want->n = got->n = 0;
	TST_EXPECT(tok_model_tokenize(rt, w, wl, want) == TOK_OK);
	TST_EXPECT(tok_model_tokenize_cached(rt, c, w, wl, got) == TOK_OK);
	TST_EXPECT(got->n == want->n);
	for (size_t i = 0; i < got->n; i++) {
		TST_EXPECT(got->v[i].id == want->v[i].id);
		TST_EXPECT(got->v[i].start == want->v[i].start);
		TST_EXPECT(got->v[i].end == want->v[i].end);
	}
}

#define SP "\xe2\x96\x81" /* U+2581, SentencePiece's space */

/* A word cut before U+2581 (tok_bpe_cut) tokenizes as the whole word
 * merged at once, which tok_model_tokenize does (its naive twin): random
 * merges over "a", "b", ">", U+2581, some joining a character to a
 * following U+2581 (so cuts must skip those places), with an unknown "z"
 * dropped (no cuts then: a dropped character would let what precedes it
 * join the U+2581), fused into <unk> or not. */
START_TEST(test_bpe_space_cuts)
{
	static const char *const alphabet[] = {"a", "b", ">", SP, "z"};

	for (int round = 0; round < 60; round++) {
		char *pieces[64];
		char lines[40][130];
		const char *mp[40];
		size_t np = 5, nm = 0;
		struct tok_model m;
		struct tok_model_rt *rt;
		struct tok_model_cache *c = tok_model_cache_new();
		struct tok_pieces want = {0}, got = {0};

		ck_assert_ptr_nonnull(c);
		pieces[0] = "a";
		pieces[1] = "b";
		pieces[2] = ">";
		pieces[3] = SP;
		pieces[4] = "<unk>";
		while (nm < 30 && np < 60) {
			const char *l = pieces[tst_rnd((uint32_t)np)],
				   *r = pieces[tst_rnd((uint32_t)np)];
			char cat[128];
			int dup = 0;

			if (strlen(l) + strlen(r) > 12 || strcmp(l, "<unk>") == 0 ||
			    strcmp(r, "<unk>") == 0)
				continue;
			snprintf(lines[nm], sizeof lines[nm], "%s %s", l, r);
			for (size_t k = 0; k < nm; k++)
				dup |= strcmp(lines[k], lines[nm]) == 0;
			if (dup)
				continue;
			mp[nm] = lines[nm];
			nm++;
			snprintf(cat, sizeof cat, "%s%s", l, r);
			for (size_t k = 0; k < np; k++)
				dup |= strcmp(pieces[k], cat) == 0;
			if (!dup)
				pieces[np++] = tst_dup(cat);
		}
		m = tst_model(TOK_MODEL_BPE, (const char *const *)pieces, np, mp, nm);
		if (round % 3 != 0)
			m.unk_token = tst_dup("<unk>");
		m.fuse_unk = round % 2;
		rt = tst_build_ok(&m);
		for (int t = 0; t < 200; t++) {
			char w[4 * 60 + 1];
			size_t wl = 0, chars = 1 + tst_rnd(60);

			for (size_t i = 0; i < chars; i++) {
				const char *ch = alphabet[tst_rnd(t % 2 ? 4 : 5)];

				memcpy(w + wl, ch, strlen(ch));
				wl += strlen(ch);
			}
			same_as_uncached(rt, t % 4 ? c : NULL, w, wl, &want, &got);
		}
		tok_pieces_release(&want);
		tok_pieces_release(&got);
		tok_model_cache_free(c);
		tok_model_free(rt);
		tok_model_release(&m);
		for (size_t k = 5; k < np; k++)
			free(pieces[k]);
	}
}
END_TEST

static struct tok_bpe *bpe_ok(const struct tok_model *m)
{
	struct tok_bpe *b = NULL;
	char err[256] = "";

	ck_assert_msg(tok_bpe_build(m, &b, err, sizeof err) == TOK_OK, "build: %s", err);
	return b;
}

/* Where the cuts fall: before each U+2581 but one that follows U+2581 or a
 * character some merge joins to a U+2581 (">" here); nowhere without an
 * unknown token, without U+2581 in the vocabulary, or with a continuing
 * prefix. */
START_TEST(test_bpe_cut_places)
{
	static const char *const pieces[] = {"a", "b", ">", SP, "<", SP "<", ">" SP "<"};
	static const char *const merges[] = {SP " <", "> " SP "<"};
	static const char *const no_mark[] = {"a", "b"};
	static const char word[] = "a" SP "b" SP SP "a>" SP "<" SP "b";
	/* bytes:                   0  1..3 4  5..7 8..10 11 12 13..15 16 17..19 20 */
	struct tok_model m = tst_model(TOK_MODEL_BPE, pieces, 7, merges, 2);
	struct tok_bpe *b;
	size_t len = sizeof word - 1, at = 0, cuts[8], n = 0;

	m.unk_token = tst_dup("<");
	b = bpe_ok(&m);

	while (at < len) {
		at = tok_bpe_cut(b, word, len, at);
		cuts[n++] = at;
	}
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(cuts[0], 1); /* a | ▁b */
	ck_assert_uint_eq(cuts[1], 5); /* ▁b | ▁▁a>▁< : not between ▁ and ▁, nor after > */
	ck_assert_uint_eq(cuts[2], 17); /* | ▁b */
	ck_assert_uint_eq(cuts[3], len);
	tok_bpe_free(b);
	tok_model_release(&m);

	m = tst_model(TOK_MODEL_BPE, pieces, 7, merges, 2);
	b = bpe_ok(&m); /* no unknown token */
	ck_assert_uint_eq(tok_bpe_cut(b, word, len, 0), len);
	tok_bpe_free(b);
	tok_model_release(&m);

	m = tst_model(TOK_MODEL_BPE, no_mark, 2, NULL, 0);
	m.unk_token = tst_dup("a");
	b = bpe_ok(&m);
	ck_assert_uint_eq(tok_bpe_cut(b, word, len, 0), len);
	tok_bpe_free(b);
	tok_model_release(&m);

	m = tst_model(TOK_MODEL_BPE, pieces, 7, NULL, 0);
	m.unk_token = tst_dup("<");
	m.continuing_subword_prefix = tst_dup("##");
	b = bpe_ok(&m);
	ck_assert_uint_eq(tok_bpe_cut(b, word, len, 0), len);
	tok_bpe_free(b);
	tok_model_release(&m);
}
END_TEST

/* The word cache gives what the model gives: words from a pool larger than
 * the cache holds, so it grows, fills, starts over; long words pass by. */
START_TEST(test_model_cache)
{
	static const char *const pieces[] = {"a", "b", "c", "ab", "bc", "abc", "cc"};
	static const char *const merges[] = {"a b", "b c", "ab c", "c c"};
	struct tok_model m = tst_model(TOK_MODEL_BPE, pieces, 7, merges, 4);
	struct tok_model_rt *rt = tst_build_ok(&m);
	struct tok_model_cache *c = tok_model_cache_new();
	struct tok_pieces want = {0}, got = {0};

	ck_assert_ptr_nonnull(c);
	for (int t = 0; t < 200000; t++) {
		char w[80];
		uint32_t k = tst_rnd(40000);
		size_t wl = t % 1000 == 0 ? 70 : 1 + k % 11;

		for (size_t i = 0; i < wl; i++) {
			w[i] = (char)('a' + k % 3);
			k = k / 3 + (uint32_t)i * 7;
		}
		same_as_uncached(rt, c, w, wl, &want, &got);
	}
	tok_pieces_release(&want);
	tok_pieces_release(&got);
	tok_model_cache_free(c);
	tok_model_cache_free(NULL);
	tok_model_free(rt);
	tok_model_release(&m);
}
END_TEST

static Suite *models_suite(void)
{
	Suite *s = suite_create("models");
	TCase *tm = tcase_create("models");

	tcase_set_timeout(tm, 30);
	tcase_add_test(tm, test_bytelevel_table);
	tcase_add_test(tm, test_vocab_map);
	tcase_add_test(tm, test_bpe_hf_unrelated);
	tcase_add_test(tm, test_unk_not_in_vocabulary);
	tcase_add_test(tm, test_bpe_priority_and_ties);
	tcase_add_test(tm, test_bpe_prefix_suffix);
	tcase_add_test(tm, test_bpe_unknowns);
	tcase_add_test(tm, test_bpe_ignore_merges);
	tcase_add_test(tm, test_bpe_merge_not_in_vocab);
	tcase_add_test(tm, test_bpe_merge_listed_twice);
	tcase_add_test(tm, test_bpe_naive_twin);
	tcase_add_test(tm, test_bpe_one_mib_word);
	tcase_add_test(tm, test_model_cache);
	tcase_add_test(tm, test_bpe_space_cuts);
	tcase_add_test(tm, test_bpe_cut_places);
	suite_add_tcase(s, tm);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, models_suite, NULL);
}
