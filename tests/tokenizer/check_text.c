/*
 * check_text.c: the text side of the tokenizer (tokenizer/stages.h:
 * normalized strings, regexes, normalizers, pre-tokenizers),
 * against the behavior of Hugging Face's `tokenizers` crate. Expected splits
 * with their original byte offsets are taken from the crate's own tests
 * where it has them (pre_tokenizers/{byte_level,split,metaspace,whitespace,
 * bert,punctuation,digits}.rs), else derived from its code.
 *
 *   normalizers   the alignments after each normalizer, as HF's: NFC of
 *                 "e\u0301" is one character with the span of 'e', NFD and
 *                 NFKC give every part the span, Hangul jamo compose; the
 *                 four forms' text against utf8proc_map on random strings;
 *                 NFC and NFKC of every pair that composes (Python's
 *                 unicodedata's table, compose_cases.h, and utf8proc's
 *                 pairs against utf8proc_map); Lowercase 'İ' -> "i̇"; Prepend,
 *                 Replace (content takes the match's last span: a run of
 *                 spaces collapsed keeps its last), Strip;
 *                 BertNormalizer on "Héllo 你好\tX"
 *   pre-tokenizers  every kind's splits (strings and original spans), Split
 *                 with all five behaviors and invert, Metaspace's prepend
 *                 schemes and split ("first" by the split's original start,
 *                 as metaspace.rs's offsets_original().0 == 0), Sequence
 *   regex         empty matches skipped, literals, a bad pattern's message,
 *                 \s and \S as Oniguruma's (U+0085 space, U+180E and
 *                 U+FEFF not; in classes, negated ones, not in escapes or
 *                 \Q...\E), a rewritten pattern's error at its own offset
 * Added tokens are check_added.c; the linear-time cases check_text_linear.c.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tests/lib/suite_main.h"
#include "tests/lib/tok_models.h"
#include "tests/lib/tok_stages.h"
#include "tokenizer/spec.h"
#include "tokenizer/stages.h"

/* ---- helpers ---------------------------------------------------------------- */

/* Pre-tokenizes text with p (compiled here) and checks the splits. */
static void check_pre(struct tok_pretokenizer *p, const char *text, const struct tst_want *w,
		      size_t n)
{
	struct tok_splits s;
	char err[256];

	ck_assert_int_eq(tok_pretokenizer_compile(p, err, sizeof err), TOK_OK);
	tst_splits_of(&s, text);
	ck_assert_int_eq(tok_pretokenize(p, &s), TOK_OK);
	tst_check_splits(&s, w, n);
	tok_splits_release(&s);
}

/* Normalizes text with spec and checks the result and each character's
 * span: spans[2 i], spans[2 i + 1] for the i-th character. */
static void check_norm(struct tok_normalizer *spec, const char *text, const char *want,
		       const size_t *spans, size_t nchars)
{
	struct tok_nstr n;
	char err[256];
	size_t c = 0;

	ck_assert_int_eq(tok_normalizer_compile(spec, err, sizeof err), TOK_OK);
	tok_nstr_init(&n);
	ck_assert_int_eq(tok_nstr_from_text(&n, text, strlen(text)), TOK_OK);
	ck_assert_int_eq(tok_normalize(spec, &n), TOK_OK);
	ck_assert_msg(n.len == strlen(want) && (n.len == 0 || memcmp(n.s, want, n.len) == 0),
		      "'%.*s', want '%s'", (int)n.len, n.len ? n.s : "", want);
	for (size_t i = 0; i < n.len; c++) {
		size_t clen = 1;
		while (i + clen < n.len && ((unsigned char)n.s[i + clen] & 0xC0) == 0x80)
			clen++;
		ck_assert_uint_lt(c, nchars);
		for (size_t j = i; j < i + clen; j++)
			ck_assert_msg(n.align[j].start == spans[2 * c] &&
					      n.align[j].end == spans[2 * c + 1],
				      "'%s' char %zu: (%zu, %zu), want (%zu, %zu)", want, c,
				      (size_t)n.align[j].start, (size_t)n.align[j].end, spans[2 * c], spans[2 * c + 1]);
		i += clen;
	}
	ck_assert_uint_eq(c, nchars);
	tok_nstr_release(&n);
}

#define SPANS(...) ((const size_t[]){__VA_ARGS__})
#define NCHARS(...) (sizeof((const size_t[]){__VA_ARGS__}) / sizeof(size_t) / 2)

/* ---- normalizers --------------------------------------------------------------- */

START_TEST(unicode_forms_keep_spans)
{
	struct tok_normalizer nfc = {.kind = TOK_NORM_NFC}, nfd = {.kind = TOK_NORM_NFD};
	struct tok_normalizer nfkc = {.kind = TOK_NORM_NFKC}, nfkd = {.kind = TOK_NORM_NFKD};

	/* a composite keeps its starter's span (HF: the rest are removed) */
	check_norm(&nfc, "xe\xcc\x81y", "x\xc3\xa9y", SPANS(0, 1, 1, 2, 4, 5), 3);
	/* text in the form keeps every span */
	check_norm(&nfd, "e\xcc\x81", "e\xcc\x81", SPANS(0, 1, 1, 3), 2);
	/* a decomposed character's parts keep its span */
	check_norm(&nfd, "\xc3\xa9!", "e\xcc\x81!", SPANS(0, 2, 0, 2, 2, 3), 3);
	check_norm(&nfkc, "\xef\xac\x81x", "fix", SPANS(0, 3, 0, 3, 3, 4), 3);
	check_norm(&nfkd, "\xe2\x91\xa0", "1", SPANS(0, 3), 1);
	/* Hangul L V T jamo compose to one syllable, spanning the L */
	check_norm(&nfc, "\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab", "\xed\x95\x9c", SPANS(0, 3), 1);
	check_norm(&nfd, "\xed\x95\x9c", "\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab",
		   SPANS(0, 3, 0, 3, 0, 3), 3);
	/* canonical order: dot below (220) moves before acute (230), and spans
	 * go by position (HF), not with the marks; NFC composes a + dot below
	 * into one character over the first two places, the acute takes the
	 * third */
	check_norm(&nfd, "a\xcc\x81\xcc\xa3", "a\xcc\xa3\xcc\x81", SPANS(0, 1, 1, 3, 3, 5), 3);
	check_norm(&nfc, "a\xcc\x81\xcc\xa3", "\xe1\xba\xa1\xcc\x81", SPANS(0, 1, 3, 5), 2);
	/* a decomposition's extra part (+1) takes the span of the place before
	 * it: U+0344 is U+0308 U+0301, both 230, behind the dot below (220) */
	check_norm(&nfd, "a\xcd\x84\xcc\xa3", "a\xcc\xa3\xcc\x88\xcc\x81",
		   SPANS(0, 1, 1, 3, 3, 5, 3, 5), 4);
	check_norm(&nfc, "", "", NULL, 0);
}
END_TEST

/* The text of spec's form (utf8proc options opts) as utf8proc_map's, the
 * naive twin that normalizes the whole text at once; every byte spans a
 * character of the text. */
static void check_as_utf8proc(const struct tok_normalizer *spec, utf8proc_option_t opts,
			      const char *text, size_t len)
{
	utf8proc_uint8_t *want = NULL;
	utf8proc_ssize_t wl =
	    utf8proc_map((const utf8proc_uint8_t *)text, (utf8proc_ssize_t)len, &want, opts);
	struct tok_nstr n;

	ck_assert_int_gt(wl, -1);
	tok_nstr_init(&n);
	ck_assert_int_eq(tok_nstr_from_text(&n, text, len), TOK_OK);
	ck_assert_int_eq(tok_normalize(spec, &n), TOK_OK);
	ck_assert_msg(n.len == (size_t)wl && memcmp(n.s, want, n.len) == 0,
		      "form %d: '%.*s' -> '%.*s', utf8proc '%s'", (int)spec->kind, (int)len, text,
		      (int)n.len, n.s, (const char *)want);
	for (size_t i = 0; i < n.len; i++)
		ck_assert(n.align[i].start < n.align[i].end && n.align[i].end <= len);
	tok_nstr_release(&n);
	free(want);
}

static const struct {
	struct tok_normalizer spec;
	utf8proc_option_t opts;
} forms[] = {
	{{.kind = TOK_NORM_NFC}, UTF8PROC_STABLE | UTF8PROC_COMPOSE},
	{{.kind = TOK_NORM_NFD}, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE},
	{{.kind = TOK_NORM_NFKC}, UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT},
	{{.kind = TOK_NORM_NFKD}, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT},
};

/* The forms' text against utf8proc_map's on seeded random strings of
 * characters that decompose, compose, reorder and conjoin: ASCII,
 * precomposed and combining Latin, marks of several classes, Hangul
 * syllables and jamo (compatibility and halfwidth ones too), Indic vowel
 * signs and length marks, compatibility characters, CJK. */
START_TEST(unicode_forms_match_utf8proc)
{
	static const int32_t pool[] = {
		'a', 'e', 'o', 'A', ' ', '1', 0xE9, 0xC5, 0x1E69, 0x1EA1, 0x301, 0x300, 0x323,
		0x327, 0x308, 0x345, 0x5B0, 0x93C, 0x94D, 0x3099, 0x309A, 0x304B, 0x30AB,
		0xFF76, 0xFF9E, 0xAC00, 0xD55C, 0x1100, 0x1161, 0x11A8, 0x3131, 0xFB01,
		0x2460, 0xBD, 0x2126, 0x212B, 0x1E9B, 0xF900, 0x4E00, 0x1F468, 0x200D,
		0x0B47, 0x0B3E, 0x0F73, 0x0344, 0xFDFA, 0x2FA1D, 0x09C7, 0x09BE, 0x09D7,
		0x314F, 0x3133, 0xFFA1, 0xFFC2, 0xFFA3};
	uint64_t seed = 0x9E3779B97F4A7C15ull;
	size_t npool = sizeof pool / sizeof pool[0];

	for (int round = 0; round < 2000; round++) {
		char text[200];
		size_t len = 0, chars = 1 + round % 24;
		for (size_t i = 0; i < chars; i++) {
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			len += (size_t)utf8proc_encode_char(pool[seed % npool],
							    (utf8proc_uint8_t *)text + len);
		}
		for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++)
			check_as_utf8proc(&forms[f].spec, forms[f].opts, text, len);
	}
}
END_TEST

/* The composing pairs of Python's unicodedata (compose_cases.h, which
 * says how it is made): b is a starter that composes with the a before it
 * (Bengali U+09C7 U+09BE is U+09CB; NFKC: U+3131 U+314F is U+AC00), so a
 * segment must not end between them. The composite keeps a's span. */
START_TEST(unicode_forms_compose_backward)
{
	static const struct {
		enum tok_norm_kind form;
		const char *a, *b, *want;
	} cases[] = {
#include "tests/tokenizer/compose_cases.h"
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct tok_normalizer spec = {.kind = cases[i].form};
		char text[16];
		snprintf(text, sizeof text, "%s%s", cases[i].a, cases[i].b);
		check_norm(&spec, text, cases[i].want, SPANS(0, strlen(cases[i].a)), 1);
	}
}
END_TEST

/* 1 when NFC makes one character, *out, of d[0, n). */
static int nfc_one(const utf8proc_int32_t *d, size_t n, int32_t *out)
{
	utf8proc_option_t nfc = UTF8PROC_STABLE | UTF8PROC_COMPOSE;
	utf8proc_int32_t b[32];

	memcpy(b, d, n * sizeof *d);
	if (utf8proc_normalize_utf32(b, (utf8proc_ssize_t)n, nfc) != 1)
		return 0;
	*out = b[0];
	return 1;
}

/* "ab" in the composing forms (NFC, NFKC) as utf8proc_map's. */
static void check_pair(int32_t a, int32_t b)
{
	char text[8];
	size_t len = (size_t)utf8proc_encode_char(a, (utf8proc_uint8_t *)text);

	len += (size_t)utf8proc_encode_char(b, (utf8proc_uint8_t *)text + len);
	for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++)
		if (forms[f].opts & UTF8PROC_COMPOSE)
			check_as_utf8proc(&forms[f].spec, forms[f].opts, text, len);
}

/* The starters that compose with the character before them, each with
 * one such character. */
struct starters {
	struct {
		int32_t b, a;
	} v[256];
	size_t n;
};

/* The a of starter b, or -1. */
static int32_t starter_partner(const struct starters *s, int32_t b)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].b == b)
			return s->v[i].a;
	return -1;
}

static void starter_add(struct starters *s, int32_t b, int32_t a)
{
	if (starter_partner(s, b) >= 0)
		return;
	ck_assert_uint_lt(s->n, sizeof s->v / sizeof s->v[0]);
	s->v[s->n].b = b;
	s->v[s->n].a = a;
	s->n++;
}

/* Every pair that composes checks the composite (the pairs are
 * utf8proc's, the oracle is utf8proc_map): for each code point whose
 * canonical decomposition d composes back to it, each cut of d into
 * a = NFC(d[0, i)) and b = NFC(d[i, k)) of one character each. A b that
 * is a starter is remembered with its a. */
static void check_every_pair(struct starters *s)
{
	for (int32_t cp = 0x80; cp <= 0x10FFFF; cp++) {
		utf8proc_int32_t d[32];
		int boundclass = 0;
		utf8proc_ssize_t k =
		    utf8proc_decompose_char(cp, d, 32, UTF8PROC_DECOMPOSE, &boundclass);
		int32_t whole, a, b;

		if (k < 2 || k > 32 || !nfc_one(d, (size_t)k, &whole) || whole != cp)
			continue;
		for (size_t i = 1; i < (size_t)k; i++) {
			if (!nfc_one(d, i, &a) || !nfc_one(d + i, (size_t)k - i, &b))
				continue;
			check_pair(a, b);
			if (utf8proc_get_property(b)->combining_class == 0)
				starter_add(s, b, a);
		}
	}
}

/* Every character whose NFKD begins with a starter of s, after that
 * starter's a (NFKC: U+314F HANGUL LETTER A is U+1161, which composes). */
static void check_every_compat_starter(const struct starters *s)
{
	for (int32_t cp = 0x80; cp <= 0x10FFFF; cp++) {
		utf8proc_int32_t d[32];
		int boundclass = 0;
		utf8proc_ssize_t k = utf8proc_decompose_char(
		    cp, d, 32, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, &boundclass);
		int32_t a = k >= 1 && k <= 32 && d[0] != cp ? starter_partner(s, d[0]) : -1;

		if (a >= 0)
			check_pair(a, cp);
	}
}

/* The segments against every composing pair of utf8proc's Unicode, which
 * proves the starters tokenizer/unicode.c lets compose backward complete
 * (a hand list missed Bengali U+09BE and U+09D7). */
START_TEST(unicode_forms_compose_every_pair)
{
	struct starters s = {.n = 0};

	check_every_pair(&s);
	ck_assert_uint_ge(s.n, 72); /* Unicode 15's */
	check_every_compat_starter(&s);
}
END_TEST

START_TEST(lowercase_and_accents)
{
	struct tok_normalizer low = {.kind = TOK_NORM_LOWERCASE};
	struct tok_normalizer acc = {.kind = TOK_NORM_STRIP_ACCENTS};

	/* 'İ' -> "i̇": two characters, both with its span */
	check_norm(&low, "\xc4\xb0" "A", "i\xcc\x87" "a", SPANS(0, 2, 0, 2, 2, 3), 3);
	/* per character, as HF: no final sigma (JavaScript's toLowerCase has it) */
	check_norm(&low, "\xce\x9f\xce\xa3", "\xce\xbf\xcf\x83", SPANS(0, 2, 2, 4), 2);
	check_norm(&acc, "e\xcc\x81x", "ex", SPANS(0, 1, 3, 4), 2);
	/* StripAccents drops spacing marks too (is_combining_mark: M*), as
	 * the Devanagari vowel sign U+093E (Mc) */
	check_norm(&acc, "\xe0\xa4\x95\xe0\xa4\xbe", "\xe0\xa4\x95", SPANS(0, 3), 1);
}
END_TEST

START_TEST(prepend_replace_strip)
{
	struct tok_normalizer pre = {.kind = TOK_NORM_PREPEND, .prepend = tst_dup("\xe2\x96\x81")};
	struct tok_normalizer rep = {.kind = TOK_NORM_REPLACE,
				     .pattern = {.text = tst_dup(" "), .is_regex = 0},
				     .content = tst_dup("\xe2\x96\x81")};
	struct tok_normalizer shrink = {.kind = TOK_NORM_REPLACE,
					.pattern = {.text = tst_dup("b+c"), .is_regex = 1},
					.content = tst_dup("X")};
	struct tok_normalizer del = {.kind = TOK_NORM_REPLACE,
				     .pattern = {.text = tst_dup("-"), .is_regex = 0},
				     .content = tst_dup("")};
	struct tok_normalizer runs = {.kind = TOK_NORM_REPLACE,
				      .pattern = {.text = tst_dup("\\s+"), .is_regex = 1},
				      .content = tst_dup(" ")};
	struct tok_normalizer strip = {.kind = TOK_NORM_STRIP, .strip_left = 1, .strip_right = 1};
	struct tok_normalizer lstrip = {.kind = TOK_NORM_STRIP, .strip_left = 1};

	/* the prepended string takes the first character's span */
	check_norm(&pre, "ab", "\xe2\x96\x81" "ab", SPANS(0, 1, 0, 1, 1, 2), 3);
	check_norm(&pre, "", "", NULL, 0);
	check_norm(&rep, "a b", "a\xe2\x96\x81" "b", SPANS(0, 1, 1, 2, 2, 3), 3);
	/* content takes the span of the match's last character */
	check_norm(&shrink, "abbcd", "aXd", SPANS(0, 1, 3, 4, 4, 5), 3);
	check_norm(&del, "a-b-", "ab", SPANS(0, 1, 2, 3), 2);
	/* a run collapsed to one space keeps the span of the run's last */
	check_norm(&runs, "ab   c", "ab c", SPANS(0, 1, 1, 2, 4, 5, 5, 6), 4);
	check_norm(&strip, " \t a b\xe3\x80\x80 ", "a b", SPANS(3, 4, 4, 5, 5, 6), 3);
	check_norm(&lstrip, "  a ", "a ", SPANS(2, 3, 3, 4), 2);
	check_norm(&strip, "   ", "", NULL, 0);
	tok_normalizer_release(&pre);
	tok_normalizer_release(&rep);
	tok_normalizer_release(&shrink);
	tok_normalizer_release(&del);
	tok_normalizer_release(&runs);
}
END_TEST

START_TEST(bert_normalizer)
{
	struct tok_normalizer bert = {.kind = TOK_NORM_BERT,
				      .clean_text = 1,
				      .handle_chinese_chars = 1,
				      .strip_accents = -1,
				      .lowercase = 1};
	struct tok_normalizer keep = bert;

	/* "Héllo 你好\tX": both spaces around an ideograph take its span, the
	 * one before it too (normalizers/bert.rs transforms with (' ', 0),
	 * (c, 1), (' ', 1): that space replaces the ideograph) */
	check_norm(&bert, "H\xc3\xa9llo \xe4\xbd\xa0\xe5\xa5\xbd\tX",
		   "hello  \xe4\xbd\xa0  \xe5\xa5\xbd  x",
		   SPANS(0, 1, 1, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 10, 7, 10, 7, 10, 10, 13, 10, 13,
			 10, 13, 13, 14, 14, 15),
		   14);
	/* controls, NUL and U+FFFD go; strip_accents 0 keeps the accent */
	keep.strip_accents = 0;
	check_norm(&keep, "A\x01\xef\xbf\xbd\xc3\xa9\r\xe2\x80\x8b", "a\xc3\xa9 ",
		   SPANS(0, 1, 5, 7, 7, 8), 3);
	keep.lowercase = 0;
	keep.strip_accents = 1;
	check_norm(&keep, "\xc3\x89" "a", "Ea", SPANS(0, 2, 2, 3), 2);
	/* BERT's strip_accents drops Mn only: the Mc vowel sign stays */
	check_norm(&keep, "\xe0\xa4\x95\xe0\xa4\xbe", "\xe0\xa4\x95\xe0\xa4\xbe",
		   SPANS(0, 3, 3, 6), 2);
}
END_TEST

START_TEST(normalizer_sequence)
{
	struct tok_normalizer items[2] = {
		{.kind = TOK_NORM_PREPEND, .prepend = tst_dup("\xe2\x96\x81")},
		{.kind = TOK_NORM_REPLACE,
		 .pattern = {.text = tst_dup(" "), .is_regex = 0},
		 .content = tst_dup("\xe2\x96\x81")},
	};
	struct tok_normalizer seq = {.kind = TOK_NORM_SEQUENCE, .items = items, .n_items = 2};

	/* Llama 2's: Prepend "▁", Replace " " -> "▁" */
	check_norm(&seq, "Hi you", "\xe2\x96\x81Hi\xe2\x96\x81you",
		   SPANS(0, 1, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6), 7);
	for (size_t i = 0; i < 2; i++)
		tok_normalizer_release(&items[i]);
}
END_TEST

/* ---- pre-tokenizers -------------------------------------------------------------- */

START_TEST(byte_level_splits)
{
	struct tok_pretokenizer bl = {.kind = TOK_PRE_BYTE_LEVEL, .use_regex = 1};

	/* byte_level.rs: pre_tokenization */
	check_pre(&bl, "Hello my friend, how is your day going?",
		  TST_WANT({"Hello", 0, 5}, {"\xc4\xa0my", 5, 8}, {"\xc4\xa0" "friend", 8, 15},
		       {",", 15, 16}, {"\xc4\xa0how", 16, 20}, {"\xc4\xa0is", 20, 23},
		       {"\xc4\xa0your", 23, 28}, {"\xc4\xa0" "day", 28, 32},
		       {"\xc4\xa0going", 32, 38}, {"?", 38, 39}),
		  10);
	/* whitespace runs: the last space joins the next word (\s+(?!\S)) */
	check_pre(&bl, "a  b\n",
		  TST_WANT({"a", 0, 1}, {"\xc4\xa0", 1, 2}, {"\xc4\xa0" "b", 2, 4}, {"\xc4\x8a", 4, 5}),
		  4);
	/* each byte of 'é' becomes a character with the span of 'é' */
	check_pre(&bl, "\xc3\xa9't", TST_WANT({"\xc3\x83\xc2\xa9", 0, 2}, {"'t", 2, 4}), 2);
	bl.add_prefix_space = 1;
	check_pre(&bl, "Hello", TST_WANT({"\xc4\xa0Hello", 0, 5}), 1);
	check_pre(&bl, " Hello", TST_WANT({"\xc4\xa0Hello", 0, 6}), 1);
	bl.use_regex = 0;
	check_pre(&bl, "a b", TST_WANT({"\xc4\xa0" "a\xc4\xa0" "b", 0, 3}), 1);
	tok_pretokenizer_release(&bl);
}
END_TEST

START_TEST(split_behaviors)
{
	/* split.rs: \w+|[^\w\s]+ inverted, on "How are you doing?" */
	static const struct {
		enum tok_split_behavior b;
		struct tst_want w[8];
		size_t n;
	} cases[] = {
		{TOK_SPLIT_REMOVED,
		 {{"How", 0, 3}, {"are", 4, 7}, {"you", 8, 11}, {"doing", 12, 17}, {"?", 17, 18}},
		 5},
		{TOK_SPLIT_ISOLATED,
		 {{"How", 0, 3}, {" ", 3, 4}, {"are", 4, 7}, {" ", 7, 8}, {"you", 8, 11},
		  {" ", 11, 12}, {"doing", 12, 17}, {"?", 17, 18}},
		 8},
		{TOK_SPLIT_MERGED_WITH_PREVIOUS,
		 {{"How ", 0, 4}, {"are ", 4, 8}, {"you ", 8, 12}, {"doing", 12, 17}, {"?", 17, 18}},
		 5},
		{TOK_SPLIT_MERGED_WITH_NEXT,
		 {{"How", 0, 3}, {" are", 3, 7}, {" you", 7, 11}, {" doing", 11, 17}, {"?", 17, 18}},
		 5},
		{TOK_SPLIT_CONTIGUOUS,
		 {{"How", 0, 3}, {" ", 3, 4}, {"are", 4, 7}, {" ", 7, 8}, {"you", 8, 11},
		  {" ", 11, 12}, {"doing?", 12, 18}},
		 7},
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct tok_pretokenizer sp = {.kind = TOK_PRE_SPLIT,
					      .pattern = {.text = tst_dup("\\w+|[^\\w\\s]+"), .is_regex = 1},
					      .behavior = cases[i].b,
					      .invert = 1};
		check_pre(&sp, "How are you doing?", cases[i].w, cases[i].n);
		tok_pretokenizer_release(&sp);
	}
}
END_TEST

START_TEST(split_literal)
{
	static const struct {
		enum tok_split_behavior b;
		struct tst_want w[4];
		size_t n;
	} cases[] = {
		{TOK_SPLIT_REMOVED, {{"a", 0, 1}, {"b", 3, 4}}, 2},
		{TOK_SPLIT_ISOLATED, {{"a", 0, 1}, {"-", 1, 2}, {"-", 2, 3}, {"b", 3, 4}}, 4},
		{TOK_SPLIT_MERGED_WITH_PREVIOUS, {{"a-", 0, 2}, {"-", 2, 3}, {"b", 3, 4}}, 3},
		{TOK_SPLIT_MERGED_WITH_NEXT, {{"a", 0, 1}, {"-", 1, 2}, {"-b", 2, 4}}, 3},
		{TOK_SPLIT_CONTIGUOUS, {{"a", 0, 1}, {"--", 1, 3}, {"b", 3, 4}}, 3},
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct tok_pretokenizer sp = {.kind = TOK_PRE_SPLIT,
					      .pattern = {.text = tst_dup("-"), .is_regex = 0},
					      .behavior = cases[i].b};
		check_pre(&sp, "a--b", cases[i].w, cases[i].n);
		tok_pretokenizer_release(&sp);
	}
}
END_TEST

START_TEST(metaspace_splits)
{
	struct tok_pretokenizer ms = {.kind = TOK_PRE_METASPACE,
				      .replacement = tst_dup("\xe2\x96\x81"),
				      .prepend_scheme = TOK_PREPEND_ALWAYS,
				      .split = 1};
	struct tok_splits s;
	char err[64];

	/* metaspace.rs: basic, multiple_spaces */
	check_pre(&ms, "Hey friend!",
		  TST_WANT({"\xe2\x96\x81Hey", 0, 3}, {"\xe2\x96\x81" "friend!", 3, 11}), 2);
	check_pre(&ms, "Hey   friend!",
		  TST_WANT({"\xe2\x96\x81Hey", 0, 3}, {"\xe2\x96\x81", 3, 4}, {"\xe2\x96\x81", 4, 5},
		       {"\xe2\x96\x81" "friend!", 5, 13}),
		  4);
	ms.split = 0;
	check_pre(&ms, "Hey friend!", TST_WANT({"\xe2\x96\x81Hey\xe2\x96\x81" "friend!", 0, 11}), 1);
	/* "first": only a split that starts at the start of the text */
	ms.prepend_scheme = TOK_PREPEND_FIRST;
	ck_assert_int_eq(tok_pretokenizer_compile(&ms, err, sizeof err), TOK_OK);
	tst_splits_of(&s, "ab<s>cd");
	struct tok_nstr whole = s.v[0].n;
	s.n = 0;
	ck_assert_int_eq(tok_splits_push_slice(&s, &whole, 0, 2, -1), TOK_OK);
	ck_assert_int_eq(tok_splits_push_slice(&s, &whole, 2, 5, 7), TOK_OK);
	ck_assert_int_eq(tok_splits_push_slice(&s, &whole, 5, 7, -1), TOK_OK);
	tok_nstr_release(&whole);
	ck_assert_int_eq(tok_pretokenize(&ms, &s), TOK_OK);
	tst_check_splits(&s, TST_WANT({"\xe2\x96\x81" "ab", 0, 2}, {"<s>", 2, 5}, {"cd", 5, 7}), 3);
	ck_assert_int_eq(s.v[1].id, 7);
	tok_splits_release(&s);
	/* "first" asks where the split starts in the original text, not
	 * whether it is the first: after WhitespaceSplit " Hallo" starts at 1 */
	struct tok_pretokenizer items[2] = {{.kind = TOK_PRE_WHITESPACE_SPLIT}, ms};
	struct tok_pretokenizer seq = {.kind = TOK_PRE_SEQUENCE, .items = items, .n_items = 2};
	check_pre(&seq, " Hallo Welt", TST_WANT({"Hallo", 1, 6}, {"Welt", 7, 11}), 2);
	check_pre(&seq, "Hallo Welt", TST_WANT({"\xe2\x96\x81Hallo", 0, 5}, {"Welt", 6, 10}), 2);
	ms.prepend_scheme = TOK_PREPEND_NEVER;
	check_pre(&ms, "a b", TST_WANT({"a\xe2\x96\x81" "b", 0, 3}), 1);
	tok_pretokenizer_release(&ms);
}
END_TEST

START_TEST(whitespace_bert_punct_digits)
{
	struct tok_pretokenizer ws = {.kind = TOK_PRE_WHITESPACE};
	struct tok_pretokenizer wss = {.kind = TOK_PRE_WHITESPACE_SPLIT};
	struct tok_pretokenizer bert = {.kind = TOK_PRE_BERT};
	struct tok_pretokenizer punct = {.kind = TOK_PRE_PUNCTUATION, .behavior = TOK_SPLIT_ISOLATED};
	struct tok_pretokenizer dig = {.kind = TOK_PRE_DIGITS, .individual_digits = 1};

	/* whitespace.rs */
	check_pre(&ws, "Hey man!", TST_WANT({"Hey", 0, 3}, {"man", 4, 7}, {"!", 7, 8}), 3);
	check_pre(&ws, "How are you doing?",
		  TST_WANT({"How", 0, 3}, {"are", 4, 7}, {"you", 8, 11}, {"doing", 12, 17},
		       {"?", 17, 18}),
		  5);
	check_pre(&ws, "\n", TST_WANT({"", 0, 0}), 0);
	/* \w is Unicode (Oniguruma): marks and letters stay in the word */
	check_pre(&ws, "he\xcc\x81llo w\xc3\xb6rld.",
		  TST_WANT({"he\xcc\x81llo", 0, 7}, {"w\xc3\xb6rld", 8, 14}, {".", 14, 15}), 3);
	check_pre(&wss, "Hey man!", TST_WANT({"Hey", 0, 3}, {"man!", 4, 8}), 2);
	check_pre(&wss, "Hey\xc2\x85man", TST_WANT({"Hey", 0, 3}, {"man", 5, 8}), 2);
	/* bert.rs */
	check_pre(&bert, "Hey friend!     How are you?!?",
		  TST_WANT({"Hey", 0, 3}, {"friend", 4, 10}, {"!", 10, 11}, {"How", 16, 19},
		       {"are", 20, 23}, {"you", 24, 27}, {"?", 27, 28}, {"!", 28, 29},
		       {"?", 29, 30}),
		  9);
	check_pre(&bert, "a$b\xe2\x80\x94", TST_WANT({"a", 0, 1}, {"$", 1, 2}, {"b", 2, 3},
						   {"\xe2\x80\x94", 3, 6}),
		  4);
	/* punctuation.rs */
	check_pre(&punct, "Hey friend!     How are you?!?",
		  TST_WANT({"Hey friend", 0, 10}, {"!", 10, 11}, {"     How are you", 11, 27},
		       {"?", 27, 28}, {"!", 28, 29}, {"?", 29, 30}),
		  6);
	punct.behavior = TOK_SPLIT_CONTIGUOUS;
	check_pre(&punct, "Hey?!?", TST_WANT({"Hey", 0, 3}, {"?!?", 3, 6}), 2);
	/* digits.rs */
	check_pre(&dig, "Hey 123 friend!",
		  TST_WANT({"Hey ", 0, 4}, {"1", 4, 5}, {"2", 5, 6}, {"3", 6, 7}, {" friend!", 7, 15}),
		  5);
	dig.individual_digits = 0;
	check_pre(&dig, "Hey 123 friend!", TST_WANT({"Hey ", 0, 4}, {"123", 4, 7}, {" friend!", 7, 15}),
		  3);
	/* char::is_numeric: '²' and Arabic-Indic digits too (JavaScript's \d: ASCII) */
	check_pre(&dig, "x\xc2\xb2\xd9\xa3", TST_WANT({"x", 0, 1}, {"\xc2\xb2\xd9\xa3", 1, 5}), 2);
}
END_TEST

START_TEST(pretokenizer_sequence)
{
	struct tok_pretokenizer items[2] = {{.kind = TOK_PRE_WHITESPACE_SPLIT},
					    {.kind = TOK_PRE_DIGITS, .individual_digits = 1}};
	struct tok_pretokenizer seq = {.kind = TOK_PRE_SEQUENCE, .items = items, .n_items = 2};

	check_pre(&seq, "Hey 12 x3",
		  TST_WANT({"Hey", 0, 3}, {"1", 4, 5}, {"2", 5, 6}, {"x", 7, 8}, {"3", 8, 9}), 5);
}
END_TEST

/* ---- regexes ------------------------------------------------------------------------ */

START_TEST(regex_matches)
{
	char err[256];
	struct tok_regex *re = tok_regex_compile("a*", 1, err, sizeof err);
	struct tok_regex *lit = tok_regex_compile("a.", 0, err, sizeof err);
	struct tok_regex *sp = tok_regex_compile("\\s", 1, err, sizeof err);
	struct tok_match *m = tok_match_new();
	size_t ms, me;

	ck_assert_ptr_nonnull(re);
	ck_assert_ptr_nonnull(lit);
	ck_assert_ptr_nonnull(sp);
	ck_assert_ptr_nonnull(m);
	/* the empty matches at 0 and 2 are skipped */
	ck_assert_int_eq(tok_regex_next(re, m, "baab", 4, 0, &ms, &me), TOK_OK);
	ck_assert_uint_eq(ms, 1);
	ck_assert_uint_eq(me, 3);
	ck_assert_int_eq(tok_regex_next(re, m, "baab", 4, 3, &ms, &me), TOK_EINVAL);
	/* a literal is literal */
	ck_assert_int_eq(tok_regex_next(lit, m, "abba.", 5, 0, &ms, &me), TOK_OK);
	ck_assert_uint_eq(ms, 3);
	/* Oniguruma's \s: U+0085 yes (as HF), U+FEFF no (JavaScript's \s has
	 * it), U+180E no (PCRE2's has it) */
	ck_assert_int_eq(tok_regex_next(sp, m, "\xc2\x85", 2, 0, &ms, &me), TOK_OK);
	ck_assert_int_eq(tok_regex_next(sp, m, "\xef\xbb\xbf", 3, 0, &ms, &me), TOK_EINVAL);
	ck_assert_int_eq(tok_regex_next(sp, m, "\xe1\xa0\x8e", 3, 0, &ms, &me), TOK_EINVAL);
	ck_assert_ptr_null(tok_regex_compile("(a", 1, err, sizeof err));
	ck_assert_msg(strstr(err, "offset 2") != NULL, "%s", err);
	/* a pattern with \s fails at its own offset, not the rewritten one's */
	ck_assert_ptr_null(tok_regex_compile("\\s+(a", 1, err, sizeof err));
	ck_assert_msg(strstr(err, "offset 5") != NULL, "%s", err);
	tok_regex_free(re);
	tok_regex_free(lit);
	tok_regex_free(sp);
	tok_match_free(m);
	tok_regex_free(NULL);
	tok_match_free(NULL);
}
END_TEST

/* A pattern that backtracks without bound, (a|aa)+$ on 60 a's and a b
 * (some 10^12 ways to fail): PCRE2's match limit stops it, and that is
 * TOK_ELIMIT, not TOK_ENOMEM; on a short text it still matches. */
START_TEST(regex_gives_up)
{
	char err[256], text[62];
	struct tok_regex *re = tok_regex_compile("(a|aa)+$", 1, err, sizeof err);
	struct tok_match *m = tok_match_new();
	size_t ms, me;

	ck_assert_msg(re != NULL, "%s", err);
	ck_assert_ptr_nonnull(m);
	memset(text, 'a', 60);
	text[60] = 'b';
	text[61] = '\0';
	ck_assert_int_eq(tok_regex_next(re, m, text, 61, 0, &ms, &me), TOK_ELIMIT);
	ck_assert_int_eq(tok_regex_next(re, m, "baa", 3, 0, &ms, &me), TOK_OK);
	tok_regex_free(re);
	tok_match_free(m);
}
END_TEST

/* pattern's first match in subject[0, n): [start, end), or none (start
 * SIZE_MAX) */
static void expect_first(const char *pattern, const char *subject, size_t n, size_t start,
			 size_t end)
{
	char err[160];
	struct tok_regex *re = tok_regex_compile(pattern, 1, err, sizeof err);
	struct tok_match *m = tok_match_new();
	size_t ms, me;

	ck_assert_msg(re != NULL, "%s: %s", pattern, err);
	ck_assert_ptr_nonnull(m);
	if (start == SIZE_MAX) {
		ck_assert_int_eq(tok_regex_next(re, m, subject, n, 0, &ms, &me), TOK_EINVAL);
	} else {
		ck_assert_int_eq(tok_regex_next(re, m, subject, n, 0, &ms, &me), TOK_OK);
		ck_assert_uint_eq(ms, start);
		ck_assert_uint_eq(me, end);
	}
	tok_match_free(m);
	tok_regex_free(re);
}

/* \s and \S as Oniguruma's, wherever a pattern writes them */
START_TEST(regex_spaces_as_oniguruma)
{
	/* GPT-2's piece for a space before other symbols: " \u180E" is one */
	expect_first(" ?[^\\s\\p{L}\\p{N}]+|\\s+", "a \xe1\xa0\x8e!", 6, 1, 6);
	/* \S, [\S] and [^\s] take U+180E; [^\S] takes U+2028 and not 'x' */
	expect_first("\\S[\\S][^\\s][^\\S]", "\xe1\xa0\x8e\xe1\xa0\x8e\xe1\xa0\x8e\xe2\x80\xa8", 12, 0,
		     12);
	expect_first("\\S[\\S][^\\s][^\\S]", "abcx", 4, SIZE_MAX, 0);
	/* an escaped backslash, a quote and a POSIX class keep their \s */
	expect_first("\\\\s\\Q\\s\\E[[:alpha:]\\s]", "\\s\\s ", 5, 0, 5);
}
END_TEST

static Suite *text_suite(void)
{
	Suite *s = suite_create("text");
	TCase *norm = tcase_create("normalizers");
	TCase *pre = tcase_create("pre-tokenizers");

	tcase_add_test(norm, unicode_forms_keep_spans);
	tcase_add_test(norm, unicode_forms_match_utf8proc);
	tcase_add_test(norm, unicode_forms_compose_backward);
	tcase_add_test(norm, unicode_forms_compose_every_pair);
	tcase_add_test(norm, lowercase_and_accents);
	tcase_add_test(norm, prepend_replace_strip);
	tcase_add_test(norm, bert_normalizer);
	tcase_add_test(norm, normalizer_sequence);
	tcase_add_test(norm, regex_matches);
	tcase_add_test(norm, regex_gives_up);
	tcase_add_test(norm, regex_spaces_as_oniguruma);
	suite_add_tcase(s, norm);
	tcase_add_test(pre, byte_level_splits);
	tcase_add_test(pre, split_behaviors);
	tcase_add_test(pre, split_literal);
	tcase_add_test(pre, metaspace_splits);
	tcase_add_test(pre, whitespace_bert_punct_digits);
	tcase_add_test(pre, pretokenizer_sequence);
	suite_add_tcase(s, pre);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, text_suite, NULL);
}
