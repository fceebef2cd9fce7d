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

static Suite *get_suite(void)
{
	Suite *s = suite_create("api_get");
	TCase *tc = harness_tcase(s, "get", 60);

	tcase_add_test(tc, test_models);
	tcase_add_test(tc, test_model_one);
	tcase_add_test(tc, test_version_and_openapi);
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
