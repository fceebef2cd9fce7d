/*
 * check_post_decode.c: the way out of tokenizer/ (stages.h: post-processors,
 * decoders), each on Hugging Face's own cases (the tests of its processors/
 * and decoders/ sources).
 *
 *   post         each post-processor's tokens and offsets: template, Bert,
 *                Roberta (trim_offsets), ByteLevel's trimming, Sequence
 *   decoders     ByteLevel, Metaspace, WordPiece, ByteFallback, Fuse, Strip,
 *                Replace (string and regex), Sequence, and display mode
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/suite_main.h"
#include "tokenizer/bytelevel.h"
#include "tokenizer/stages.h"

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	ck_assert_ptr_nonnull(d);
	return d;
}

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

/* A Sequence of Replaces of "a" by "aa" (literal and regex alike): 7 of
 * them (128 bytes) pass, 20 (a MiB; 40 would be 2^40 bytes) stop with
 * TOK_ETOOLONG once past 32 times the pieces plus 256 bytes, in both the
 * decoding and the display chains. */
START_TEST(test_decoder_replace_growth_bounded)
{
	static const char *const one[] = { "a" };
	struct tok_decoder items[20], d = { 0 };
	char want[129], err[256];

	for (int regex = 0; regex <= 1; regex++) {
		memset(items, 0, sizeof items);
		for (size_t i = 0; i < 20; i++) {
			items[i].kind = TOK_DEC_REPLACE;
			items[i].pattern.text = "a";
			items[i].pattern.is_regex = regex;
			items[i].content = "aa";
			if (regex)
				ck_assert_int_eq(tok_decoder_compile(&items[i], err, sizeof err),
						 TOK_OK);
		}
		d.kind = TOK_DEC_SEQUENCE;
		d.items = items;
		d.n_items = 7;
		memset(want, 'a', 128);
		want[128] = '\0';
		expect_chain(&d, one, 1, want, 0);
		expect_chain(&d, one, 1, want, 1);
		d.n_items = 20;
		for (int display = 0; display <= 1; display++) {
			struct tok_strs s = { 0 };

			ck_assert_int_eq(tok_strs_push(&s, "a", 1), TOK_OK);
			ck_assert_int_eq(display ? tok_display_chain(&d, &s) : tok_decode_chain(&d, &s),
					 TOK_ETOOLONG);
			tok_strs_release(&s);
		}
		for (size_t i = 0; regex && i < 20; i++)
			tok_regex_free(items[i].pattern.re);
	}
}
END_TEST

static Suite *post_decode_suite(void)
{
	Suite *s = suite_create("post_decode");
	TCase *tp = tcase_create("post");
	TCase *td = tcase_create("decoders");

	tcase_add_test(tp, test_post_template_bert_roberta);
	tcase_add_test(tp, test_post_byte_level_trim);
	suite_add_tcase(s, tp);
	tcase_add_test(td, test_decoder_byte_level);
	tcase_add_test(td, test_decoder_byte_level_separated);
	tcase_add_test(td, test_decoder_metaspace_wordpiece);
	tcase_add_test(td, test_decoder_byte_fallback_fuse_strip);
	tcase_add_test(td, test_decoder_replace_sequence);
	tcase_add_test(td, test_decoder_replace_regex);
	tcase_add_test(td, test_decoder_replace_growth_bounded);
	suite_add_tcase(s, td);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, post_decode_suite, NULL);
}
