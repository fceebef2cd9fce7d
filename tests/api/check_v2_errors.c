/*
 * check_v2_errors.c: the Open Inference Protocol's errors on the real daemon
 * (live_daemon.h), as {"error": "..."} with the status /v1 gives the same
 * fault and the place in the request: JSON bodies (datatypes, shapes, data,
 * inputs the model does not take, ids, UTF-8) and Triton's binary tensor
 * extension (sizes, the header's count, the media type). The answers that
 * succeed are check_v2.c's.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "tests/lib/live_daemon.h"
#include "tests/lib/suite_main.h"
#include "tests/lib/v2_http.h"

static struct live_daemon d; /* the daemon with the built-in models, per test case */

static void start_builtins(void)
{
	live_start(&d, NULL);
}

static void stop_builtins(void)
{
	live_stop(&d);
}

/* v2 answers each fault with the status /v1 gives it (api/error.h): 400 for
 * a body that is not JSON, 422 for a field that is wrong. */
static void expect_error(int status, const char *body, const char *needle)
{
	struct live_resp r = {0};

	v2_post_json(d.port, V2_INFER, body, &r);
	v2_assert_error(&r, status, needle);
	live_resp_release(&r);
}

START_TEST(test_json_errors)
{
	expect_error(422, "{\"inputs\":[{\"name\":\"embeddings\",\"datatype\":\"FP16\",\"shape\":[1,8],"
		   "\"data\":" V2_ROW0 "}]}",
		   "datatype 'FP16' is not supported");
	expect_error(422, "{\"inputs\":[{\"name\":\"embeddings\",\"datatype\":\"INT64\",\"shape\":[1,8],"
		   "\"data\":[1,2,3,4,5,6,7,8]}]}",
		   "cannot be INT64; it is FP32 (at /inputs/0/datatype)");
	expect_error(422, V2_EMB("[2,8]", V2_ROW0), "data has 8 elements; its shape needs 16 (at /inputs/0/data)");
	expect_error(422, V2_EMB("[1,8]", "[" V2_ROW0 "," V2_ROW1 "]"), "more elements than the 8");
	expect_error(422, V2_EMB("[1,4]", "[1,2,3,4]"), "must be [L, 8] or [B, L, 8] (at /inputs/0/shape)");
	expect_error(422, V2_EMB("[1,8]", "[1,2,3,4,5,6,7,\"x\"]"), "expected a number (at /inputs/0/data/7)");
	expect_error(422, V2_EMB("[1,8]", "[1,2,3,4,5,6,7,1e39]"),
		     "1e+39 is outside the float32 range (largest magnitude 3.40282347e+38) "
		     "(at /inputs/0/data/7)");
	expect_error(422, V2_EMB("[1,8]", "[1,2,3,4,5,6,7,1e400]"),
		     "1e400 is past the range of a double (at /inputs/0/data/7)");
	expect_error(422, V2_EMB("[-1,8]", V2_ROW0), "a dimension is an integer >= 0");
	/* the dimension at fault is named, as /v1 names /embeddings/shape/1 */
	expect_error(422, V2_EMB("[1,8.5]", V2_ROW0), "(-1 is for metadata only) (at /inputs/0/shape/1)");
	expect_error(422, V2_EMB("[-1,8]", V2_ROW0), "(at /inputs/0/shape/0)");
	expect_error(422, "{\"inputs\":[{\"name\":\"image\",\"datatype\":\"FP32\",\"shape\":[1],"
		   "\"data\":[1]}]}",
		   "unknown input 'image'");
	expect_error(422, "{\"inputs\":[]}", "non-empty array");
	/* an input the model does not take is pointed at as the input, as when
	 * its data comes binary (not at its JSON data) */
	expect_error(422, "{\"inputs\":[{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,8],"
		   "\"data\":" V2_ROW0 "},{\"name\":\"token_type_ids\",\"datatype\":\"INT64\",\"shape\":[1],"
		   "\"data\":[0]}]}",
		   "model 'tiny' is one attention layer (at /inputs/1)");
	/* a value without a key is the input's fault, not its shape's (/v1: /value) */
	expect_error(422, "{\"inputs\":[{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,8],"
		   "\"data\":" V2_ROW0 "},{\"name\":\"value\",\"datatype\":\"FP32\",\"shape\":[1,8],"
		   "\"data\":" V2_ROW0 "}]}",
		   "needs an input 'key' (self-attention takes neither) (at /inputs/1)");
	expect_error(422, "{\"inputs\":[{\"name\":\"key\",\"datatype\":\"FP32\",\"shape\":[1,8],"
		   "\"data\":" V2_ROW0 "}]}",
		   "exactly one of the inputs embeddings, tokens and text");
	expect_error(422, "{\"inputs\":[{\"name\":\"tokens\",\"datatype\":\"INT64\",\"shape\":[3],"
		   "\"data\":[1,2,64]}]}",
		   "token id 64 is outside [0, 64): a token is a string or an id in that range "
		   "(at /inputs/0/data/2)");
	/* nested unevenly: 64 is element 2 but lies at data/1/1, and there is
	 * no data/2; the array is named, as for evenly nested data */
	expect_error(422, "{\"inputs\":[{\"name\":\"tokens\",\"datatype\":\"INT64\",\"shape\":[3],"
		   "\"data\":[1,[2,64]]}]}",
		   "token id 64 is outside [0, 64): a token is a string or an id in that range "
		   "(at /inputs/0/data)");
	/* an empty array within data is nesting too: 64 is element 1 but lies
	 * at data/2, and data/1 is the [] */
	expect_error(422, "{\"inputs\":[{\"name\":\"tokens\",\"datatype\":\"INT64\",\"shape\":[2],"
		   "\"data\":[1,[],64]}]}",
		   "token id 64 is outside [0, 64): a token is a string or an id in that range "
		   "(at /inputs/0/data)");
	expect_error(422, "{\"inputs\":[{\"name\":\"tokens\",\"datatype\":\"INT32\",\"shape\":[1],"
		   "\"data\":[4294967296]}]}",
		   "expected an integer in [-2147483648, 2147483647] (at /inputs/0/data/0)");
	expect_error(422, "{\"inputs\":[{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,8]}]}",
		   "exactly one of data and parameters.binary_data_size");
	expect_error(422, "{\"inputs\":[{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,8],"
		   "\"data\":" V2_ROW0 ",\"extra\":1}]}",
		   "unknown field 'extra' (at /inputs/0/extra)");
	expect_error(422, "{\"temperature\":1}", "(at /temperature)");
	expect_error(400, "{\"inputs\":[1,", "at line 1");
	/* bytes that are not UTF-8 in the text's data are the text's fault, 422
	 * at its element as /v1 says of /text; elsewhere the body's, 400 */
	expect_error(422, "{\"inputs\":[{\"name\":\"text\",\"datatype\":\"BYTES\",\"shape\":[2],"
		   "\"data\":[\"ok\",\"a\xff\"]}]}",
		   "text is not valid UTF-8 at byte 1 (at /inputs/0/data/1)");
	expect_error(400, "{\"id\":\"\xff\",\"inputs\":[{\"name\":\"text\",\"datatype\":\"BYTES\","
		   "\"shape\":[1],\"data\":[\"ok\"]}]}",
		   "the body is not valid UTF-8 at byte 7");
	expect_error(422, "{\"id\":1,\"inputs\":[]}", "id is a string");
	/* Triton's priority and timeout are read (uint64s), other Triton
	 * parameters are not attnd's */
	expect_error(422, "{\"parameters\":{\"priority\":\"high\"},\"inputs\":[]}",
		     "must be an integer in [0, 18446744073709551615] (at /parameters/priority)");
	expect_error(422, "{\"parameters\":{\"timeout\":-5},\"inputs\":[]}",
		     "(at /parameters/timeout)");
	expect_error(422, "{\"parameters\":{\"priority\":36893488147419103232},\"inputs\":[]}",
		     "must be an integer in [0, 18446744073709551615] (at /parameters/priority)");
	expect_error(422, "{\"parameters\":{\"timeout\":1.5},\"inputs\":[]}",
		     "(at /parameters/timeout)");
	expect_error(422, "{\"parameters\":{\"sequence_id\":7},\"inputs\":[]}",
		     "unknown field 'sequence_id' (at /parameters/sequence_id)");
	expect_error(422, "{\"parameters\":{\"window\":0},\"inputs\":[{\"name\":\"embeddings\","
		   "\"datatype\":\"FP32\",\"shape\":[1,8],\"data\":" V2_ROW0 "}]}",
		   "/parameters/window");
}
END_TEST

/* An input's name and datatype are checked before its elements are read:
 * data right for the input but not for the datatype given is the
 * datatype's fault, and the data of a name that is no input, or of an input
 * given twice, is not read as the datatype says before the name is refused. */
START_TEST(test_name_and_datatype_first)
{
	expect_error(422, "{\"inputs\":[{\"name\":\"text\",\"datatype\":\"FP32\",\"shape\":[1],"
		   "\"data\":[\"a b\"]}]}",
		   "input 'text' cannot be FP32; it is BYTES (at /inputs/0/datatype)");
	expect_error(422, "{\"inputs\":[{\"name\":\"embeddings\",\"datatype\":\"INT64\",\"shape\":[1,8],"
		   "\"data\":[0.5,0,0,0,0,0,0,0]}]}",
		   "input 'embeddings' cannot be INT64; it is FP32 (at /inputs/0/datatype)");
	expect_error(422, "{\"inputs\":[{\"name\":\"tokens\",\"datatype\":\"BYTES\",\"shape\":[2],"
		   "\"data\":[1,2]}]}",
		   "input 'tokens' cannot be BYTES; it is INT32 or INT64 (at /inputs/0/datatype)");
	expect_error(422, "{\"inputs\":[{\"name\":\"prompt\",\"datatype\":\"FP32\",\"shape\":[1],"
		   "\"data\":[\"hello\"]}]}",
		   "unknown input 'prompt'; the inputs are embeddings, tokens, text, key, value and "
		   "token_type_ids (at /inputs/0)");
	expect_error(422, "{\"inputs\":[{\"name\":\"prompt\",\"datatype\":\"FP32\","
		   "\"shape\":[100000000,100],\"data\":[1]}]}",
		   "unknown input 'prompt'");
	expect_error(422, "{\"inputs\":[{\"name\":\"tokens\",\"datatype\":\"INT64\",\"shape\":[1],"
		   "\"data\":[1]},{\"name\":\"tokens\",\"datatype\":\"INT64\",\"shape\":[1],"
		   "\"data\":[1.5]}]}",
		   "input 'tokens' is given twice (at /inputs/1)");
	/* a datatype that is none of the protocol's is still refused as such */
	expect_error(422, "{\"inputs\":[{\"name\":\"text\",\"datatype\":\"STRING\",\"shape\":[1],"
		   "\"data\":[\"a b\"]}]}",
		   "datatype 'STRING' is not supported here; use FP32, INT32, INT64 or BYTES "
		   "(at /inputs/0/datatype)");
}
END_TEST

START_TEST(test_binary_errors)
{
	const char *two = "{\"inputs\":[{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,8],"
			  "\"parameters\":{\"binary_data_size\":32}}]}";
	const char *odd = "{\"inputs\":[{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,8],"
			  "\"parameters\":{\"binary_data_size\":30}}]}";
	const char *huge = "{\"inputs\":[{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,"
			   "8],\"parameters\":{\"binary_data_size\":4611686018427387904}}]}";
	const char *past = "{\"inputs\":[{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,"
			   "8],\"parameters\":{\"binary_data_size\":18446744073709551615}}]}";
	const char *text = "{\"inputs\":[{\"name\":\"text\",\"datatype\":\"BYTES\",\"shape\":[1],"
			   "\"parameters\":{\"binary_data_size\":6}}]}";
	const char *whole = "{\"inputs\":[{\"name\":\"embeddings\",\"datatype\":\"FP32\","
			    "\"shape\":[1,8],\"data\":" V2_ROW0 "}]}";
	const char *triton = "{\"parameters\":{\"priority\":2,\"timeout\":5000},\"inputs\":[{"
			     "\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,8],"
			     "\"data\":" V2_ROW0 "}]}";
	const char *uint64s = "{\"parameters\":{\"priority\":18446744073709551615,\"timeout\":"
			      "9223372036854775808},\"inputs\":[{\"name\":\"embeddings\","
			      "\"datatype\":\"FP32\",\"shape\":[1,8],\"data\":" V2_ROW0 "}]}";
	const char *ints = "{\"inputs\":[{\"name\":\"tokens\",\"datatype\":\"INT32\",\"shape\":[2],"
			   "\"parameters\":{\"binary_data_size\":8}}]}";
	const unsigned char neg_ids[] = {1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}; /* 1, -1 (LE) */
	const unsigned char long_prefix[] = {9, 0, 0, 0, 'a', 'b'};
	const unsigned char past_strings[] = {0, 0, 0, 0, 'a', 'b'}; /* "", then 2 bytes */
	float nan_row[8] = {0};
	struct live_resp r = {0};
	char hdr[128];

	/* a negative INT32 id read as itself, not as 2^32 less it */
	v2_post_binary(d.port, V2_INFER, ints, neg_ids, sizeof neg_ids, &r);
	v2_assert_error(&r, 422, "token id -1 is outside [0, 64)");
	live_resp_release(&r);
	v2_post_binary(d.port, V2_INFER, two, v2_x3, 31, &r); /* a byte short */
	v2_assert_error(&r, 400, "passes the end of the body");
	live_resp_release(&r);
	v2_post_binary(d.port, V2_INFER, two, v2_x3, 33, &r); /* a byte over */
	v2_assert_error(&r, 400, "1 bytes after the JSON header belong to no input");
	live_resp_release(&r);
	v2_post_binary(d.port, V2_INFER, odd, v2_x3, 30, &r);
	v2_assert_error(&r, 400,
			"binary_data_size is 30; 8 FP32 elements take 32 bytes "
			"(at /inputs/0/parameters/binary_data_size)");
	live_resp_release(&r);
	v2_post_binary(d.port, V2_INFER, huge, v2_x3, 32, &r);
	v2_assert_error(&r, 400, "passes the end of the body");
	live_resp_release(&r);
	/* 2^64 - 1 is past the range, not read as 2^63 - 1 (its double clamped) */
	v2_post_binary(d.port, V2_INFER, past, v2_x3, 32, &r);
	v2_assert_error(&r, 422,
			"must be an integer in [0, 9223372036854775807] "
			"(at /inputs/0/parameters/binary_data_size)");
	live_resp_release(&r);
	v2_post_binary(d.port, V2_INFER, text, long_prefix, sizeof long_prefix, &r);
	v2_assert_error(&r, 400, "passes binary_data_size 6");
	live_resp_release(&r);
	v2_post_binary(d.port, V2_INFER, text, past_strings, sizeof past_strings, &r);
	v2_assert_error(&r, 400, "binary_data_size 6 holds 2 bytes past its 1 elements");
	live_resp_release(&r);
	nan_row[3] = __builtin_nanf("");
	v2_post_binary(d.port, V2_INFER, two, nan_row, sizeof nan_row, &r);
	v2_assert_error(&r, 422, "element 3 is not finite");
	live_resp_release(&r);
	/* the header itself: not a number, past the body */
	live_post(d.port, V2_INFER, V2_OCTET_CT, "Inference-Header-Content-Length: 12x\r\n", "{}", 2, &r);
	v2_assert_error(&r, 400, "must be a byte count");
	live_resp_release(&r);
	live_post(d.port, V2_INFER, V2_OCTET_CT, "Inference-Header-Content-Length: \r\n", "{}", 2, &r);
	v2_assert_error(&r, 400, "must be a byte count"); /* empty: no count, not 0 */
	live_resp_release(&r);
	snprintf(hdr, sizeof hdr, "Inference-Header-Content-Length: %d\r\n", 3);
	live_post(d.port, V2_INFER, V2_OCTET_CT, hdr, "{}", 2, &r);
	v2_assert_error(&r, 400, "is not within the body's 2 bytes");
	live_resp_release(&r);
	/* 0 before a body: its JSON request would be empty */
	live_post(d.port, V2_INFER, V2_OCTET_CT, "Inference-Header-Content-Length: 0\r\n", "{}", 2, &r);
	v2_assert_error(&r, 400, "Inference-Header-Content-Length is 0");
	live_resp_release(&r);
	/* a count of the whole body: all of it JSON, no binary section */
	snprintf(hdr, sizeof hdr, "Inference-Header-Content-Length: %zu\r\n", strlen(whole));
	live_post(d.port, V2_INFER, V2_OCTET_CT, hdr, whole, strlen(whole), &r);
	ck_assert_msg(r.status == 200, "%d: %s", r.status, r.body);
	live_resp_release(&r);
	/* the spaces and tabs after a value are no part of it (RFC 9110
	 * section 5.5); a value of them alone is still no count */
	snprintf(hdr, sizeof hdr, "Inference-Header-Content-Length: %zu \t\r\n", strlen(whole));
	live_post(d.port, V2_INFER, V2_OCTET_CT, hdr, whole, strlen(whole), &r);
	ck_assert_msg(r.status == 200, "%d: %s", r.status, r.body);
	live_resp_release(&r);
	live_post(d.port, V2_INFER, V2_OCTET_CT, "Inference-Header-Content-Length: \t \r\n", "{}", 2,
		  &r);
	v2_assert_error(&r, 400, "must be a byte count");
	live_resp_release(&r);
	/* what tritonclient's infer(..., priority=2, timeout=5000) adds: taken */
	live_post(d.port, V2_INFER, "application/json", "", triton, strlen(triton), &r);
	ck_assert_msg(r.status == 200, "%d: %s", r.status, r.body);
	live_resp_release(&r);
	/* both are uint64s: past 2^63 too, up to 2^64 - 1 */
	live_post(d.port, V2_INFER, "application/json", "", uint64s, strlen(uint64s), &r);
	ck_assert_msg(r.status == 200, "%d: %s", r.status, r.body);
	live_resp_release(&r);
	/* curl -d's default type, as Triton's and KServe's examples send an infer
	 * request: read as JSON. /v1 still takes JSON alone. */
	live_post(d.port, V2_INFER, "application/x-www-form-urlencoded", "", whole, strlen(whole),
		  &r);
	ck_assert_msg(r.status == 200, "%d: %s", r.status, r.body);
	ck_assert_ptr_nonnull(strstr(r.body, "\"outputs\""));
	live_resp_release(&r);
	live_post(d.port, "/v1/attention", "application/x-www-form-urlencoded", "",
		  "{\"model\":\"tiny\",\"text\":\"a b\"}", 29, &r);
	ck_assert_int_eq(r.status, 415);
	live_resp_release(&r);
	/* a media type neither JSON nor octet-stream: the transport's 415, v2 body */
	live_post(d.port, V2_INFER, "text/plain", "", "{}", 2, &r);
	v2_assert_error(&r, 415, "application/x-www-form-urlencoded read as JSON), or "
				 "application/octet-stream, or come without a Content-Type");
	live_resp_release(&r);
}
END_TEST

static Suite *v2_errors_suite(void)
{
	Suite *s = suite_create("v2_errors");
	TCase *json = tcase_create("json");
	TCase *binary = tcase_create("binary");
	TCase *cases[] = {json, binary};

	for (size_t i = 0; i < 2; i++) {
		tcase_set_timeout(cases[i], 120);
		tcase_add_checked_fixture(cases[i], start_builtins, stop_builtins);
		suite_add_tcase(s, cases[i]);
	}
	tcase_add_test(json, test_json_errors);
	tcase_add_test(json, test_name_and_datatype_first);
	tcase_add_test(binary, test_binary_errors);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {
	    .daemon = true,
	};

	return suite_main(argc, argv, v2_errors_suite, &opts);
}
