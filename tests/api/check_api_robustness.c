/*
 * check_api_robustness.c: what no client may break, through api_handle on the
 * built-in models (api_harness.h): every truncation and one-byte mutation of
 * rich bodies, the response and memory limits (declared sizes refused before
 * they are allocated), deep nesting, concurrent calls on one service, and a
 * service built here from nothing.
 *
 * Ownership: whatever a test allocates is in the harness's arena; an
 * address-space cap is lifted by the same teardown.
 */
#include <check.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/api_harness.h"
#include "tests/lib/api_tensor.h"
#include "tests/lib/memcap.h"
#include "tests/lib/suite_main.h"
#include "engine/model.h"

static struct memcap cap; /* cap_address_space's, lifted by the teardown */

static void lift_cap(void *unused)
{
	(void)unused;
	memcap_end(&cap);
}

/*
 * Caps the address space at its current size + extra bytes, so that an
 * allocation a request should not make fails (the teardown lifts the cap).
 * Returns 0 where that cannot work: ASan and valgrind need the room.
 */
static int cap_address_space(size_t extra)
{
	if (!memcap_begin(&cap, extra))
		return 0;
	harness_defer(lift_cap, NULL);
	return 1;
}

/* head, then unit count times, then tail: a long body, in the arena. */
static const char *repeat(const char *head, const char *unit, size_t count, const char *tail)
{
	size_t h = strlen(head), u = strlen(unit), t = strlen(tail);
	char *s = harness_keep(malloc(h + u * count + t + 1));

	memcpy(s, head, h);
	for (size_t i = 0; i < count; i++)
		memcpy(s + h + i * u, unit, u);
	memcpy(s + h + u * count, tail, t + 1);
	return s;
}

/* ------------------------------------------------------------------------ */
/* robustness                                                               */
/* ------------------------------------------------------------------------ */

static const char rich_body[] =
    TINY "\"embeddings\":[" X3 ",[" R3 "]],\"key\":[" X3 ",[" R1 "," R2 "]],"
	 "\"mask\":{\"causal\":true,\"window\":2,\"lengths\":[3,1],\"bias\":[" NEG3 "," NEG3 "]},"
	 "\"positional\":{\"type\":\"rope\",\"theta\":500,\"positions\":[0,1,2]},"
	 "\"scores\":\"masked\",\"weights\":\"mean\",\"precision\":4}";
static const char rich_sdpa[] =
    "{\"q\":" SQ ",\"k\":" SQ ",\"v\":" SQ ",\"attn_mask\":[[0,\"-Infinity\"],[0,0]],"
    "\"past_key\":[[[[1,0]]]],\"past_value\":[[[[0,1]]]],\"is_causal\":true,"
    "\"scores\":\"softmax\",\"weights\":\"per_head\"}";

/* Every proper prefix of a valid body is malformed JSON: 400 with a whole body. */
START_TEST(test_truncated_bodies)
{
	struct answer full = harness_attention(rich_body), full_sdpa = harness_sdpa(rich_sdpa);

	harness_expect_ok(&full);
	harness_expect_ok(&full_sdpa);
	for (size_t n = 0; n + 1 < sizeof(rich_body); n++)
		ck_assert_int_eq(harness_status(API_ROUTE_ATTENTION, rich_body, n), 400);
	for (size_t n = 0; n + 1 < sizeof(rich_sdpa); n++)
		ck_assert_int_eq(harness_status(API_ROUTE_SDPA, rich_sdpa, n), 400);
}
END_TEST

/* One byte changed or dropped anywhere: some answer below 500, always whole. */
static void mutate_all(enum api_route route, const char *body)
{
	static const char subs[] = "\"}]{[0-9eE.,: x\\\xff";
	size_t n = strlen(body);
	char *buf = harness_keep(malloc(n + 1));

	for (size_t p = 0; p < n; p++) {
		for (size_t s = 0; s < sizeof(subs) - 1; s++) {
			memcpy(buf, body, n + 1);
			buf[p] = subs[s];
			harness_status(route, buf, n);
		}
		memcpy(buf, body, p);
		memcpy(buf + p, body + p + 1, n - p);
		harness_status(route, buf, n - 1);
	}
}

START_TEST(test_mutated_bodies)
{
	mutate_all(API_ROUTE_ATTENTION, rich_body);
	mutate_all(API_ROUTE_SDPA, rich_sdpa);
}
END_TEST

/* A response over the reply's maximum becomes a whole 422. */
START_TEST(test_response_limit)
{
	const char *body = "{\"text\":\"a b c\"}"; /* base: 3 x 512 floats */
	struct answer a = harness_run_request(harness_service, API_ROUTE_ATTENTION, NULL, body,
					      strlen(body), 512);

	harness_keep(a.text);
	harness_keep_json(a.json);
	harness_check_reply(&a, body, strlen(body));
	harness_expect_error(&a, 422, "response_too_large", "");
	ck_assert_uint_le(strlen(a.text), 512);
}
END_TEST

/*
 * 30 000 words on tiny: weights [2, 30000, 30000] and their text would need
 * about 36 GB. Refused with 422 request_too_large, fast (under valgrind too),
 * and without allocating them.
 */
START_TEST(test_request_too_large)
{
	const char *body = repeat("{\"model\":\"tiny\",\"text\":\"", "a ", 30000, "\"}");
	struct rusage before, after;
	struct answer a;

	getrusage(RUSAGE_SELF, &before);
	a = harness_attention(body);
	getrusage(RUSAGE_SELF, &after);
	harness_expect_error(&a, 422, "request_too_large", "");
	ck_assert_msg(a.ms < 1000, "took %.0f ms", a.ms);
	ck_assert_msg(after.ru_maxrss - before.ru_maxrss < 256 * 1024, "peak RSS grew by %ld KB",
		      after.ru_maxrss - before.ru_maxrss);
}
END_TEST

/*
 * A tensor object's declared shape is checked against its data before it is
 * allocated, and token inputs against the memory limit before they are
 * embedded: a body of a few bytes (or 300 KB of words) must not make the API
 * allocate gigabytes. With the address space capped at +256 MB an allocation
 * would fail as 503 out_of_memory, a 5xx a client caused; each must be a 422 decided
 * before allocating. Under ASan or valgrind (no cap) the test is skipped:
 * there the allocations would be made, and valgrind touches what calloc gives.
 */
START_TEST(test_declared_sizes_unallocated)
{
	static const char *const bodies[][3] = {
	    {TINY "\"embeddings\":{\"shape\":[1,250000000,8],\"data\":[]}}", "invalid_shape",
	     "/embeddings/data"},
	    {TINY EMB1 ",\"key\":{\"shape\":[250000000,8],\"base64\":\"AAAA\"}}", "invalid_base64",
	     "/key/base64"},
	    {TINY EMB1 ",\"mask\":{\"allow\":{\"shape\":[1,1,40000,40000],\"data\":[]}}}", NULL,
	     "/mask/allow"}, /* any code: the shape or the data length may be the reason */
	    {"{\"q\":{\"shape\":[1,1,250000000,8],\"data\":[]},\"k\":" SQ ",\"v\":" SQ "}",
	     "invalid_shape", "/q/data"},
	    /* base: a [150000, 512] query is 300 MB */
	    {NULL, "request_too_large", "/text"},
	};
	const char *text = repeat("{\"text\":\"", "a ", 150000, "\",\"weights\":\"none\"}");

	if (!cap_address_space((size_t)256 << 20))
		return;
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		const char *body = bodies[i][0] ? bodies[i][0] : text;
		struct answer a =
		    harness_call(body[2] == 'q' ? API_ROUTE_SDPA : API_ROUTE_ATTENTION, NULL, body);
		const json_t *e = json_object_get(a.json, "error");
		const char *code = json_string_value(json_object_get(e, "code"));
		const char *ptr = json_string_value(json_object_get(e, "pointer"));
		int ok = bodies[i][1] == NULL
			     ? ptr && strncmp(ptr, bodies[i][2], strlen(bodies[i][2])) == 0
			     : code && strcmp(code, bodies[i][1]) == 0 &&
				   strcmp(ptr ? ptr : "", bodies[i][2]) == 0;

		ck_assert_msg(a.status == 422 && ok, "%.100s: want 422 %s at '%s', got %d %.300s",
			      body, bodies[i][1] ? bodies[i][1] : "*", bodies[i][2], a.status,
			      a.text);
	}
}
END_TEST

/*
 * A ragged batch answers each item trimmed, through one item's scratch: as
 * large as the largest tensor answered, here the output [8192, 8], not the
 * [2, 8192, 8192] weights it does not ask for (512 MB, past the cap).
 */
START_TEST(test_ragged_scratch_sized_to_answer)
{
	const char *body = repeat(TINY "\"weights\":\"none\",\"tokens\":[[1", ",2", 8191, "],[3]]}");
	struct answer a;

	if (!cap_address_space((size_t)256 << 20))
		return;
	a = harness_attention(body);
	ck_assert_msg(a.status == 200, "got %d: %.300s", a.status, a.text);
	ck_assert_int_eq(json_array_size(json_array_get(harness_field(a.json, "output"), 0)), 8192);
	ck_assert_int_eq(json_array_size(json_array_get(harness_field(a.json, "output"), 1)), 1);
}
END_TEST

/* Nesting far deeper than any tensor: an error, not a crash. */
START_TEST(test_deep_nesting)
{
	const size_t depth = 100000;
	const char *body = harness_fmt(TINY "\"embeddings\":%s%s}", repeat("", "[", depth, ""),
				       repeat("", "]", depth, ""));

	ck_assert_int_eq(harness_status(API_ROUTE_ATTENTION, body, strlen(body)), 400);
	ck_assert_int_eq(harness_status(API_ROUTE_SDPA, body, strlen(body)), 400);
	/* within jansson's depth limit: a shape error */
	body = TINY "\"embeddings\":[[[[[[[[[[]]]]]]]]]]}";
	ck_assert_int_eq(harness_status(API_ROUTE_ATTENTION, body, strlen(body)), 422);
}
END_TEST

struct worker {
	const json_t *want; /* the answer every call must give */
	int bad;	    /* calls that did not */
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;

	for (int k = 0; k < 8; k++) {
		struct answer a =
		    harness_run_request(harness_service, API_ROUTE_ATTENTION, NULL, rich_body,
					strlen(rich_body), HARNESS_RESPONSE_MAX);
		static const char *const keys[] = {"output", "weights", "scores", "shape"};

		if (a.status != 200 || a.json == NULL)
			w->bad++;
		for (size_t i = 0; a.json != NULL && i < 4; i++)
			w->bad += !json_equal(json_object_get(a.json, keys[i]),
					      json_object_get(w->want, keys[i]));
		json_decref(a.json);
		free(a.text);
	}
	return NULL;
}

/* Concurrent calls on one service give the single-threaded answer. */
START_TEST(test_concurrent)
{
	struct answer ref = harness_attention(rich_body);
	struct worker w[4];
	pthread_t t[4];

	harness_expect_ok(&ref);
	for (size_t i = 0; i < 4; i++) {
		w[i].want = ref.json;
		w[i].bad = 0;
		ck_assert_int_eq(pthread_create(&t[i], NULL, worker_run, &w[i]), 0);
	}
	for (size_t i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		ck_assert_msg(w[i].bad == 0, "thread %zu: %d bad answers", i, w[i].bad);
	}
}
END_TEST

/* A call on svc, its answer checked as every answer is and kept in the arena. */
static struct answer call_on(const struct api_service *svc, enum api_route route, const char *body)
{
	struct answer a =
	    harness_run_request(svc, route, NULL, body, strlen(body), HARNESS_RESPONSE_MAX);

	harness_keep(a.text);
	harness_keep_json(a.json);
	harness_check_reply(&a, body, strlen(body));
	return a;
}

static void free_service(void *svc)
{
	api_service_free(svc);
}

/* n word tokens (id 1) on tiny, no weights. */
static const char *tiny_tokens(size_t n)
{
	return repeat(
	    "{\"model\":\"tiny\",\"weights\":\"none\",\"encoding\":\"base64\",\"tokens\":[", "1,",
	    n - 1, "1]}");
}

/*
 * The work limit (api_check_work). tiny on L tokens: the engine's FLOPs are
 * 32 L^2 + 512 L (usage.flops) and its scores 2 L^2, so its work is
 * 160 L^2 + 512 L: under a 1 GFLOP limit, 2490 tokens (0.993 GFLOP) run and
 * 2500 (1.001) are refused, as is an sdpa request of 4.4 GFLOP (q, k, v
 * [1, 1, 8000, 1]: 6.4e7 scores); 0 means no limit. (v2's infer runs the
 * same check: tests/daemon/check_server_ops.c.)
 */
START_TEST(test_work_limit)
{
	struct api_limits limits = harness_limits;
	struct api_service *own;
	struct api_error err;
	const char *col = repeat("{\"shape\":[1,1,8000,1],\"data\":[", "0,", 7999, "0]}");
	const char *sdpa = harness_fmt("{\"q\":%s,\"k\":%s,\"v\":%s}", col, col, col);
	struct answer a;

	limits.max_request_gflop = 1;
	own = api_service_new(&limits);
	if (own == NULL || api_service_add_builtins(own, &err) != 0) {
		api_service_free(own);
		ck_abort_msg("could not build the service");
	}
	harness_defer(free_service, own);
	a = call_on(own, API_ROUTE_ATTENTION, tiny_tokens(2490));
	harness_expect_ok(&a);
	ck_assert_double_eq(
	    json_number_value(json_object_get(harness_field(a.json, "usage"), "flops")),
	    32.0 * 2490 * 2490 + 512.0 * 2490);
	a = call_on(own, API_ROUTE_ATTENTION, tiny_tokens(2500));
	harness_expect_error(&a, 422, "request_too_expensive", "");
	ck_assert_msg(strstr(a.text, "about 1.001 GFLOP of work; the limit is 1 GFLOP") != NULL, "%s",
		      a.text);
	a = call_on(own, API_ROUTE_SDPA, sdpa);
	harness_expect_error(&a, 422, "request_too_expensive", "");
	ck_assert_msg(strstr(a.text, "about 4.352 GFLOP") != NULL, "%s", a.text);
	a = call_on(harness_service, API_ROUTE_ATTENTION, tiny_tokens(2500)); /* limit 0 */
	harness_expect_ok(&a);
}
END_TEST

/* A service of its own: no models yet, then one with a vocabulary. */
START_TEST(test_own_service)
{
	struct api_service *own = api_service_new(&harness_limits);
	static const char *const vocab[4] = {"a", "b", "c", "한국어"};
	struct attn_model_config cfg = {8, 2, 2, 0, 4};
	struct attn_model *m = NULL;
	struct attn_error aerr;
	struct api_error err;
	struct answer r[6];
	const char *bodies[6] = {
	    TINY EMB1 "}",
	    "{\"tokens\":[\"c\",\"a\",\"한국어\"]}",
	    "{\"tokens\":[2,0,3]}",
	    "{\"text\":\"c a 한국어\"}",
	    "{\"tokens\":[\"a\",\"z\"]}",
	    "{\"model\":\"v\",\"tokens\":[1]}",
	};
	json_t *want = harness_keep_json(json_pack("[sss]", "c", "a", "한국어"));

	ck_assert_ptr_nonnull(own);
	r[0] = harness_run_request(own, API_ROUTE_ATTENTION, NULL, bodies[0], strlen(bodies[0]),
				   HARNESS_RESPONSE_MAX); /* no model loaded */
	harness_keep(r[0].text);
	harness_keep_json(r[0].json);
	ck_assert_int_eq(r[0].status, 503);
	ck_assert(json_is_object(json_object_get(r[0].json, "error")));
	if (attn_model_new_seeded(&m, &cfg, 9, &aerr) != 0 ||
	    api_service_add_model(own, "v", m, "seed:9", vocab, &err) != 0) {
		api_service_free(own);
		ck_abort_msg("could not add a model");
	}
	m = NULL;
	ck_assert_int_eq(api_service_add_model(own, "v", NULL, NULL, NULL, &err), -1); /* taken */
	ck_assert_int_eq(err.status, 422);
	/* names that mean something else in answers and in the metrics' labels */
	for (size_t i = 0; i < 3; i++) {
		static const char *const reserved[] = {"inline", "none", "sdpa"};

		ck_assert_int_eq(api_service_add_model(own, reserved[i], NULL, NULL, NULL, &err),
				 -1);
		ck_assert_msg(strstr(err.message, "is reserved") != NULL, "%s", err.message);
	}
	ck_assert_int_eq(api_service_set_default(own, "nope", &err), -1);
	ck_assert_int_eq(err.status, 404);
	for (size_t i = 1; i < 6; i++) {
		r[i] = harness_run_request(own, API_ROUTE_ATTENTION, NULL, bodies[i],
					   strlen(bodies[i]), HARNESS_RESPONSE_MAX);
		harness_keep(r[i].text);
		harness_keep_json(r[i].json);
	}
	api_service_free(own);
	for (size_t i = 1; i < 6; i++)
		harness_check_reply(&r[i], bodies[i], strlen(bodies[i]));
	/* string tokens map through the vocabulary; ids echo their strings */
	harness_expect_ok(&r[1]);
	harness_expect_ok(&r[2]);
	harness_expect_ok(&r[3]);
	tensor_assert_same(&r[1], &r[2], "output", 0, 0);
	tensor_assert_same(&r[1], &r[3], "output", 0, 0);
	harness_expect_tokens(&r[1], want);
	harness_expect_tokens(&r[2], want);
	harness_expect_error(&r[4], 422, "unknown_token", "/tokens/1");
	harness_expect_ok(&r[5]);
}
END_TEST

static Suite *robustness_suite(void)
{
	Suite *s = suite_create("api_robustness");
	TCase *tc = harness_tcase(s, "robustness", 600);

	tcase_add_test(tc, test_truncated_bodies);
	tcase_add_test(tc, test_mutated_bodies);
	tcase_add_test(tc, test_response_limit);
	tcase_add_test(tc, test_request_too_large);
	tcase_add_test(tc, test_deep_nesting);
	tcase_add_test(tc, test_declared_sizes_unallocated);
	tcase_add_test(tc, test_ragged_scratch_sized_to_answer);
	tcase_add_test(tc, test_concurrent);
	tcase_add_test(tc, test_own_service);
	tcase_add_test(tc, test_work_limit);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {
	    .setup = harness_setup,
	    .teardown = harness_teardown,
	};

	return suite_main(argc, argv, robustness_suite, &opts);
}
