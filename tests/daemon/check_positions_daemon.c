/*
 * check_positions_daemon.c: "positions": true on POST /v1/attention through
 * the real daemon's HTTP, as the viewer asks for it: a built-in layer answers
 * the encoding (its numbers are check_api_positions' business), and so does
 * the built-in checkpoint `mini`, its own learned position embeddings (their
 * numbers are check_api_ckpt_positions').
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/live_daemon.h"
#include "tests/lib/suite_main.h"

static struct live_daemon daemon_;

static void start_daemon(void)
{
	live_start(&daemon_, NULL);
}

static void stop_daemon(void)
{
	live_stop(&daemon_);
}

static void post(const char *body, struct live_resp *r)
{
	live_post(daemon_.port, "/v1/attention", "application/json", "", body, strlen(body), r);
}

START_TEST(layer_answers_positions)
{
	static const char *const types[] = {"sinusoidal", "rope"};
	static const size_t dims[] = {8, 4}; /* tiny: E = 8, D = 4 */

	for (size_t t = 0; t < 2; t++) {
		struct live_resp r = {0};
		char body[256];
		json_t *v, *p;

		snprintf(body, sizeof body,
			 "{\"model\":\"tiny\",\"text\":\"the cat sat down\",\"positional\":\"%s\","
			 "\"positions\":true}",
			 types[t]);
		post(body, &r);
		ck_assert_msg(r.status == 200, "status %d: %s", r.status, r.body);
		v = live_json(&r);
		p = json_object_get(v, "positions");
		ck_assert_ptr_nonnull(p);
		ck_assert_str_eq(json_string_value(json_object_get(p, "type")), types[t]);
		ck_assert_uint_eq(json_array_size(json_object_get(p, "encoding")), 4);
		ck_assert_uint_eq(json_array_size(json_array_get(json_object_get(p, "encoding"), 0)),
				  dims[t]);
		ck_assert_uint_eq(json_array_size(json_object_get(p, "similarity")), 4);
		ck_assert(json_number_value(json_array_get(
			      json_array_get(json_object_get(p, "distance"), 2), 2)) == 0.0);
		json_decref(v);
		live_resp_release(&r);
	}
}
END_TEST

START_TEST(checkpoint_answers_learned)
{
	struct live_resp r = {0};
	json_t *v, *p;

	post("{\"model\":\"mini\",\"text\":\"the cat\",\"positions\":true}", &r);
	ck_assert_msg(r.status == 200, "status %d: %s", r.status, r.body);
	v = live_json(&r);
	p = json_object_get(v, "positions");
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(json_string_value(json_object_get(p, "type")), "learned");
	/* mini: E = 128, one row per token */
	ck_assert_uint_eq(json_array_size(json_array_get(json_object_get(p, "encoding"), 0)), 128);
	ck_assert_uint_eq(json_array_size(json_object_get(p, "encoding")),
			  json_array_size(json_object_get(v, "tokens")));
	ck_assert_ptr_nonnull(json_object_get(v, "attentions"));
	json_decref(v);
	post("{\"model\":\"mini\",\"text\":\"the cat\",\"positions\":false}", &r);
	ck_assert_msg(r.status == 200, "status %d: %s", r.status, r.body);
	v = live_json(&r);
	ck_assert_ptr_null(json_object_get(v, "positions"));
	json_decref(v);
	post("{\"model\":\"tiny\",\"text\":\"the cat\",\"positional\":\"alibi\",\"positions\":true}",
	     &r);
	live_assert_error(&r, 422, "invalid_value");
	live_resp_release(&r);
}
END_TEST

static Suite *positions_suite(void)
{
	Suite *s = suite_create("positions_daemon");
	TCase *tc = tcase_create("positions");

	tcase_set_timeout(tc, 60);
	tcase_add_unchecked_fixture(tc, start_daemon, stop_daemon);
	tcase_add_test(tc, layer_answers_positions);
	tcase_add_test(tc, checkpoint_answers_learned);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {.daemon = true};

	return suite_main(argc, argv, positions_suite, &opts);
}
