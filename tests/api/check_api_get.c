/*
 * check_api_get.c: the GET routes, through api_handle on the built-in models
 * (api_harness.h): /v1/models, /v1/models/{name}, /version, /openapi.json,
 * and a route that does not exist.
 *
 * Ownership: whatever a test allocates is in the harness's arena.
 */
#include <check.h>
#include <jansson.h>
#include <string.h>

#include "tests/lib/api_harness.h"
#include "tests/lib/suite_main.h"

static const json_t *model_named(const json_t *list, const char *name)
{
	for (size_t i = 0; i < json_array_size(list); i++) {
		const json_t *m = json_array_get(list, i);

		if (strcmp(json_string_value(harness_field(m, "name")), name) == 0)
			return m;
	}
	ck_abort_msg("no model %s in the list", name);
	return NULL;
}

START_TEST(test_models)
{
	struct answer a = harness_call(API_ROUTE_MODELS, NULL, NULL);
	const json_t *list, *base, *tiny;

	harness_expect_ok(&a);
	list = harness_field(a.json, "models");
	ck_assert_uint_eq(json_array_size(list), 2);
	base = model_named(list, "base");
	tiny = model_named(list, "tiny");
	ck_assert_int_eq(harness_int_field(base, "d_model"), 512);
	ck_assert_int_eq(harness_int_field(base, "num_heads"), 8);
	ck_assert_int_eq(harness_int_field(base, "vocab_size"), 32000);
	ck_assert(json_is_true(harness_field(base, "default")));
	ck_assert_int_eq(harness_int_field(tiny, "d_model"), 8);
	ck_assert_int_eq(harness_int_field(tiny, "num_heads"), 2);
	ck_assert_int_eq(harness_int_field(tiny, "head_dim"), 4);
	ck_assert_int_eq(harness_int_field(tiny, "vocab_size"), 64);
	ck_assert(json_is_false(harness_field(tiny, "default")));
	ck_assert(strncmp(json_string_value(harness_field(tiny, "source")), "seed:", 5) == 0);
}
END_TEST

START_TEST(test_model_one)
{
	struct answer list = harness_call(API_ROUTE_MODELS, NULL, NULL);
	struct answer tiny = harness_call(API_ROUTE_MODEL, "tiny", NULL);
	struct answer nope = harness_call(API_ROUTE_MODEL, "nope", NULL);
	struct answer none = harness_call(API_ROUTE_MODEL, NULL, NULL);
	struct answer body = harness_call(API_ROUTE_MODEL, "tiny", "this body is ignored");

	harness_expect_ok(&tiny);
	ck_assert(json_equal(tiny.json, model_named(harness_field(list.json, "models"), "tiny")));
	harness_expect_error(&nope, 404, "model_not_found", NULL);
	harness_expect_error(&none, 404, "model_not_found", NULL);
	harness_expect_ok(&body);
}
END_TEST

START_TEST(test_version_and_openapi)
{
	struct answer v = harness_call(API_ROUTE_VERSION, NULL, NULL);
	struct answer o = harness_call(API_ROUTE_OPENAPI, NULL, NULL);
	struct answer bad = harness_call((enum api_route)API_ROUTE_COUNT, NULL, NULL);
	const char *version;

	harness_expect_ok(&v);
	ck_assert_str_eq(json_string_value(harness_field(v.json, "name")), "attnd");
	version = json_string_value(harness_field(v.json, "version"));
	ck_assert(version != NULL && version[0] != '\0');
	harness_expect_ok(&o);
	ck_assert(strncmp(json_string_value(harness_field(o.json, "openapi")), "3.1", 3) == 0);
	ck_assert_str_eq(json_string_value(harness_field(harness_field(o.json, "info"), "version")),
			 version);
	ck_assert(json_is_object(harness_field(o.json, "paths")));
	harness_expect_error(&bad, 404, "not_found", "");
}
END_TEST

/*
 * The error codes a /v1 body may carry are exactly the document's ErrorCode
 * enum, so that a typed client branching on `code` meets no stranger. The
 * kinds below never reach a /v1 body: /v2 answers carry a message alone,
 * and the rest are said at start-up (or are the API's own misuse).
 */
static const char *const never_in_v1_body[] = {
    /* /v2 only */
    "bad_header", "binary_size_mismatch", "unknown_input", "duplicate_input", "invalid_datatype",
    "unsupported_datatype", "invalid_string", "unknown_output", "duplicate_output",
    "invalid_output",
    /* loading models and tokenizers, at start-up or on a reload */
    "invalid_model_name", "malformed_weights", "truncated_weights", "unsupported_dtype",
    "missing_tensor", "weights_shape_mismatch",
    /* the API sizes every workspace it passes */
    "workspace_too_small", NULL};

static int listed(const char *const *names, const char *code)
{
	for (size_t i = 0; names[i] != NULL; i++)
		if (strcmp(names[i], code) == 0)
			return 1;
	return 0;
}

START_TEST(test_error_codes_documented)
{
	struct answer o = harness_call(API_ROUTE_OPENAPI, NULL, NULL);
	const json_t *schemas = harness_field(harness_field(o.json, "components"), "schemas");
	const json_t *codes = harness_field(harness_field(schemas, "ErrorCode"), "enum");
	size_t in_enum = 0, i;
	const json_t *c;

	harness_expect_ok(&o);
	for (int k = 0; k < API_E_COUNT; k++) {
		const char *code = api_error_code((enum api_error_kind)k);
		int found = 0;

		json_array_foreach(codes, i, c)
			found |= strcmp(json_string_value(c), code) == 0;
		ck_assert_msg(found != listed(never_in_v1_body, code),
			      found ? "'%s' is documented but listed as never sent"
				    : "'%s' is missing from the ErrorCode enum",
			      code);
		in_enum += (size_t)found;
	}
	ck_assert_msg(in_enum == json_array_size(codes), "the ErrorCode enum has %zu codes attnd lacks",
		      json_array_size(codes) - in_enum);
}
END_TEST

static Suite *get_suite(void)
{
	Suite *s = suite_create("api_get");
	TCase *tc = harness_tcase(s, "get", 60);

	tcase_add_test(tc, test_models);
	tcase_add_test(tc, test_model_one);
	tcase_add_test(tc, test_version_and_openapi);
	tcase_add_test(tc, test_error_codes_documented);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {
	    .setup = harness_setup,
	    .teardown = harness_teardown,
	};

	return suite_main(argc, argv, get_suite, &opts);
}
