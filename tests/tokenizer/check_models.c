/*
 * check_models.c: the token side of tokenizer/ (stages.h: models,
 * post-processors, decoders; bytelevel.h).
 *
 *   bytelevel    all 256 bytes against GPT-2's bytes_to_unicode built the
 *                way GPT-2 builds it, both directions
 *   vocab        put / set / get, duplicates, growth past many doublings
 *   BPE          Hugging Face's own cases (models/bpe/model.rs tests),
 *                priority and ties, continuing prefix, end-of-word suffix,
 *                byte fallback, unk fused or not, dropped unknowns,
 *                ignore_merges, a merge out of the vocabulary; a naive twin
 *                (rescan for the lowest rank, leftmost) on random merges and
 *                words; a 1 MiB word of one character and one of no spaces;
 *                the word cache against the model itself
 *   WordPiece    greedy longest match, unk for the whole word, max chars
 *   Unigram      Hugging Face's example, byte fallback, and a brute force
 *                over all segmentations as the naive twin
 *   post         each post-processor's tokens and offsets (HF's cases)
 *   decoders     each decoder on HF's cases (the tests of decoders/)
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/lib/light.h"
#include "tests/lib/suite_main.h"
#include "tokenizer/bytelevel.h"
#include "tokenizer/stages.h"

/* ---- helpers --------------------------------------------------------------- */

/* An assertion for hot loops: Check records every ck_assert it passes (a
 * write each), so loops of millions check with this and fail through it. */
#define EXPECT(c)                                                                       \
	do {                                                                            \
		if (!(c))                                                               \
			ck_abort_msg("%s:%d: %s", __FILE__, __LINE__, #c);             \
	} while (0)

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	ck_assert_ptr_nonnull(d);
	return d;
}

/* A model whose vocab is pieces[i] -> id i, with merges "left right". */
static struct tok_model make_model(enum tok_model_kind kind, const char *const *pieces,
				   size_t n, const char *const *merges, size_t n_merges)
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
		m.vocab[i].piece = xstrdup(pieces[i]);
		m.vocab[i].id = (int32_t)i;
	}
	m.n_vocab = n;
	for (size_t i = 0; i < n_merges; i++) {
		const char *sp = strchr(merges[i], ' ');

		ck_assert_ptr_nonnull(sp);
		m.merges[i].left = strndup(merges[i], (size_t)(sp - merges[i]));
		m.merges[i].right = xstrdup(sp + 1);
	}
	m.n_merges = n_merges;
	return m;
}

static struct tok_model_rt *build_ok(const struct tok_model *m)
{
	struct tok_model_rt *rt = NULL;
	char err[256] = "";
	enum tok_status st = tok_model_build(m, &rt, err, sizeof err);

	ck_assert_msg(st == TOK_OK, "build: %d %s", (int)st, err);
	return rt;
}

/* Tokenizes s and checks against "id:start:end ..." */
static void expect_tokens(const struct tok_model_rt *rt, const char *s, const char *want)
{
	struct tok_pieces p = { 0 };
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

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 11) % n;
}

/* ---- bytelevel --------------------------------------------------------------- */

START_TEST(test_bytelevel_table)
{
	/* GPT-2: bs = printable ranges, cs = bs; the rest get 256 + n in order */
	uint32_t cp[256];
	int printable[256] = { 0 };
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
		uint32_t got = n == 1 ? (uint8_t)out[0]
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

		EXPECT(tok_vocab_put(v, key, (size_t)n, i + 10) == TOK_OK);
	}
	for (int i = 0; i < 20000; i++) {
		int n = snprintf(key, sizeof key, "k%d", i);

		EXPECT(tok_vocab_get(v, key, (size_t)n) == i + 10);
	}
	ck_assert_int_eq(tok_vocab_get(v, "ab", 2), 9);
	tok_vocab_free(v);
	tok_vocab_free(NULL);
}
END_TEST

/* ---- BPE ------------------------------------------------------------------------- */

START_TEST(test_bpe_hf_unrelated)
{
	static const char *const pieces[] = { "u",	"n",   "r",    "e",   "l",	 "a",
					      "t",	"d",   "re",   "at",  "ed",	 "un",
					      "ated", "rel", "related", "unrelated" };
	static const char *const merges[] = { "r e",	 "a t",	     "e d",	       "u n",
					      "at ed", "re l",	     "rel ated", "un related" };
	struct tok_model m = make_model(TOK_MODEL_BPE, pieces, 16, merges, 8);
	struct tok_model_rt *rt = build_ok(&m);

	expect_tokens(rt, "unrelated", "15:0:9");
	expect_tokens(rt, "relate", "13:0:3 9:3:5 3:5:6");
	tok_model_free(rt);
	tok_model_release(&m);
}
END_TEST

START_TEST(test_bpe_priority_and_ties)
{
	/* 0 a, 1 b, 2 c, 3 bc, 4 ab, 5 aa, 6 aaaa, 7 abc */
	static const char *const pieces[] = { "a", "b", "c", "bc", "ab", "aa", "aaaa", "abc" };
	static const char *const merges[] = { "b c", "a b", "a a", "aa aa", "a bc" };
	struct tok_model m = make_model(TOK_MODEL_BPE, pieces, 8, merges, 5);
	struct tok_model_rt *rt = build_ok(&m);

	expect_tokens(rt, "abc", "7:0:3");	/* b c first (rank 0), then a bc */
	expect_tokens(rt, "ab", "4:0:2");
	expect_tokens(rt, "aaa", "5:0:2 0:2:3"); /* a tie: the leftmost pair */
	expect_tokens(rt, "aaaaa", "6:0:4 0:4:5");
	expect_tokens(rt, "aaaaaaa", "6:0:4 5:4:6 0:6:7");
	tok_model_free(rt);
	tok_model_release(&m);
}
END_TEST

START_TEST(test_bpe_prefix_suffix)
{
	static const char *const p1[] = { "a", "##b", "##c", "ab", "abc" };
	static const char *const m1[] = { "a ##b", "ab ##c" };
	static const char *const p2[] = { "a", "b</w>", "ab</w>", "b", "c</w>" };
	static const char *const m2[] = { "a b</w>" };
	struct tok_model a = make_model(TOK_MODEL_BPE, p1, 5, m1, 2);
	struct tok_model b = make_model(TOK_MODEL_BPE, p2, 5, m2, 1);
	struct tok_model_rt *ra, *rb;

	a.unk_token = xstrdup("[UNK]");
	a.continuing_subword_prefix = xstrdup("##");
	b.end_of_word_suffix = xstrdup("</w>");
	ra = build_ok(&a);
	rb = build_ok(&b);
	expect_tokens(ra, "ab", "3:0:2"); /* HF's test_bpe_with_continuing_subword_prefix */
	expect_tokens(ra, "abc", "4:0:3");
	expect_tokens(ra, "acb", "0:0:1 2:1:2 1:2:3");
	expect_tokens(rb, "ab", "2:0:2");
	expect_tokens(rb, "bb", "3:0:1 1:1:2");
	expect_tokens(rb, "ac", "0:0:1 4:1:2");
	tok_model_free(ra);
	tok_model_free(rb);
	tok_model_release(&a);
	tok_model_release(&b);
}
END_TEST

START_TEST(test_bpe_unknowns)
{
	static const char *const pieces[] = { "<unk>", "a", "b", "<0x61>", "<0xC3>", "<0xA9>" };
	struct tok_model m = make_model(TOK_MODEL_BPE, pieces, 3, NULL, 0);
	struct tok_model f = make_model(TOK_MODEL_BPE, pieces, 3, NULL, 0);
	struct tok_model bf = make_model(TOK_MODEL_BPE, pieces, 6, NULL, 0);
	struct tok_model none = make_model(TOK_MODEL_BPE, pieces + 1, 2, NULL, 0);
	struct tok_model_rt *rm, *rf, *rbf, *rnone;

	m.unk_token = xstrdup("<unk>");
	f.unk_token = xstrdup("<unk>");
	f.fuse_unk = 1;
	free(bf.vocab[1].piece); /* 'a' only through its byte */
	bf.vocab[1].piece = xstrdup("x");
	bf.unk_token = xstrdup("<unk>");
	bf.byte_fallback = 1;
	rm = build_ok(&m);
	rf = build_ok(&f);
	rbf = build_ok(&bf);
	rnone = build_ok(&none);
	/* HF's test_unk_not_fused, test_unk_get_fused */
	expect_tokens(rm, "c", "0:0:1");
	expect_tokens(rm, "cc", "0:0:1 0:1:2");
	expect_tokens(rm, "accb", "1:0:1 0:1:2 0:2:3 2:3:4");
	expect_tokens(rf, "c", "0:0:1");
	expect_tokens(rf, "cc", "0:0:2");
	expect_tokens(rf, "accb", "1:0:1 0:1:3 2:3:4");
	/* HF's test_bpe_byte_fallback, and a two-byte character */
	expect_tokens(rbf, "c", "0:0:1");
	expect_tokens(rbf, "a", "3:0:1");
	expect_tokens(rbf, "\xc3\xa9" "b", "4:0:1 5:1:2 2:2:3");
	/* no unk: dropped, and the ranges after it shift as in HF */
	expect_tokens(rnone, "axb", "0:0:1 1:1:2");
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
		".:.:", "Ġbelirtilen", ".", ":", "bel", "irtilen", "Ġ", ".:", "belirtilen", ".:.",
		"be", "l", "ir", "ti", "en", "irtil", "irti", "i", "r", "t", "b", "e", "n",
	};
	static const char *const merges[] = { ". :", "b e", "be l", "i r", "t i", "ir ti", "e n",
					      "irti l" };
	struct tok_model m = make_model(TOK_MODEL_BPE, pieces, 23, merges, 8);
	struct tok_model_rt *with, *without;

	without = build_ok(&m);
	m.ignore_merges = 1;
	with = build_ok(&m);
	expect_tokens(with, ".:.:", "0:0:4");
	expect_tokens(without, ".:.:", "7:0:2 7:2:4");
	expect_tokens(with, "Ġbelirtilen", "1:0:12");
	expect_tokens(without, "Ġbelirtilen", "6:0:2 4:2:5 15:5:10 14:10:12");
	tok_model_free(with);
	tok_model_free(without);
	tok_model_release(&m);
}
END_TEST

START_TEST(test_bpe_merge_not_in_vocab)
{
	static const char *const pieces[] = { "a", "b", "c", "ab" };
	static const char *const bad_part[] = { "a b", "a d" };
	static const char *const bad_result[] = { "a b", "b c" };
	struct tok_model m1 = make_model(TOK_MODEL_BPE, pieces, 4, bad_part, 2);
	struct tok_model m2 = make_model(TOK_MODEL_BPE, pieces, 4, bad_result, 2);
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
			const char *l = pieces[rnd((uint32_t)np)], *r = pieces[rnd((uint32_t)np)];
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
				pieces[np++] = xstrdup(cat);
		}
		m = make_model(TOK_MODEL_BPE, (const char *const *)pieces, np, mp, nm);
		rt = build_ok(&m);
		for (int t = 0; t < 50; t++) {
			char w[41];
			size_t wl = 1 + rnd(40);
			int32_t want[64];
			size_t nw;
			struct tok_pieces p = { 0 };
			size_t at = 0;

			for (size_t i = 0; i < wl; i++)
				w[i] = (char)('a' + rnd(3));
			w[wl] = '\0';
			nw = naive_bpe(pieces, np, merges, nm, w, want);
			EXPECT(tok_model_tokenize(rt, w, wl, &p) == TOK_OK);
			EXPECT(p.n == nw);
			for (size_t i = 0; i < nw; i++) {
				EXPECT(p.v[i].id == want[i]);
				EXPECT(p.v[i].start == at);
				at += strlen(pieces[want[i]]);
				EXPECT(p.v[i].end == at);
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
	struct tok_pieces p = { 0 };
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
	pieces[11] = xstrdup("b");
	m = make_model(TOK_MODEL_BPE, (const char *const *)pieces, 12, mp, 10);
	rt = build_ok(&m);
	memset(w, 'a', len);
	t0 = seconds();
	ck_assert_int_eq(tok_model_tokenize(rt, w, len, &p), TOK_OK);
	t0 = seconds() - t0;
	ck_assert_msg(t0 < time_limit(), "1 MiB of 'a' took %.2f s", t0);
	ck_assert_uint_eq(p.n, 1024);
	for (size_t i = 0; i < p.n; i++) {
		EXPECT(p.v[i].id == 10);
		EXPECT(p.v[i].start == i * 1024);
		EXPECT(p.v[i].end == (i + 1) * 1024);
	}
	/* no spaces, no repeats to speak of: letters in a pseudo-random order */
	for (size_t i = 0; i < len; i++)
		w[i] = (char)('a' + rnd(2));
	p.n = 0;
	t0 = seconds();
	ck_assert_int_eq(tok_model_tokenize(rt, w, len, &p), TOK_OK);
	t0 = seconds() - t0;
	ck_assert_msg(t0 < time_limit(), "1 MiB of no spaces took %.2f s", t0);
	ck_assert_uint_eq(p.v[0].start, 0);
	for (size_t i = 1; i < p.n; i++)
		EXPECT(p.v[i].start == p.v[i - 1].end);
	ck_assert_uint_eq(p.v[p.n - 1].end, len);
	tok_pieces_release(&p);
	tok_model_free(rt);
	tok_model_release(&m);
	for (int k = 0; k <= 11; k++)
		free(pieces[k]);
	free(w);
}
END_TEST

/* The word cache gives what the model gives: words from a pool larger than
 * the cache holds, so it grows, fills, starts over; long words pass by. */
START_TEST(test_model_cache)
{
	static const char *const pieces[] = { "a", "b", "c", "ab", "bc", "abc", "cc" };
	static const char *const merges[] = { "a b", "b c", "ab c", "c c" };
	struct tok_model m = make_model(TOK_MODEL_BPE, pieces, 7, merges, 4);
	struct tok_model_rt *rt = build_ok(&m);
	struct tok_model_cache *c = tok_model_cache_new();
	struct tok_pieces want = { 0 }, got = { 0 };

	ck_assert_ptr_nonnull(c);
	for (int t = 0; t < 200000; t++) {
		char w[80];
		uint32_t k = rnd(40000);
		size_t wl = t % 1000 == 0 ? 70 : 1 + k % 11;

		for (size_t i = 0; i < wl; i++) {
			w[i] = (char)('a' + k % 3);
			k = k / 3 + (uint32_t)i * 7;
		}
		want.n = got.n = 0;
		EXPECT(tok_model_tokenize(rt, w, wl, &want) == TOK_OK);
		EXPECT(tok_model_tokenize_cached(rt, c, w, wl, &got) == TOK_OK);
		EXPECT(got.n == want.n);
		for (size_t i = 0; i < got.n; i++) {
			EXPECT(got.v[i].id == want.v[i].id);
			EXPECT(got.v[i].start == want.v[i].start);
			EXPECT(got.v[i].end == want.v[i].end);
		}
	}
	tok_pieces_release(&want);
	tok_pieces_release(&got);
	tok_model_cache_free(c);
	tok_model_cache_free(NULL);
	tok_model_free(rt);
	tok_model_release(&m);
}
END_TEST

/* ---- WordPiece ------------------------------------------------------------------- */

START_TEST(test_wordpiece)
{
	static const char *const pieces[] = { "[UNK]", "un", "##aff", "##able", "a", "##a",
					      "\xc3\xa9", "##\xc3\xa9" };
	struct tok_model m = make_model(TOK_MODEL_WORDPIECE, pieces, 8, NULL, 0);
	struct tok_model_rt *rt;

	m.unk_token = xstrdup("[UNK]");
	m.continuing_subword_prefix = xstrdup("##");
	m.max_input_chars_per_word = 100;
	rt = build_ok(&m);
	expect_tokens(rt, "unaffable", "1:0:2 2:2:5 3:5:9");
	expect_tokens(rt, "aaa", "4:0:1 5:1:2 5:2:3");
	expect_tokens(rt, "\xc3\xa9\xc3\xa9", "6:0:2 7:2:4");
	expect_tokens(rt, "unaffablex", "0:0:10"); /* not covered: the whole word */
	expect_tokens(rt, "b", "0:0:1");
	tok_model_free(rt);
	free(m.unk_token);
	m.unk_token = NULL; /* no unknown token: HF fails, here the word is dropped */
	rt = build_ok(&m);
	expect_tokens(rt, "unaffablex", "");
	tok_model_free(rt);
	m.unk_token = xstrdup("[UNK]");
	m.max_input_chars_per_word = 3;
	rt = build_ok(&m);
	expect_tokens(rt, "aaa", "4:0:1 5:1:2 5:2:3");
	expect_tokens(rt, "aaaa", "0:0:4");
	expect_tokens(rt, "\xc3\xa9\xc3\xa9\xc3\xa9", "6:0:2 7:2:4 7:4:6"); /* chars, not bytes */
	tok_model_free(rt);
	tok_model_release(&m);
}
END_TEST

/* ---- Unigram --------------------------------------------------------------------- */

static struct tok_model unigram_model(const char *const *pieces, const double *scores, size_t n,
				      int32_t unk_id)
{
	struct tok_model m = make_model(TOK_MODEL_UNIGRAM, pieces, n, NULL, 0);

	for (size_t i = 0; i < n; i++)
		m.vocab[i].score = scores[i];
	m.unk_id = unk_id;
	return m;
}

START_TEST(test_unigram_hf)
{
	/* the example of HF's Unigram::encode */
	static const char *const pieces[] = { "<unk>", "a",  "b",   "c",   "d",
					      "cd",    "ab", "abc", "abcd" };
	static const double scores[] = { 0, 0, 0, 0, 0, 1, 2, 5, 10 };
	static const char *const bf_pieces[] = { "<unk>", "a", "<0x78>" };
	static const double bf_scores[] = { 0, -1, -1 };
	struct tok_model m = unigram_model(pieces, scores, 9, 0);
	struct tok_model bf = unigram_model(bf_pieces, bf_scores, 3, 0);
	struct tok_model_rt *rt = build_ok(&m), *rbf;
	char err[256];

	expect_tokens(rt, "abcdacdxx", "8:0:4 1:4:5 5:5:7 0:7:9");
	expect_tokens(rt, "xx", "0:0:2");
	tok_model_free(rt);
	bf.byte_fallback = 1;
	rbf = build_ok(&bf);
	/* fused unknown "xx" -> its bytes, each with the whole stretch */
	expect_tokens(rbf, "axx", "1:0:1 2:1:3 2:1:3");
	expect_tokens(rbf, "ay", "1:0:1 0:1:2");
	tok_model_free(rbf);
	bf.unk_id = -1; /* none: HF fails (MissingUnkId), here "y" is dropped */
	rbf = build_ok(&bf);
	expect_tokens(rbf, "aya", "1:0:1 1:2:3");
	expect_tokens(rbf, "ax", "1:0:1 2:1:2");
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
			size_t pl = 1 + rnd(4), dup = 0;

			for (size_t k = 0; k < pl; k++)
				store[n][k] = (char)('a' + rnd(4)); /* 'd' rarely alone */
			store[n][pl] = '\0';
			for (size_t k = 1; k < n; k++)
				dup |= strcmp(pieces[k], store[n]) == 0;
			if (dup)
				continue;
			pieces[n] = store[n];
			scores[n] = -(double)(1 + rnd(100000)) / 1000.0;
			n++;
		}
		for (size_t k = 0; k < n; k++)
			min = scores[k] < min ? scores[k] : min;
		m = unigram_model(pieces, scores, n, 0);
		rt = build_ok(&m);
		for (int t = 0; t < 40; t++) {
			char w[13];
			size_t wl = 1 + rnd(12), at = 0;
			struct tok_pieces p = { 0 };
			double got = 0.0, want;

			for (size_t i = 0; i < wl; i++)
				w[i] = (char)('a' + rnd(5));
			w[wl] = '\0';
			want = brute_best(&m, w, 0, wl, min - 10.0);
			EXPECT(tok_model_tokenize(rt, w, wl, &p) == TOK_OK);
			for (size_t i = 0; i < p.n; i++) {
				EXPECT(p.v[i].start == at);
				if (p.v[i].id == 0)
					got += (min - 10.0) * (double)(p.v[i].end - at);
				else
					got += scores[p.v[i].id];
				EXPECT(p.v[i].id == 0 || p.v[i].end - at == strlen(pieces[p.v[i].id]));
				at = p.v[i].end;
			}
			EXPECT(at == wl);
			ck_assert_msg(got > want - 1e-9 && got < want + 1e-9, "'%s': %f vs %f", w,
				      got, want);
			tok_pieces_release(&p);
		}
		tok_model_free(rt);
		tok_model_release(&m);
	}
}
END_TEST

/* ---- post-processors ---------------------------------------------------------- */

static struct tok_token tok(int32_t id, size_t start, size_t end, const char *piece)
{
	struct tok_token t = { id, start, end, piece, 0 };

	return t;
}

static void expect_draft(const struct tok_draft *d, const char *want)
{
	char got[2048] = "";
	size_t at = 0;

	for (size_t i = 0; i < d->n; i++)
		at += (size_t)snprintf(got + at, sizeof got - at, "%s%d:%s:%zu:%zu:%d", i ? " " : "",
				       (int)d->v[i].id, d->v[i].piece, d->v[i].start, d->v[i].end,
				       d->v[i].special);
	ck_assert_msg(strcmp(got, want) == 0, "got '%s', want '%s'", got, want);
}

static struct tok_draft hello_there(void)
{
	struct tok_draft d = { 0 };

	ck_assert_int_eq(tok_draft_push(&d, tok(12, 0, 5, "Hello")), TOK_OK);
	ck_assert_int_eq(tok_draft_push(&d, tok(14, 6, 11, "there")), TOK_OK);
	return d;
}

START_TEST(test_post_template_bert_roberta)
{
	struct tok_template_piece single[] = { { 0, "<bos>" }, { 1, NULL }, { 0, "<eos>" } };
	int32_t bos_ids[] = { 1 }, eos_ids[] = { 2, 3 };
	char *bos_tokens[] = { "<bos>" }, *eos_tokens[] = { "</s>", "<eot>" };
	struct tok_template_special specials[] = { { "<bos>", bos_ids, bos_tokens, 1 },
						   { "<eos>", eos_ids, eos_tokens, 2 } };
	struct tok_post tp = { 0 }, bert = { 0 }, rob = { 0 };
	struct tok_draft d;
	const char *text = "Hello there";
	char err[256];

	tp.kind = TOK_POST_TEMPLATE;
	tp.single = single;
	tp.n_single = 3;
	tp.specials = specials;
	tp.n_specials = 2;
	ck_assert_int_eq(tok_post_check(&tp, err, sizeof err), TOK_OK);
	d = hello_there();
	ck_assert_int_eq(tok_post_apply(&tp, NULL, text, 11, 1, &d), TOK_OK);
	expect_draft(&d, "1:<bos>:0:0:1 12:Hello:0:5:0 14:there:6:11:0 2:</s>:0:0:1 3:<eot>:0:0:1");
	free(d.v);
	d = hello_there();
	ck_assert_int_eq(tok_post_apply(&tp, NULL, text, 11, 0, &d), TOK_OK);
	expect_draft(&d, "12:Hello:0:5:0 14:there:6:11:0");
	free(d.v);
	single[2].special = "<nope>";
	ck_assert_int_eq(tok_post_check(&tp, err, sizeof err), TOK_ESPEC);
	ck_assert_str_eq(err, "post_processor: single[2]: special token '<nope>' is not in "
			      "special_tokens");

	bert.kind = TOK_POST_BERT;
	bert.cls = "[CLS]";
	bert.cls_id = 101;
	bert.sep = "[SEP]";
	bert.sep_id = 102;
	d = hello_there();
	ck_assert_int_eq(tok_post_apply(&bert, NULL, text, 11, 1, &d), TOK_OK);
	expect_draft(&d, "101:[CLS]:0:0:1 12:Hello:0:5:0 14:there:6:11:0 102:[SEP]:0:0:1");
	free(d.v);
	d = (struct tok_draft){ 0 };
	ck_assert_int_eq(tok_post_apply(&bert, NULL, "", 0, 1, &d), TOK_OK);
	expect_draft(&d, "101:[CLS]:0:0:1 102:[SEP]:0:0:1");
	free(d.v);

	/* HF's roberta_processing */
	rob.kind = TOK_POST_ROBERTA;
	rob.cls = "<s>";
	rob.cls_id = 0;
	rob.sep = "</s>";
	rob.sep_id = 2;
	rob.trim_offsets = 1;
	rob.add_prefix_space = 1;
	d = hello_there();
	ck_assert_int_eq(tok_post_apply(&rob, NULL, text, 11, 1, &d), TOK_OK);
	expect_draft(&d, "0:<s>:0:0:1 12:Hello:0:5:0 14:there:6:11:0 2:</s>:0:0:1");
	free(d.v);
}
END_TEST

START_TEST(test_post_byte_level_trim)
{
	/* HF's processor_trims_offsets: ByteLevel::default() (add_prefix_space) */
	static const char *const pieces[] = { "Ġ", "ĠĠĠĠHelloĠĠ", "ĠĠHello", "HelloĠĠ", "ĠĠĠĠ" };
	static const size_t offs[][2] = { { 0, 1 }, { 0, 11 }, { 11, 18 }, { 18, 25 }, { 25, 29 } };
	const char *text = "0123456789abcdefghijklmnopqrs"; /* 29 one-byte characters */
	struct tok_post bl = { 0 }, seq = { 0 }, items[2] = { { 0 } };
	struct tok_template_piece single[] = { { 0, "<s>" }, { 1, NULL } };
	int32_t ids[] = { 9 };
	char *toks[] = { "<s>" };
	struct tok_template_special sp[] = { { "<s>", ids, toks, 1 } };
	struct tok_draft d = { 0 };

	bl.kind = TOK_POST_BYTE_LEVEL;
	bl.trim_offsets = 1;
	bl.add_prefix_space = 1;
	for (size_t i = 0; i < 5; i++)
		ck_assert_int_eq(tok_draft_push(&d, tok(0, offs[i][0], offs[i][1], pieces[i])), TOK_OK);
	ck_assert_int_eq(tok_post_apply(&bl, NULL, text, 29, 1, &d), TOK_OK);
	expect_draft(&d, "0:Ġ:0:0:0 0:ĠĠĠĠHelloĠĠ:4:9:0 0:ĠĠHello:13:18:0 0:HelloĠĠ:18:23:0 "
			 "0:ĠĠĠĠ:29:29:0");
	free(d.v);

	/* the steps are characters of the text, here a 3-byte U+3000 */
	d = (struct tok_draft){ 0 };
	ck_assert_int_eq(tok_draft_push(&d, tok(5, 0, 4, "a\xe3\x80\x80")), TOK_OK);
	ck_assert_int_eq(tok_draft_push(&d, tok(6, 4, 9, "\xe3\x80\x80" "bc")), TOK_OK);
	bl.add_prefix_space = 0;
	ck_assert_int_eq(tok_post_apply(&bl, NULL, "a\xe3\x80\x80\xe3\x80\x80" "bc", 9, 0, &d),
			 TOK_OK);
	ck_assert_uint_eq(d.v[0].start, 0);
	ck_assert_uint_eq(d.v[0].end, 1);
	ck_assert_uint_eq(d.v[1].start, 7);
	ck_assert_uint_eq(d.v[1].end, 9);
	free(d.v);

	/* a Sequence: trimming, then the template */
	items[0] = bl;
	items[1].kind = TOK_POST_TEMPLATE;
	items[1].single = single;
	items[1].n_single = 2;
	items[1].specials = sp;
	items[1].n_specials = 1;
	seq.kind = TOK_POST_SEQUENCE;
	seq.items = items;
	seq.n_items = 2;
	d = (struct tok_draft){ 0 };
	ck_assert_int_eq(tok_draft_push(&d, tok(1, 0, 2, "Hi")), TOK_OK);
	ck_assert_int_eq(tok_draft_push(&d, tok(2, 2, 5, "Ġyo")), TOK_OK);
	ck_assert_int_eq(tok_post_apply(&seq, NULL, "Hi yo", 5, 1, &d), TOK_OK);
	expect_draft(&d, "9:<s>:0:0:1 1:Hi:0:2:0 2:Ġyo:3:5:0");
	free(d.v);
}
END_TEST

/* ---- decoders -------------------------------------------------------------------- */

/* Runs d over the tokens and checks the list, joined by '|'. */
static void expect_chain(const struct tok_decoder *d, const char *const *in, size_t n,
			 const char *want, int display)
{
	struct tok_strs s = { 0 };
	char got[1024] = "";
	size_t at = 0;

	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(tok_strs_push(&s, in[i], strlen(in[i])), TOK_OK);
	ck_assert_int_eq(display ? tok_display_chain(d, &s) : tok_decode_chain(d, &s), TOK_OK);
	for (size_t i = 0; i < s.n; i++) {
		ck_assert_uint_eq(strlen(s.v[i]), s.len[i]);
		at += (size_t)snprintf(got + at, sizeof got - at, "%s%s", i ? "|" : "", s.v[i]);
	}
	ck_assert_msg(strcmp(got, want) == 0, "got '%s', want '%s'", got, want);
	tok_strs_release(&s);
}

START_TEST(test_decoder_byte_level)
{
	static const char *const hello[] = { "Hello", "Ġmy",   "Ġfriend", ",",	    "Ġhow",
					     "Ġis",   "Ġyour", "Ġday",	  "Ġgoing", "?" };
	static const char *const unknown[] = { "Hello", "Ġthere", "Ġdear", "Ġfriend!", "Ġ", "[PA D]" };
	static const char *const halves[] = { "Ã", "Ġ", "âŃ", "¢" }; /* Ã alone: 0xC3 */
	struct tok_decoder d = { 0 };

	d.kind = TOK_DEC_BYTE_LEVEL;
	expect_chain(&d, hello, 10, "Hello my friend, how is your day going?", 0);
	expect_chain(&d, unknown, 6, "Hello there dear friend! [PA D]", 0);
	expect_chain(&d, halves, 4, "\xef\xbf\xbd \xe2\xad\xa2", 0);
}
END_TEST

/* HF's decode_works_on_separated_tokens: a text's byte-level characters,
 * one token each (so each multi-byte character is cut in pieces), decode
 * back to the text. */
START_TEST(test_decoder_byte_level_separated)
{
	static const char *const samples[] = {
		"A Nuskhuri abbreviation of \xe1\x83\x98\xe1\x83\x94\xe1\x83\xa1\xe1\x83\xa3 "
		"( iesu kriste ) \" Jesus Christ \"",
		"An equal number have descenders , like p or q in English : "
		"\xe1\x83\x92 , \xe1\x83\x93 , \xe1\x83\x94",
	};
	struct tok_decoder d = { 0 };

	d.kind = TOK_DEC_BYTE_LEVEL;
	for (size_t k = 0; k < 2; k++) {
		struct tok_strs s = { 0 };
		size_t len = strlen(samples[k]);

		for (size_t i = 0; i < len; i++) {
			char c[2];
			size_t n = tok_byte_to_char((uint8_t)samples[k][i], c);

			ck_assert_int_eq(tok_strs_push(&s, c, n), TOK_OK);
		}
		ck_assert_int_eq(tok_decode_chain(&d, &s), TOK_OK);
		ck_assert_uint_eq(s.n, 1);
		ck_assert_str_eq(s.v[0], samples[k]);
		tok_strs_release(&s);
	}
}
END_TEST

START_TEST(test_decoder_metaspace_wordpiece)
{
	static const char *const ms[] = { "▁Hey", "▁friend!" };
	static const char *const ms2[] = { "▁▁Hey", "x▁" };
	static const char *const wp[] = { "##uelo", "Ara", "##új", "##o", "No", "##guera" };
	static const char *const clean[] = { "I", "do", "not", "know", ".", "it", "'", "s", "ok",
					     "!" };
	struct tok_decoder d = { 0 };

	d.kind = TOK_DEC_METASPACE;
	d.replacement = "▁";
	d.prepend_scheme = TOK_PREPEND_ALWAYS;
	expect_chain(&d, ms, 2, "Hey| friend!", 0);
	expect_chain(&d, ms2, 2, "Hey|x ", 0); /* every one in the first token goes */
	expect_chain(&d, ms, 1, " Hey", 1);    /* shown alone: not first */
	d.prepend_scheme = TOK_PREPEND_FIRST;
	expect_chain(&d, ms, 2, "Hey| friend!", 0);
	d.prepend_scheme = TOK_PREPEND_NEVER;
	expect_chain(&d, ms, 2, " Hey| friend!", 0);

	memset(&d, 0, sizeof d);
	d.kind = TOK_DEC_WORDPIECE;
	d.prefix = "##";
	expect_chain(&d, wp, 6, "##uelo| Ara|új|o| No|guera", 0);
	d.cleanup = 1;
	expect_chain(&d, clean, 10, "I| do| not| know|.| it| '| s| ok|!", 0);
	{
		static const char *const fused[] = { "I do not know . it ' s , ok 're n't !" };

		expect_chain(&d, fused, 1, "I don't know. it's, ok'ren't!", 0);
	}
}
END_TEST

START_TEST(test_decoder_byte_fallback_fuse_strip)
{
	static const char *const a[] = { "Hey", "friend!" };
	static const char *const b[] = { "<0x61>" };
	static const char *const c[] = { "<0xE5>" };
	static const char *const e[] = { "<0xE5>", "<0x8f>" };
	static const char *const f[] = { "<0xE5>", "<0x8f>", "<0xab>" };
	static const char *const g[] = { "<0xE5>", "<0x8f>", "<0xab>", "a" };
	static const char *const h[] = { "<0xE5>", "<0x8f>", "a" };
	static const char *const strip1[] = { "Hey", " friend!", "HHH" };
	static const char *const fuse[] = { "Hey", " friend!" };
	struct tok_decoder d = { 0 };

	d.kind = TOK_DEC_BYTE_FALLBACK; /* HF's byte_fallback.rs test */
	expect_chain(&d, a, 2, "Hey|friend!", 0);
	expect_chain(&d, b, 1, "a", 0);
	expect_chain(&d, c, 1, "\xef\xbf\xbd", 0);
	expect_chain(&d, e, 2, "\xef\xbf\xbd|\xef\xbf\xbd", 0);
	expect_chain(&d, f, 3, "叫", 0);
	expect_chain(&d, g, 4, "叫|a", 0);
	expect_chain(&d, h, 3, "\xef\xbf\xbd|\xef\xbf\xbd|a", 0);

	d.kind = TOK_DEC_FUSE;
	expect_chain(&d, fuse, 2, "Hey friend!", 0);
	expect_chain(&d, fuse, 0, "", 0);

	d.kind = TOK_DEC_STRIP; /* HF's strip.rs test */
	d.content = "H";
	d.strip_start = 1;
	expect_chain(&d, strip1, 3, "ey| friend!|HH", 0);
	d.content = "y";
	d.strip_start = 0;
	d.strip_stop = 1;
	expect_chain(&d, strip1, 2, "He| friend!", 0);
	expect_chain(&d, strip1, 2, "Hey| friend!", 1); /* not when shown alone */
	{
		static const char *const wide[] = { "\xe3\x80\x80\xe3\x80\x80" "a" "\xe3\x80\x80" };

		d.content = "\xe3\x80\x80"; /* a character of three bytes */
		d.strip_start = 1;
		d.strip_stop = 2;
		expect_chain(&d, wide, 1, "\xe3\x80\x80" "a", 0);
	}
}
END_TEST

START_TEST(test_decoder_replace_sequence)
{
	static const char *const rep[] = { "Hello", "_Hello" };
	static const char *const llama[] = { "▁Hey", "<0xE5>", "<0x8F>", "<0xAB>", "▁friend" };
	struct tok_decoder d = { 0 }, items[4];
	char err[256];

	d.kind = TOK_DEC_REPLACE; /* HF's normalizers/replace.rs decode test */
	d.pattern.text = "_";
	d.content = " ";
	expect_chain(&d, rep, 2, "Hello| Hello", 0);
	ck_assert_int_eq(tok_decoder_compile(&d, err, sizeof err), TOK_OK);

	/* Llama 2's decoder */
	memset(items, 0, sizeof items);
	items[0].kind = TOK_DEC_REPLACE;
	items[0].pattern.text = "▁";
	items[0].content = " ";
	items[1].kind = TOK_DEC_BYTE_FALLBACK;
	items[2].kind = TOK_DEC_FUSE;
	items[3].kind = TOK_DEC_STRIP;
	items[3].content = " ";
	items[3].strip_start = 1;
	memset(&d, 0, sizeof d);
	d.kind = TOK_DEC_SEQUENCE;
	d.items = items;
	d.n_items = 4;
	expect_chain(&d, llama, 5, "Hey叫 friend", 0);
	expect_chain(&d, llama, 1, " Hey", 1);
	expect_chain(NULL, llama, 2, "▁Hey|<0xE5>", 0);
}
END_TEST

START_TEST(test_decoder_replace_regex)
{
	static const char *const in[] = { "a  b   c", "xx" };
	struct tok_decoder d = { 0 };
	char err[256] = "";

	d.kind = TOK_DEC_REPLACE;
	d.pattern.text = xstrdup(" +");
	d.pattern.is_regex = 1;
	d.content = xstrdup("_");
	ck_assert_int_eq(tok_decoder_compile(&d, err, sizeof err), TOK_OK);
	expect_chain(&d, in, 2, "a_b_c|xx", 0);
	tok_decoder_release(&d);
	d.kind = TOK_DEC_REPLACE;
	d.pattern.text = xstrdup("(");
	d.pattern.is_regex = 1;
	ck_assert_int_eq(tok_decoder_compile(&d, err, sizeof err), TOK_ESPEC);
	ck_assert_int_eq(strncmp(err, "decoder: Replace: pattern: ", 27), 0);
	tok_decoder_release(&d);
}
END_TEST

static Suite *models_suite(void)
{
	Suite *s = suite_create("models");
	TCase *tm = tcase_create("models");
	TCase *tp = tcase_create("post");
	TCase *td = tcase_create("decoders");

	tcase_set_timeout(tm, 30);
	tcase_add_test(tm, test_bytelevel_table);
	tcase_add_test(tm, test_vocab_map);
	tcase_add_test(tm, test_bpe_hf_unrelated);
	tcase_add_test(tm, test_bpe_priority_and_ties);
	tcase_add_test(tm, test_bpe_prefix_suffix);
	tcase_add_test(tm, test_bpe_unknowns);
	tcase_add_test(tm, test_bpe_ignore_merges);
	tcase_add_test(tm, test_bpe_merge_not_in_vocab);
	tcase_add_test(tm, test_bpe_naive_twin);
	tcase_add_test(tm, test_bpe_one_mib_word);
	tcase_add_test(tm, test_model_cache);
	tcase_add_test(tm, test_wordpiece);
	tcase_add_test(tm, test_unigram_hf);
	tcase_add_test(tm, test_unigram_naive_twin);
	suite_add_tcase(s, tm);
	tcase_add_test(tp, test_post_template_bert_roberta);
	tcase_add_test(tp, test_post_byte_level_trim);
	suite_add_tcase(s, tp);
	tcase_add_test(td, test_decoder_byte_level);
	tcase_add_test(td, test_decoder_byte_level_separated);
	tcase_add_test(td, test_decoder_metaspace_wordpiece);
	tcase_add_test(td, test_decoder_byte_fallback_fuse_strip);
	tcase_add_test(td, test_decoder_replace_sequence);
	tcase_add_test(td, test_decoder_replace_regex);
	suite_add_tcase(s, td);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, models_suite, NULL);
}
