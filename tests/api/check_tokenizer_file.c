/*
 * check_tokenizer_file.c: tokenizer.json and GPT-2's vocab.json + merges.txt
 * read into a tok_spec (api/tokenizer_file.h), without building: every part
 * of the pipeline from a small JSON string, with its fields and defaults;
 * a table of files that must be refused, each with its whole message (the
 * file, the JSON pointer, what is wrong); the GPT-2 pair, small and real.
 *
 * Ownership: every test releases the specs it reads.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/tokenizer_file.h"
#include "tokenizer/tokenizer.h"

#include "tests/lib/case_files.h"
#include "tests/lib/memcap.h"
#include "tests/lib/suite_main.h"

#define GPT2_DIR "tests/data/tokenizers/gpt2/"

/* A small BPE model: pieces a, b, ab, c (ids 0-3), one merge. */
#define BPE_MODEL                                                                                  \
	"\"model\": {\"type\": \"BPE\", \"dropout\": null, \"vocab\": {\"ab\": 2, \"a\": 0, "     \
	"\"b\": 1, \"c\": 3}, \"merges\": [\"a b\"]}"

static void read_ok(struct tok_spec *s, const char *json)
{
	char err[512] = "";

	ck_assert_msg(api_tokenizer_spec_json(s, json, strlen(json), "t.json", err, sizeof err) == 0,
		      "refused: %s\n%s", err, json);
}

/* A document: BPE_MODEL plus `rest` (",\"normalizer\": ..." or ""). */
static void read_with(struct tok_spec *s, const char *rest)
{
	char json[8192];

	snprintf(json, sizeof json, "{%s%s}", BPE_MODEL, rest);
	read_ok(s, json);
}

/* ---- models ---------------------------------------------------------------- */

START_TEST(test_bpe_minimal)
{
	struct tok_spec s;

	read_with(&s, "");
	ck_assert_int_eq(s.model.kind, TOK_MODEL_BPE);
	ck_assert_uint_eq(s.model.n_vocab, 4);
	/* sorted by id, whatever the object's order */
	ck_assert_str_eq(s.model.vocab[0].piece, "a");
	ck_assert_str_eq(s.model.vocab[2].piece, "ab");
	ck_assert_int_eq(s.model.vocab[3].id, 3);
	ck_assert_uint_eq(s.model.n_merges, 1);
	ck_assert_str_eq(s.model.merges[0].left, "a");
	ck_assert_str_eq(s.model.merges[0].right, "b");
	ck_assert_ptr_null(s.model.unk_token);
	ck_assert_ptr_null(s.model.continuing_subword_prefix);
	ck_assert_int_eq(s.model.byte_fallback + s.model.fuse_unk + s.model.ignore_merges, 0);
	ck_assert_ptr_null(s.normalizer);
	ck_assert_ptr_null(s.pretokenizer);
	ck_assert_ptr_null(s.post);
	ck_assert_ptr_null(s.decoder);
	ck_assert_uint_eq(s.n_added, 0);
	tok_spec_release(&s);
}
END_TEST

START_TEST(test_bpe_fields)
{
	static const char json[] =
	    "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null,\n"
	    " \"model\": {\"type\": \"BPE\", \"vocab\": {\"<unk>\": 0, \"a\": 1, \"b\": 2, "
	    "\"a\\u0020b\": 3, \"\\ud83d\\ude00\": 4, \"x/y~\": 5},\n"
	    "  \"merges\": [[\"a\", \"b\"], [\"\\ud83d\\ude00\", \"a\"]], \"unk_token\": \"<unk>\",\n"
	    "  \"continuing_subword_prefix\": \"##\", \"end_of_word_suffix\": \"</w>\",\n"
	    "  \"fuse_unk\": true, \"byte_fallback\": true, \"ignore_merges\": true}}";
	struct tok_spec s;

	read_ok(&s, json);
	ck_assert_uint_eq(s.model.n_vocab, 6);
	ck_assert_str_eq(s.model.vocab[3].piece, "a b"); /* escapes decoded */
	ck_assert_str_eq(s.model.vocab[4].piece, "\xf0\x9f\x98\x80");
	ck_assert_str_eq(s.model.vocab[5].piece, "x/y~");
	ck_assert_uint_eq(s.model.n_merges, 2);
	ck_assert_str_eq(s.model.merges[1].left, "\xf0\x9f\x98\x80");
	ck_assert_str_eq(s.model.merges[1].right, "a");
	ck_assert_str_eq(s.model.unk_token, "<unk>");
	ck_assert_str_eq(s.model.continuing_subword_prefix, "##");
	ck_assert_str_eq(s.model.end_of_word_suffix, "</w>");
	ck_assert_int_eq(s.model.fuse_unk, 1);
	ck_assert_int_eq(s.model.byte_fallback, 1);
	ck_assert_int_eq(s.model.ignore_merges, 1);
	tok_spec_release(&s);
}
END_TEST

START_TEST(test_wordpiece)
{
	static const char defaults[] =
	    "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {\"[UNK]\": 0, \"un\": 1, \"##a\": 2}}}";
	static const char given[] =
	    "{\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"<u>\", "
	    "\"continuing_subword_prefix\": \"++\", \"max_input_chars_per_word\": 7, "
	    "\"vocab\": {\"<u>\": 0}}}";
	struct tok_spec s;

	read_ok(&s, defaults);
	ck_assert_int_eq(s.model.kind, TOK_MODEL_WORDPIECE);
	ck_assert_str_eq(s.model.unk_token, "[UNK]");
	ck_assert_str_eq(s.model.continuing_subword_prefix, "##");
	ck_assert_uint_eq(s.model.max_input_chars_per_word, 100);
	ck_assert_uint_eq(s.model.n_vocab, 3);
	tok_spec_release(&s);
	read_ok(&s, given);
	ck_assert_str_eq(s.model.unk_token, "<u>");
	ck_assert_str_eq(s.model.continuing_subword_prefix, "++");
	ck_assert_uint_eq(s.model.max_input_chars_per_word, 7);
	tok_spec_release(&s);
}
END_TEST

START_TEST(test_unigram)
{
	static const char json[] =
	    "{\"model\": {\"type\": \"Unigram\", \"unk_id\": 0, \"byte_fallback\": true, "
	    "\"vocab\": [[\"<unk>\", 0.0], [\"\\u2581the\", -2.5], [\"a\", -3]]}}";
	static const char no_unk[] =
	    "{\"model\": {\"type\": \"Unigram\", \"unk_id\": null, \"vocab\": [[\"a\", -1]]}}";
	struct tok_spec s;

	read_ok(&s, json);
	ck_assert_int_eq(s.model.kind, TOK_MODEL_UNIGRAM);
	ck_assert_uint_eq(s.model.n_vocab, 3);
	ck_assert_str_eq(s.model.vocab[1].piece, "\xe2\x96\x81the");
	ck_assert_int_eq(s.model.vocab[1].id, 1);
	ck_assert_double_eq(s.model.vocab[1].score, -2.5);
	ck_assert_double_eq(s.model.vocab[2].score, -3.0);
	ck_assert_int_eq(s.model.unk_id, 0);
	ck_assert_int_eq(s.model.byte_fallback, 1);
	tok_spec_release(&s);
	read_ok(&s, no_unk);
	ck_assert_int_eq(s.model.unk_id, -1);
	tok_spec_release(&s);
}
END_TEST

/* Older files leave the model's type out; its fields say it. */
START_TEST(test_model_without_type)
{
	static const char *const docs[] = {
	    "{\"model\": {\"vocab\": {\"a\": 0}, \"merges\": []}}",
	    "{\"model\": {\"vocab\": [[\"a\", 0]], \"unk_id\": null}}",
	    "{\"model\": {\"vocab\": {\"a\": 0}, \"max_input_chars_per_word\": 5}}",
	};
	static const enum tok_model_kind want[] = {TOK_MODEL_BPE, TOK_MODEL_UNIGRAM,
						   TOK_MODEL_WORDPIECE};
	struct tok_spec s;

	for (size_t i = 0; i < 3; i++) {
		read_ok(&s, docs[i]);
		ck_assert_int_eq(s.model.kind, want[i]);
		tok_spec_release(&s);
	}
}
END_TEST

/* ---- the pipeline's parts ----------------------------------------------------- */

START_TEST(test_normalizers)
{
	struct tok_spec s;
	const struct tok_normalizer *n;

	read_with(&s, ", \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": ["
		      "{\"type\": \"NFC\"}, {\"type\": \"NFD\"}, {\"type\": \"NFKC\"}, "
		      "{\"type\": \"NFKD\"}, {\"type\": \"Lowercase\"}, {\"type\": \"StripAccents\"}, "
		      "{\"type\": \"BertNormalizer\", \"clean_text\": false, "
		      "\"handle_chinese_chars\": true, \"strip_accents\": null, \"lowercase\": true}, "
		      "{\"type\": \"Prepend\", \"prepend\": \"\\u2581\"}, "
		      "{\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\\u2581\"}, "
		      "{\"type\": \"Strip\", \"strip_left\": true, \"strip_right\": false}, "
		      "{\"type\": \"Replace\", \"pattern\": {\"Regex\": \"\\\\s+\"}, \"content\": \" \"}]}");
	ck_assert_ptr_nonnull(s.normalizer);
	ck_assert_int_eq(s.normalizer->kind, TOK_NORM_SEQUENCE);
	ck_assert_uint_eq(s.normalizer->n_items, 11);
	n = s.normalizer->items;
	for (int k = 0; k < 6; k++)
		ck_assert_int_eq(n[k].kind, k); /* NFC .. StripAccents, in the enum's order */
	ck_assert_int_eq(n[6].kind, TOK_NORM_BERT);
	ck_assert_int_eq(n[6].clean_text, 0);
	ck_assert_int_eq(n[6].strip_accents, -1); /* null: follows lowercase */
	ck_assert_int_eq(n[6].lowercase, 1);
	ck_assert_str_eq(n[7].prepend, "\xe2\x96\x81");
	ck_assert_int_eq(n[8].kind, TOK_NORM_REPLACE);
	ck_assert_str_eq(n[8].pattern.text, " ");
	ck_assert_int_eq(n[8].pattern.is_regex, 0);
	ck_assert_str_eq(n[8].content, "\xe2\x96\x81");
	ck_assert_int_eq(n[9].strip_left, 1);
	ck_assert_int_eq(n[9].strip_right, 0);
	ck_assert_int_eq(n[10].pattern.is_regex, 1);
	ck_assert_str_eq(n[10].pattern.text, "\\s+");
	tok_spec_release(&s);
}
END_TEST

START_TEST(test_bert_normalizer_defaults)
{
	struct tok_spec s;

	read_with(&s, ", \"normalizer\": {\"type\": \"BertNormalizer\", \"strip_accents\": false}");
	ck_assert_int_eq(s.normalizer->clean_text, 1);
	ck_assert_int_eq(s.normalizer->handle_chinese_chars, 1);
	ck_assert_int_eq(s.normalizer->lowercase, 1);
	ck_assert_int_eq(s.normalizer->strip_accents, 0);
	tok_spec_release(&s);
}
END_TEST

START_TEST(test_pretokenizers)
{
	struct tok_spec s;
	const struct tok_pretokenizer *p;

	read_with(&s, ", \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
		      "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, "
		      "\"use_regex\": false}, "
		      "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\p{N}\"}, "
		      "\"behavior\": \"MergedWithNext\", \"invert\": true}, "
		      "{\"type\": \"Metaspace\", \"replacement\": \"_\", \"prepend_scheme\": \"first\", "
		      "\"split\": false}, "
		      "{\"type\": \"Metaspace\", \"replacement\": \"\\u2581\", \"add_prefix_space\": false}, "
		      "{\"type\": \"Whitespace\"}, {\"type\": \"WhitespaceSplit\"}, "
		      "{\"type\": \"BertPreTokenizer\"}, {\"type\": \"Punctuation\", \"behavior\": "
		      "\"Contiguous\"}, {\"type\": \"Digits\", \"individual_digits\": true}, "
		      "{\"type\": \"ByteLevel\"}, {\"type\": \"Punctuation\"}, "
		      "{\"type\": \"Metaspace\"}]}");
	ck_assert_int_eq(s.pretokenizer->kind, TOK_PRE_SEQUENCE);
	ck_assert_uint_eq(s.pretokenizer->n_items, 12);
	p = s.pretokenizer->items;
	ck_assert_int_eq(p[0].kind, TOK_PRE_BYTE_LEVEL);
	ck_assert_int_eq(p[0].add_prefix_space, 0);
	ck_assert_int_eq(p[0].use_regex, 0);
	ck_assert_int_eq(p[1].behavior, TOK_SPLIT_MERGED_WITH_NEXT);
	ck_assert_int_eq(p[1].invert, 1);
	ck_assert_str_eq(p[1].pattern.text, "\\p{N}");
	ck_assert_str_eq(p[2].replacement, "_");
	ck_assert_int_eq(p[2].prepend_scheme, TOK_PREPEND_FIRST);
	ck_assert_int_eq(p[2].split, 0);
	ck_assert_int_eq(p[3].prepend_scheme, TOK_PREPEND_NEVER); /* add_prefix_space false */
	ck_assert_int_eq(p[3].split, 1);
	ck_assert_int_eq(p[4].kind, TOK_PRE_WHITESPACE);
	ck_assert_int_eq(p[5].kind, TOK_PRE_WHITESPACE_SPLIT);
	ck_assert_int_eq(p[6].kind, TOK_PRE_BERT);
	ck_assert_int_eq(p[7].behavior, TOK_SPLIT_CONTIGUOUS);
	ck_assert_int_eq(p[8].individual_digits, 1);
	ck_assert_int_eq(p[9].add_prefix_space, 1); /* ByteLevel's defaults */
	ck_assert_int_eq(p[9].use_regex, 1);
	ck_assert_int_eq(p[10].behavior, TOK_SPLIT_ISOLATED);
	ck_assert_str_eq(p[11].replacement, "\xe2\x96\x81"); /* Metaspace's defaults */
	ck_assert_int_eq(p[11].prepend_scheme, TOK_PREPEND_ALWAYS);
	tok_spec_release(&s);
}
END_TEST

START_TEST(test_added_tokens)
{
	struct tok_spec s;

	read_with(&s, ", \"added_tokens\": [{\"id\": 3, \"content\": \"<s>\", \"single_word\": false, "
		      "\"lstrip\": true, \"rstrip\": false, \"normalized\": false, \"special\": true}, "
		      "{\"id\": 4, \"content\": \"hey\", \"single_word\": true, \"rstrip\": true}, "
		      "{\"id\": 5, \"content\": \"<x>\", \"special\": true}]");
	ck_assert_uint_eq(s.n_added, 3);
	ck_assert_str_eq(s.added[0].content, "<s>");
	ck_assert_int_eq(s.added[0].id, 3);
	ck_assert_int_eq(s.added[0].lstrip, 1);
	ck_assert_int_eq(s.added[0].special, 1);
	ck_assert_int_eq(s.added[1].single_word, 1);
	ck_assert_int_eq(s.added[1].rstrip, 1);
	ck_assert_int_eq(s.added[1].normalized, 1); /* not special: normalized by default */
	ck_assert_int_eq(s.added[2].normalized, 0); /* special: not */
	tok_spec_release(&s);
}
END_TEST

START_TEST(test_post_processors)
{
	struct tok_spec s;
	const struct tok_post *p;

	read_with(&s, ", \"post_processor\": {\"type\": \"Sequence\", \"processors\": ["
		      "{\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": "
		      "\"<s>\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], "
		      "\"pair\": [{\"Sequence\": {\"id\": \"B\", \"type_id\": 1}}], "
		      "\"special_tokens\": {\"<s>\": {\"id\": \"<s>\", \"ids\": [1], \"tokens\": "
		      "[\"<s>\"]}}}, "
		      "{\"type\": \"BertProcessing\", \"sep\": [\"[SEP]\", 102], \"cls\": [\"[CLS]\", 101]}, "
		      "{\"type\": \"RobertaProcessing\", \"sep\": [\"</s>\", 2], \"cls\": [\"<s>\", 0], "
		      "\"trim_offsets\": false, \"add_prefix_space\": true}, "
		      "{\"type\": \"ByteLevel\", \"trim_offsets\": false, \"add_prefix_space\": true, "
		      "\"use_regex\": true}]}");
	ck_assert_int_eq(s.post->kind, TOK_POST_SEQUENCE);
	ck_assert_uint_eq(s.post->n_items, 4);
	p = s.post->items;
	ck_assert_int_eq(p[0].kind, TOK_POST_TEMPLATE);
	ck_assert_uint_eq(p[0].n_single, 2);
	ck_assert_int_eq(p[0].single[0].is_sequence, 0);
	ck_assert_str_eq(p[0].single[0].special, "<s>");
	ck_assert_int_eq(p[0].single[1].is_sequence, 1);
	ck_assert_uint_eq(p[0].n_specials, 1);
	ck_assert_str_eq(p[0].specials[0].name, "<s>");
	ck_assert_uint_eq(p[0].specials[0].n, 1);
	ck_assert_int_eq(p[0].specials[0].ids[0], 1);
	ck_assert_str_eq(p[0].specials[0].tokens[0], "<s>");
	ck_assert_str_eq(p[1].cls, "[CLS]");
	ck_assert_int_eq(p[1].cls_id, 101);
	ck_assert_int_eq(p[1].sep_id, 102);
	ck_assert_str_eq(p[2].sep, "</s>");
	ck_assert_int_eq(p[2].trim_offsets, 0);
	ck_assert_int_eq(p[2].add_prefix_space, 1);
	ck_assert_int_eq(p[3].kind, TOK_POST_BYTE_LEVEL);
	ck_assert_int_eq(p[3].trim_offsets, 0);
	tok_spec_release(&s);
}
END_TEST

START_TEST(test_decoders)
{
	struct tok_spec s;
	const struct tok_decoder *d;

	read_with(&s, ", \"decoder\": {\"type\": \"Sequence\", \"decoders\": ["
		      "{\"type\": \"Replace\", \"pattern\": {\"String\": \"\\u2581\"}, \"content\": \" \"}, "
		      "{\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}, "
		      "{\"type\": \"Strip\", \"content\": \" \", \"start\": 1, \"stop\": 0}, "
		      "{\"type\": \"ByteLevel\", \"add_prefix_space\": true}, "
		      "{\"type\": \"Metaspace\", \"replacement\": \"\\u2581\", \"prepend_scheme\": "
		      "\"always\", \"split\": true}, "
		      "{\"type\": \"WordPiece\", \"prefix\": \"##\", \"cleanup\": false}, "
		      "{\"type\": \"WordPiece\"}]}");
	ck_assert_int_eq(s.decoder->kind, TOK_DEC_SEQUENCE);
	ck_assert_uint_eq(s.decoder->n_items, 8);
	d = s.decoder->items;
	ck_assert_int_eq(d[0].kind, TOK_DEC_REPLACE);
	ck_assert_str_eq(d[0].pattern.text, "\xe2\x96\x81");
	ck_assert_str_eq(d[0].content, " ");
	ck_assert_int_eq(d[1].kind, TOK_DEC_BYTE_FALLBACK);
	ck_assert_int_eq(d[2].kind, TOK_DEC_FUSE);
	ck_assert_str_eq(d[3].content, " ");
	ck_assert_uint_eq(d[3].strip_start, 1);
	ck_assert_uint_eq(d[3].strip_stop, 0);
	ck_assert_int_eq(d[4].kind, TOK_DEC_BYTE_LEVEL);
	ck_assert_int_eq(d[5].prepend_scheme, TOK_PREPEND_ALWAYS);
	ck_assert_int_eq(d[6].cleanup, 0);
	ck_assert_str_eq(d[7].prefix, "##"); /* WordPiece's defaults */
	ck_assert_int_eq(d[7].cleanup, 1);
	tok_spec_release(&s);
}
END_TEST

/* Nulls are none; a pretty-printed file with the model last reads alike. */
START_TEST(test_nulls_and_layout)
{
	static const char json[] =
	    "{\n  \"normalizer\": null,\n  \"pre_tokenizer\": null,\n  \"post_processor\": null,\n"
	    "  \"decoder\": null,\n  \"added_tokens\": [],\n  \"model\": {\n    \"type\": \"BPE\",\n"
	    "    \"vocab\": {\n      \"a\": 0,\n      \"b\": 1\n    },\n    \"merges\": [\n"
	    "      \"a b\"\n    ]\n  }\n}\n";
	struct tok_spec s;

	read_ok(&s, json);
	ck_assert_ptr_null(s.normalizer);
	ck_assert_ptr_null(s.decoder);
	ck_assert_uint_eq(s.model.n_vocab, 2);
	ck_assert_uint_eq(s.model.n_merges, 1);
	tok_spec_release(&s);
}
END_TEST

/* ---- refusals -------------------------------------------------------------- */

static const struct refusal {
	const char *json;
	const char *message;
} refusals[] = {
    {"{" BPE_MODEL ", \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
     "{\"type\": \"ByteLevel\"}, {\"type\": \"UnicodeScripts\"}]}}",
     "t.json: /pre_tokenizer/pretokenizers/1: unsupported pre-tokenizer type 'UnicodeScripts'"},
    {"{" BPE_MODEL ", \"normalizer\": {\"type\": \"Precompiled\", \"precompiled_charsmap\": \"\"}}",
     "t.json: /normalizer: unsupported normalizer type 'Precompiled'"},
    {"{" BPE_MODEL ", \"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"CTC\"}]}}",
     "t.json: /decoder/decoders/0: unsupported decoder type 'CTC'"},
    {"{" BPE_MODEL ", \"post_processor\": {\"type\": \"Magic\"}}",
     "t.json: /post_processor: unsupported post-processor type 'Magic'"},
    {"{\"model\": {\"type\": \"WordLevel\", \"vocab\": {}}}",
     "t.json: /model: unsupported model type 'WordLevel'"},
    {"{" BPE_MODEL ", \"decoder\": {\"decoders\": []}}",
     "t.json: /decoder: missing \"type\" of the decoder"},
    {"{" BPE_MODEL ", \"decoder\": {\"type\": 7}}", "t.json: /decoder/type: expected a string"},
    {"{\"model\": {\"type\": \"BPE\", \"dropout\": 0.1, \"vocab\": {}, \"merges\": []}}",
     "t.json: /model/dropout: BPE dropout is not supported (it makes encoding random); "
     "expected null"},
    {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a b\", \"ab\"]}}",
     "t.json: /model/merges/1: expected two pieces separated by one space"},
    {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a  b\"]}}",
     "t.json: /model/merges/0: expected two pieces separated by one space"},
    {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [7]}}",
     "t.json: /model/merges/0: expected \"left right\" or [\"left\", \"right\"]"},
    {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": \"0\"}, \"merges\": []}}",
     "t.json: /model/vocab/a: expected an integer in [0, 2147483647]"},
    {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"x/y\": -1}, \"merges\": []}}",
     "t.json: /model/vocab/x~1y: expected an integer in [0, 2147483647]"},
    {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 2.5}, \"merges\": []}}",
     "t.json: /model/vocab/a: expected an integer in [0, 2147483647]"},
    {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 1, \"b\": 1}, \"merges\": []}}",
     "t.json: /model/vocab: id 1 is given to both 'a' and 'b'"},
    {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"a\": 1}, \"merges\": []}}",
     "t.json: /model/vocab: 'a' is given twice"},
    {"{\"model\": {\"type\": \"BPE\", \"vocab\": [], \"merges\": []}}",
     "t.json: /model/vocab: expected an object {\"piece\": id, ...}"},
    {"{\"model\": {\"type\": \"BPE\", \"vocab\": {}}}",
     "t.json: /model/merges: missing (expected an array)"},
    {"{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}, \"merges\": []}}",
     "t.json: /model/merges: only a BPE model has merges"},
    {"{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", 0], [\"b\"]]}}",
     "t.json: /model/vocab/1: expected [\"piece\", score]"},
    {"{\"model\": {\"type\": \"Unigram\", \"unk_id\": 2, \"vocab\": [[\"a\", 0]]}}",
     "t.json: /model/unk_id: expected an integer in [0, 0]"},
    {"{\"model\": {\"vocab\": {}}}",
     "t.json: /model: missing \"type\" of the model, and its fields do not say it"},
    {"{\"version\": \"1.0\"}", "t.json: /model: missing"},
    {"[1]", "t.json: expected a JSON object (a tokenizer.json)"},
    {"{" BPE_MODEL ", \"truncation\": {\"max_length\": 512}}",
     "t.json: /truncation: truncation is not supported; expected null"},
    {"{" BPE_MODEL ", \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"a\"}, "
     "\"behavior\": \"Sideways\"}}",
     "t.json: /pre_tokenizer/behavior: unsupported value 'Sideways'"},
    {"{" BPE_MODEL ", \"pre_tokenizer\": {\"type\": \"Split\", \"behavior\": \"Isolated\"}}",
     "t.json: /pre_tokenizer/pattern: missing (expected {\"String\": ...} or {\"Regex\": ...})"},
    {"{" BPE_MODEL ", \"normalizer\": {\"type\": \"Replace\", \"pattern\": {\"Glob\": \"*\"}, "
     "\"content\": \"\"}}",
     "t.json: /normalizer/pattern: expected {\"String\": ...} or {\"Regex\": ...}"},
    {"{" BPE_MODEL ", \"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": \"ab\"}}",
     "t.json: /pre_tokenizer/replacement: expected one character"},
    {"{" BPE_MODEL ", \"pre_tokenizer\": {\"type\": \"Metaspace\", \"prepend_scheme\": \"often\"}}",
     "t.json: /pre_tokenizer/prepend_scheme: unsupported value 'often'"},
    {"{" BPE_MODEL ", \"normalizer\": {\"type\": \"Strip\", \"strip_left\": true}}",
     "t.json: /normalizer/strip_right: missing (expected true or false)"},
    {"{" BPE_MODEL ", \"normalizer\": {\"type\": \"Lowercase\"}, \"decoder\": {\"type\": "
     "\"WordPiece\", \"cleanup\": 1}}",
     "t.json: /decoder/cleanup: expected true or false"},
    {"{" BPE_MODEL ", \"decoder\": {\"type\": \"Strip\", \"content\": \" \", \"start\": 1}}",
     "t.json: /decoder/stop: missing (expected an integer)"},
    {"{" BPE_MODEL ", \"added_tokens\": [{\"content\": \"<s>\"}]}",
     "t.json: /added_tokens/0/id: missing (expected an integer)"},
    {"{" BPE_MODEL ", \"added_tokens\": [{\"id\": 9, \"content\": \"\"}]}",
     "t.json: /added_tokens/0/content: an added token may not be empty"},
    {"{" BPE_MODEL ", \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": "
     "[{\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}}], \"special_tokens\": {}}}",
     "t.json: /post_processor/single/0/SpecialToken/id: '<s>' is not among the special_tokens"},
    {"{" BPE_MODEL ", \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [], "
     "\"special_tokens\": {\"<s>\": {\"id\": \"<s>\", \"ids\": [1, 2], \"tokens\": [\"<s>\"]}}}}",
     "t.json: /post_processor/special_tokens/<s>: \"ids\" and \"tokens\" differ in length"},
    {"{" BPE_MODEL ", \"post_processor\": {\"type\": \"BertProcessing\", \"sep\": [\"[SEP]\"], "
     "\"cls\": [\"[CLS]\", 1]}}",
     "t.json: /post_processor/sep: expected [\"token\", id]"},
    /* syntax, in the two readers: line and column either way */
    {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\" 0}, \"merges\": []}}",
     "t.json:1:41: expected ':'"},
    {"{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []},\n \"decoder\": nul}",
     "t.json:2:15: invalid token near 'nul'"},
    {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"\\ud800\": 0}, \"merges\": []}}",
     "t.json:1:44: invalid Unicode escape (a lone surrogate)"},
    {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"\\u0000\": 0}, \"merges\": []}}",
     "t.json:1:44: \\u0000 is not supported in a string"},
    {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\xff\": 0}, \"merges\": []}}",
     "t.json:1:39: invalid UTF-8 in a string"},
    {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 01}, \"merges\": []}}",
     "t.json:1:42: a number with a leading zero"},
    {"{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}, \"model\": {}}",
     "t.json:1:61: duplicate object key near '\"model\"'"},
};

START_TEST(test_refused)
{
	const struct refusal *r = &refusals[_i];
	struct tok_spec s;
	char err[512] = "";

	ck_assert_int_eq(api_tokenizer_spec_json(&s, r->json, strlen(r->json), "t.json", err,
						 sizeof err),
			 -1);
	ck_assert_msg(strcmp(err, r->message) == 0, "%s\n  said: %s\n  want: %s", r->json, err,
		      r->message);
	/* the spec is zeroed: nothing to release, and releasing is harmless */
	ck_assert_ptr_null(s.model.vocab);
	ck_assert_ptr_null(s.normalizer);
	tok_spec_release(&s);
}
END_TEST

/* ---- GPT-2's pair ------------------------------------------------------------ */

START_TEST(test_gpt2_small)
{
	static const char vocab[] = "{\"a\": 0, \"b\": 1, \"ab\": 2, \"<|endoftext|>\": 3}";
	static const char merges[] = "#version: 0.2\r\na b\r\n\r\nab ab\n";
	struct tok_spec s;
	char err[512] = "";

	ck_assert_msg(api_tokenizer_spec_gpt2(&s, vocab, strlen(vocab), "v.json", merges,
					      strlen(merges), "m.txt", err, sizeof err) == 0,
		      "%s", err);
	ck_assert_int_eq(s.model.kind, TOK_MODEL_BPE);
	ck_assert_uint_eq(s.model.n_vocab, 4);
	ck_assert_uint_eq(s.model.n_merges, 2); /* #version and the blank line skipped */
	ck_assert_str_eq(s.model.merges[1].left, "ab");
	ck_assert_ptr_null(s.model.unk_token);
	ck_assert_ptr_null(s.normalizer);
	ck_assert_int_eq(s.pretokenizer->kind, TOK_PRE_BYTE_LEVEL);
	ck_assert_int_eq(s.pretokenizer->add_prefix_space, 0);
	ck_assert_int_eq(s.pretokenizer->use_regex, 1);
	ck_assert_int_eq(s.post->kind, TOK_POST_BYTE_LEVEL);
	ck_assert_int_eq(s.post->trim_offsets, 0);
	ck_assert_int_eq(s.decoder->kind, TOK_DEC_BYTE_LEVEL);
	ck_assert_uint_eq(s.n_added, 1);
	ck_assert_str_eq(s.added[0].content, "<|endoftext|>");
	ck_assert_int_eq(s.added[0].id, 3);
	ck_assert_int_eq(s.added[0].special, 1);
	tok_spec_release(&s);
}
END_TEST

START_TEST(test_gpt2_refused)
{
	static const struct {
		const char *vocab, *merges, *message;
	} bad[] = {
	    {"{\"a\": 0, \"b\": 1}", "#version: 0.2\na b\na b c\n",
	     "m.txt:3: expected two pieces separated by one space"},
	    {"{\"a\": 0, \"b\": 1}", "a b\n\xff b\n", "m.txt:2: invalid UTF-8 at column 1"},
	    {"{\"a\": 0, \"b\": -1}", "a b\n", "v.json: /b: expected an integer in [0, 2147483647]"},
	    {"{\"a\": 0, \"b\": 0}", "a b\n", "v.json: id 0 is given to both 'a' and 'b'"},
	    {"[\"a\"]", "a b\n", "v.json:1:1: expected an object {\"piece\": id, ...}"},
	    {"{\"a\": 0} x", "a b\n", "v.json:1:10: end of file expected"},
	};
	struct tok_spec s;
	char err[512];

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_int_eq(api_tokenizer_spec_gpt2(&s, bad[i].vocab, strlen(bad[i].vocab),
							 "v.json", bad[i].merges,
							 strlen(bad[i].merges), "m.txt", err,
							 sizeof err),
				 -1);
		ck_assert_msg(strcmp(err, bad[i].message) == 0, "said: %s\nwant: %s", err,
			      bad[i].message);
	}
}
END_TEST

/* The real GPT-2 files: read, built, and one sentence encoded. */
START_TEST(test_gpt2_real)
{
	static const int32_t want[] = {15496, 995, 0};
	size_t vlen, mlen, bad = 0;
	char *vocab = case_slurp(GPT2_DIR "vocab.json", &vlen);
	char *merges = case_slurp(GPT2_DIR "merges.txt", &mlen);
	struct tokenizer *tok = NULL;
	struct tok_encoding enc;
	struct tok_spec s;
	char err[512] = "";

	ck_assert_msg(vocab != NULL && merges != NULL, "cannot read " GPT2_DIR
		      " (run from the repository's root)");
	ck_assert_msg(api_tokenizer_spec_gpt2(&s, vocab, vlen, "vocab.json", merges, mlen,
					      "merges.txt", err, sizeof err) == 0,
		      "%s", err);
	ck_assert_uint_eq(s.model.n_vocab, 50257);
	ck_assert_uint_eq(s.model.n_merges, 50000);
	ck_assert_int_eq(s.added[0].id, 50256);
	tok_spec_release(&s);
	ck_assert_msg(api_tokenizer_load_gpt2(&tok, vocab, vlen, "vocab.json", merges, mlen,
					      "merges.txt", err, sizeof err) == 0,
		      "%s", err);
	ck_assert_int_eq(tok_encode(tok, "Hello world!", 12, 1, &enc, &bad), TOK_OK);
	ck_assert_uint_eq(enc.n, 3);
	for (size_t i = 0; i < 3; i++)
		ck_assert_int_eq(enc.tokens[i].id, want[i]);
	tok_encoding_release(&enc);
	tok_free(tok);
	free(vocab);
	free(merges);
}
END_TEST

/* tok_build's refusal comes back with the file's name first. */
START_TEST(test_build_message_names_file)
{
	static const char json[] =
	    "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a zz\"]}}";
	struct tokenizer *tok = (struct tokenizer *)1;
	char err[512] = "";

	ck_assert_int_eq(api_tokenizer_load_json(&tok, json, strlen(json), "t.json", err, sizeof err),
			 -1);
	ck_assert_ptr_null(tok);
	ck_assert_msg(strncmp(err, "t.json: ", 8) == 0 && strlen(err) > 8, "%s", err);
}
END_TEST

/* A piece at the largest id tok_build takes (2^24 - 1) among three: the
 * lookup by string was sized by the largest id, 2^25 slots of 16 bytes
 * (512 MiB, every one written) for three pieces; each model folder with
 * such a file kept that for its life. Under an address-space cap of this
 * process + 256 MiB (not under ASan or valgrind, which need the room) the
 * file must load, and its pieces encode and decode. */
START_TEST(test_build_sparse_ids)
{
	static const char json[] = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, "
				   "\"b\": 1, \"ab\": 16777215}, \"merges\": [\"a b\"]}}";
	struct tokenizer *tok = NULL;
	struct tok_encoding enc;
	char err[512] = "";
	struct memcap cap;
	int rc;

	memcap_begin(&cap, (size_t)256 << 20);
	rc = api_tokenizer_load_json(&tok, json, strlen(json), "t.json", err, sizeof err);
	memcap_end(&cap);
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_int_eq(tok_encode(tok, "abb", 3, 1, &enc, NULL), TOK_OK);
	ck_assert_uint_eq(enc.n, 2);
	ck_assert_int_eq(enc.tokens[0].id, 16777215);
	ck_assert_int_eq(enc.tokens[1].id, 1);
	tok_encoding_release(&enc);
	tok_free(tok);
}
END_TEST

/* A post-processor's ids must be the vocabulary's: the template's special
 * tokens and Bert's cls/sep (found by fuzz_tokenizer_file, which saw tokens
 * with no piece come out of such a file). */
START_TEST(test_build_refuses_post_ids)
{
	static const char *const files[] = {
	    "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {\"[UNK]\": 0, \"a\": 1},"
	    " \"unk_token\": \"[UNK]\"}, \"post_processor\": {\"type\": \"TemplateProcessing\","
	    " \"single\": [{\"SpecialToken\": {\"id\": \"[CLS]\", \"type_id\": 0}},"
	    " {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], \"pair\": [],"
	    " \"special_tokens\": {\"[CLS]\": {\"id\": \"[CLS]\", \"ids\": [7],"
	    " \"tokens\": [\"[CLS]\"]}}}}",
	    "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {\"[UNK]\": 0, \"a\": 1},"
	    " \"unk_token\": \"[UNK]\"}, \"post_processor\": {\"type\": \"BertProcessing\","
	    " \"cls\": [\"[CLS]\", 1], \"sep\": [\"[SEP]\", 99]}}",
	};

	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		struct tokenizer *tok = (struct tokenizer *)1;
		char err[512] = "";

		ck_assert_int_eq(api_tokenizer_load_json(&tok, files[i], strlen(files[i]), "t.json",
							 err, sizeof err),
				 -1);
		ck_assert_ptr_null(tok);
		ck_assert_msg(strstr(err, "which is not in the vocabulary") != NULL, "%s", err);
	}
}
END_TEST

/* A NUL byte inside merges.txt is refused with its place, as vocab.json
 * refuses \u0000 (fuzz_tokenizer_file saw "a\0x b" read as "a b"). */
START_TEST(test_gpt2_merges_nul)
{
	static const char vocab[] = "{\"a\": 0, \"b\": 1, \"ab\": 2}";
	static const char merges[] = "#version: 0.2\na\0x b\n";
	struct tok_spec spec;
	char err[512] = "";

	ck_assert_int_eq(api_tokenizer_spec_gpt2(&spec, vocab, strlen(vocab), "v.json", merges,
						 sizeof merges - 1, "m.txt", err, sizeof err),
			 -1);
	ck_assert_str_eq(err, "m.txt:2: a NUL byte at column 2");
}
END_TEST

static Suite *tokenizer_file_suite(void)
{
	Suite *s = suite_create("tokenizer_file");
	TCase *models = tcase_create("models");
	TCase *parts = tcase_create("parts");
	TCase *bad = tcase_create("refused");
	TCase *gpt2 = tcase_create("gpt2");

	tcase_add_test(models, test_bpe_minimal);
	tcase_add_test(models, test_bpe_fields);
	tcase_add_test(models, test_wordpiece);
	tcase_add_test(models, test_unigram);
	tcase_add_test(models, test_model_without_type);
	tcase_add_test(parts, test_normalizers);
	tcase_add_test(parts, test_bert_normalizer_defaults);
	tcase_add_test(parts, test_pretokenizers);
	tcase_add_test(parts, test_added_tokens);
	tcase_add_test(parts, test_post_processors);
	tcase_add_test(parts, test_decoders);
	tcase_add_test(parts, test_nulls_and_layout);
	tcase_add_loop_test(bad, test_refused, 0, (int)(sizeof refusals / sizeof refusals[0]));
	tcase_add_test(bad, test_build_message_names_file);
	tcase_add_test(bad, test_build_sparse_ids);
	tcase_add_test(bad, test_build_refuses_post_ids);
	tcase_add_test(gpt2, test_gpt2_small);
	tcase_add_test(gpt2, test_gpt2_refused);
	tcase_add_test(gpt2, test_gpt2_merges_nul);
	tcase_add_test(gpt2, test_gpt2_real);
	tcase_set_timeout(gpt2, 30);
	suite_add_tcase(s, models);
	suite_add_tcase(s, parts);
	suite_add_tcase(s, bad);
	suite_add_tcase(s, gpt2);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, tokenizer_file_suite, NULL);
}
