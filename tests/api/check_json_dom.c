/*
 * check_json_dom.c: json_dom_parse against its twin, jansson's json_loadb
 * with JSON_REJECT_DUPLICATES (api/json/json_dom.h).
 *
 *   takes     every text of a corpus of valid JSON is read by json_dom_parse
 *             itself (it does not hand the common case back), into values
 *             jansson's own dump of which is byte for byte jansson's for
 *             the same text: types, values, key order
 *   declines  every text of a corpus of bad and edge-case JSON that jansson
 *             rejects, json_dom_parse declines too (NULL)
 *   mutations texts of the corpus cut, spliced and bit-flipped at seeded
 *             random: whenever json_dom_parse returns a value, jansson
 *             accepts the text and dumps the same (the other way round may
 *             differ: it may decline what jansson takes)
 *   request   the four-word request of the seeds goes through req_parse as
 *             before: same fields, and an error still names jansson's line
 *             and column
 *   members   req_member finds what its twin req_get finds, for members,
 *             absent keys, keys one byte off, and objects past the table
 *             (REQ_MEMBERS_MAX); req_members_known refuses the same first
 *             unknown field with the same error as req_known_fields
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/json/json_dom.h"
#include "api/json/json_read.h"
#include "engine/prng.h"

#include "tests/lib/suite_main.h"

static const char *const valid[] = {
    "{}",
    "[]",
    " \t\r\n{ \"a\" : 1 , \"b\":[ ] } \n",
    "{\"model\":\"tiny\",\"text\":\"나는 맛있는 사과를 먹었다\"}",
    "{\"tokens\":[1,2,3,-4,0,-0,999999999999999999],\"layers\":\"all\"}",
    "[0.5,-1.25e-3,3E+2,1e300,-1.7976931348623157e308]",
    "[1e-400, 2.5E-320, 0.1, 123456789.123456789, -0.0]",
    "[true,false,null,[[]],{\"x\":{}}]",
    "{\"s\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"}",
    "{\"u\":\"\\u0041\\u00e9\\u4e2d\\ud83d\\ude00\\u0001\"}",
    "{\"\\u00e9t\\u00e9\":\"key escaped\",\"\\u0001\":17}",
    "{\"utf8\":\"\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80\x7f\"}",
    "{\"a\":{\"b\":{\"c\":{\"d\":[[[[[1]]]]]}}}}",
    "[\"\",\"\",{\"\":\"\"}]",
    "{\"embeddings\":[[0.1,0.2],[0.3,0.4]],\"weights\":\"none\",\"scale\":0.125}",
};

static const char *const invalid[] = {
    "",
    "   ",
    "1",
    "\"just a string\"",
    "null",
    "{",
    "[1,]",
    "{\"a\":1,}",
    "{\"a\" 1}",
    "{a:1}",
    "{\"a\":1}x",
    "{\"a\":1}{}",
    "[01]",
    "[-]",
    "[1.]",
    "[.5]",
    "[1e]",
    "[+1]",
    "[1e+]",
    "[tru]",
    "[nul]",
    "[True]",
    "{\"a\":1,\"a\":2}",
    "{\"a\":\"tab\there\"}",
    "{\"a\":\"nl\nhere\"}",
    "[\"\\x\"]",
    "[\"\\u12\"]",
    "[\"\\u0000\"]",
    "[\"\\ud800\"]",
    "[\"\\udc00\"]",
    "[\"\\ud800\\u0041\"]",
    "[\"\xc0\x80\"]",
    "[\"\xed\xa0\x80\"]",
    "[\"\xf4\x90\x80\x80\"]",
    "[\"\xe0\x9f\xbf\"]",
    "[\"\xff\"]",
    "[\"\xc3\"]",
    "[\"unterminated]",
    "[1e999]",
    "[-1e999]",
    "[1 2]",
    "[\"a\" \"b\"]",
    "{\"a\":[1,2}",
    "[1]]",
};

/* jansson's compact dump of v, keys in their order, reals to 17 digits */
static char *dump(const json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));

	ck_assert_ptr_nonnull(s);
	return s;
}

/* When json_dom_parse takes text, jansson takes it too, to the same dump.
 * Returns whether json_dom_parse took it. */
static int same_as_jansson(const char *text, size_t len)
{
	json_error_t jerr;
	json_t *dom = json_dom_parse(text, len);
	json_t *ref = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);

	if (dom != NULL) {
		char *a, *b;

		ck_assert_msg(ref != NULL, "json_dom_parse took what jansson rejects (%s): %.*s",
			      jerr.text, (int)len, text);
		a = dump(dom), b = dump(ref);
		ck_assert_msg(strcmp(a, b) == 0, "%.*s: json_dom %s, jansson %s", (int)len, text, a,
			      b);
		free(a), free(b);
	}
	json_decref(dom);
	json_decref(ref);
	return dom != NULL;
}

START_TEST(test_takes_valid)
{
	const char *text = valid[_i];

	ck_assert_msg(same_as_jansson(text, strlen(text)), "declined: %s", text);
}
END_TEST

START_TEST(test_declines_invalid)
{
	const char *text = invalid[_i];
	json_error_t jerr;
	json_t *ref = json_loadb(text, strlen(text), JSON_REJECT_DUPLICATES, &jerr);
	json_t *dom = json_dom_parse(text, strlen(text));

	ck_assert_msg(ref == NULL, "the corpus's bad text is valid for jansson: %s", text);
	ck_assert_msg(dom == NULL, "json_dom_parse took a bad text: %s", text);
}
END_TEST

/* A NUL byte inside the buffer (the length says where the text ends), and a
 * text cut before its end: declined, as jansson rejects both. */
START_TEST(test_declines_nul_and_cut)
{
	static const char nul_in_string[] = "{\"a\":\"x\0y\"}";
	static const char nul_after[] = "{\"a\":1}\0";
	static const char whole[] = "{\"a\":[1,2,3],\"b\":\"text\"}";

	ck_assert_ptr_null(json_dom_parse(nul_in_string, sizeof nul_in_string - 1));
	ck_assert_ptr_null(json_dom_parse(nul_after, sizeof nul_after - 1));
	for (size_t cut = 0; cut + 1 < sizeof whole - 1; cut++)
		ck_assert_msg(!same_as_jansson(whole, cut), "cut at %zu taken", cut);
	ck_assert(same_as_jansson(whole, sizeof whole - 1));
}
END_TEST

/* Nesting past JSON_DOM_MAX_DEPTH goes to jansson; up to it is taken. */
START_TEST(test_depth)
{
	char text[2 * (JSON_DOM_MAX_DEPTH + 1) + 1];

	for (size_t depth = JSON_DOM_MAX_DEPTH; depth <= JSON_DOM_MAX_DEPTH + 1; depth++) {
		memset(text, '[', depth);
		memset(text + depth, ']', depth);
		ck_assert_int_eq(same_as_jansson(text, 2 * depth), depth <= JSON_DOM_MAX_DEPTH);
	}
}
END_TEST

/* the bytes a mutation writes: JSON's punctuation, digits, escapes, UTF-8 */
static const char alphabet[] = "{}[],:\"\\ \t\n0123456789.-+eEuntrfalsbdc\x01\x7f\xc3\xa9\xed\xa0"
			       "\xf0\x9f\x98\x80";

/* One seeded mutation of src [n] into dst (room for n + 8): a byte
 * replaced, inserted or deleted, or a cut. Returns the new length. */
static size_t mutate(struct attn_prng *g, char *dst, const char *src, size_t n)
{
	size_t at = n ? attn_prng_next(g) % n : 0;
	char c = alphabet[attn_prng_next(g) % (sizeof alphabet - 1)];

	memcpy(dst, src, n);
	switch (attn_prng_next(g) % 4) {
	case 0:
		if (n)
			dst[at] = c;
		return n;
	case 1:
		memmove(dst + at + 1, dst + at, n - at);
		dst[at] = c;
		return n + 1;
	case 2:
		if (n)
			memmove(dst + at, dst + at + 1, n - at - 1);
		return n ? n - 1 : 0;
	default:
		return at;
	}
}

START_TEST(test_mutations)
{
	struct attn_prng g;
	size_t taken = 0, tried = 0;
	char a[512], b[512];

	attn_prng_seed(&g, 20261203);
	for (size_t k = 0; k < sizeof valid / sizeof *valid; k++)
		for (int round = 0; round < 400; round++) {
			size_t n = strlen(valid[k]);

			/* up to three mutations in a row, each kept under the buffer */
			memcpy(a, valid[k], n);
			for (int step = 0; step < 3 && n + 8 < sizeof b; step++) {
				n = mutate(&g, b, a, n);
				memcpy(a, b, n);
				taken += (size_t)same_as_jansson(a, n);
				tried++;
			}
		}
	/* some mutants stay valid, and those are read here, not handed back */
	ck_assert_uint_gt(taken, tried / 50);
}
END_TEST

/* The request path: req_parse reads the seeds' request (through json_dom),
 * and a syntax error still reports jansson's line and column. */
START_TEST(test_request)
{
	static const char ok[] = "{\"model\":\"tiny\",\"text\":\"나는 맛있는 사과를 먹었다\"}";
	static const char bad[] = "{\"model\":\"tiny\",\n \"text\": nope}";
	struct api_error err;
	json_t *root = NULL;

	ck_assert_int_eq(req_parse(ok, sizeof ok - 1, &root, &err), 0);
	ck_assert_str_eq(json_string_value(json_object_get(root, "model")), "tiny");
	ck_assert_str_eq(json_string_value(json_object_get(root, "text")),
			 "나는 맛있는 사과를 먹었다");
	json_decref(root);
	ck_assert_int_ne(req_parse(bad, sizeof bad - 1, &root, &err), 0);
	ck_assert_ptr_null(root);
	ck_assert_msg(strstr(err.message, "line 2, column") != NULL, "%s", err.message);
}
END_TEST

static const char *const member_bodies[] = {
    "{}",
    "{\"model\":\"tiny\",\"text\":\"a b\"}",
    "{\"text\":\"a\",\"tokens\":[1],\"t\":1,\"\":2}",
    /* REQ_MEMBERS_MAX members, then one more: looked up in the object */
    "{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"text\":8}",
    "{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"text\":9}",
    "{\"scale\":1,\"weights\":\"none\",\"nope\":0,\"model\":\"tiny\"}",
    "[1,2]",
};

static const char *const member_keys[] = { "model", "text", "tex", "texts", "tokens", "t", "",
					   "a", "h", "g", "scale", "weights", "nope", "value",
					   NULL };

static const char *const member_known[] = { "model", "text", "tokens", "scale", "weights", "a",
					    "b", "c", "d", "e", "f", "g", NULL };

START_TEST(test_members)
{
	const char *body = member_bodies[_i];
	struct api_error e_table, e_object;
	struct req_members m;
	json_error_t jerr;
	json_t *root = json_loads(body, 0, &jerr);
	int rc_table, rc_object;

	ck_assert_msg(root != NULL, "%s", body);
	req_members_read(&m, root);
	ck_assert(m.n == (json_object_size(root) > REQ_MEMBERS_MAX ? SIZE_MAX
								 : json_object_size(root)));
	for (size_t k = 0; member_keys[k] != NULL; k++)
		ck_assert_msg(req_member(&m, member_keys[k]) == req_get(root, member_keys[k]),
			      "%s in %s", member_keys[k], body);
	memset(&e_table, 0, sizeof e_table);
	memset(&e_object, 0, sizeof e_object);
	rc_table = req_members_known(&m, "/x", member_known, &e_table);
	rc_object = req_known_fields(root, "/x", member_known, &e_object);
	ck_assert_int_eq(rc_table, rc_object);
	ck_assert(memcmp(&e_table, &e_object, sizeof e_table) == 0);
	json_decref(root);
}
END_TEST

static Suite *json_dom_suite(void)
{
	Suite *s = suite_create("json_dom");
	TCase *tc = tcase_create("twin");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_takes_valid, 0, (int)(sizeof valid / sizeof *valid));
	tcase_add_loop_test(tc, test_declines_invalid, 0, (int)(sizeof invalid / sizeof *invalid));
	tcase_add_test(tc, test_declines_nul_and_cut);
	tcase_add_test(tc, test_depth);
	tcase_add_test(tc, test_mutations);
	tcase_add_test(tc, test_request);
	tcase_add_loop_test(tc, test_members, 0,
			    (int)(sizeof member_bodies / sizeof *member_bodies));
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, json_dom_suite, NULL);
}
