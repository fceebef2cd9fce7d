/*
 * api_harness.c: the arena, the calls and the checks the check_api_* suites
 * share (see api_harness.h).
 */
#include "api_harness.h"

#include <cblas.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/registry.h" /* tiny's embedding table */

const float harness_x3[3][8] = {
    {0.5f, -0.25f, 0.125f, 1, 0, -1, 0.75f, 0.25f},
    {0.8f, -0.2f, 0.3f, 0.1f, -0.5f, 0.6f, 0.2f, 0.1f},
    {-0.3f, 0.2f, 0.9f, -0.4f, 0.5f, 0.1f, 0.7f, -0.8f},
};

const struct api_limits harness_limits = {
    .max_request_bytes = HARNESS_REQUEST_MAX,
    .max_response_bytes = HARNESS_RESPONSE_MAX,
    .max_inline_d_model = 1024,
    .engine_threads = 1,
};

struct api_service *harness_service;

/* ------------------------------------------------------------------------ */
/* The arena: everything a test holds, released by the teardown              */
/* ------------------------------------------------------------------------ */

enum { ARENA_MAX = 1 << 15 };

static struct held {
	void (*release)(void *);
	void *p;
} arena[ARENA_MAX];
static size_t arena_n;

static void hold(void (*release)(void *), void *p)
{
	if (arena_n == ARENA_MAX)
		release(p);
	ck_assert_msg(arena_n < ARENA_MAX, "test arena full");
	arena[arena_n].release = release;
	arena[arena_n].p = p;
	arena_n++;
}

static void json_release(void *j)
{
	json_decref(j);
}

void *harness_keep(void *p)
{
	ck_assert_msg(p != NULL, "out of memory");
	hold(free, p);
	return p;
}

json_t *harness_keep_json(json_t *j)
{
	if (j != NULL)
		hold(json_release, j);
	return j;
}

void harness_defer(void (*release)(void *), void *obj)
{
	hold(release, obj);
}

size_t harness_mark(void)
{
	return arena_n;
}

void harness_release_to(size_t mark)
{
	while (arena_n > mark) {
		arena_n--;
		arena[arena_n].release(arena[arena_n].p);
	}
}

static void arena_release(void)
{
	harness_release_to(0);
}

TCase *harness_tcase(Suite *s, const char *name, int timeout)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, NULL, arena_release);
	tcase_set_timeout(tc, timeout);
	suite_add_tcase(s, tc);
	return tc;
}

int harness_setup(void)
{
	struct api_error err;

	openblas_set_num_threads(1);
	harness_service = api_service_new(&harness_limits);
	if (harness_service == NULL || api_service_add_builtins(harness_service, &err) != 0) {
		fprintf(stderr, "api_harness: cannot build the built-in models\n");
		harness_teardown();
		return -1;
	}
	return 0;
}

void harness_teardown(void)
{
	api_service_free(harness_service);
	harness_service = NULL;
}

const char *harness_fmt(const char *f, ...)
{
	va_list ap;
	int n;
	char *s;

	va_start(ap, f);
	n = vsnprintf(NULL, 0, f, ap);
	va_end(ap);
	ck_assert_int_ge(n, 0);
	s = harness_keep(malloc((size_t)n + 1));
	va_start(ap, f);
	vsnprintf(s, (size_t)n + 1, f, ap);
	va_end(ap);
	return s;
}

uint64_t harness_fnv1a(const char *s)
{
	uint64_t h = UINT64_C(14695981039346656037);

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= UINT64_C(1099511628211);
	}
	return h;
}

/* ------------------------------------------------------------------------ */
/* Calling the API                                                          */
/* ------------------------------------------------------------------------ */

struct answer harness_run_request(const struct api_service *s, enum api_route route,
				  const char *param, const char *body, size_t len, size_t max_body)
{
	struct api_reply reply;
	struct answer a;
	struct timespec t0, t1;
	char *exact = NULL; /* the body in a buffer of exactly len bytes, no NUL:
			       sanitizers and valgrind see any read past the end */

	memset(&a, 0, sizeof(a));
	if (body != NULL) {
		exact = malloc(len ? len : 1);
		if (exact == NULL)
			return a;
		memcpy(exact, body, len);
	}
	api_reply_init(&reply, max_body);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	api_handle(s, route, param, exact, len, &reply);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	free(exact);
	a.ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
	a.status = reply.status;
	a.code = reply.error_code;
	a.ctype = reply.content_type;
	a.text = malloc(reply.body.len + 1);
	if (a.text != NULL) {
		if (reply.body.len > 0)
			memcpy(a.text, reply.body.data, reply.body.len);
		a.text[reply.body.len] = '\0';
		a.json = json_loadb(a.text, reply.body.len, JSON_REJECT_DUPLICATES, NULL);
	}
	api_reply_release(&reply);
	return a;
}

void harness_check_reply(const struct answer *a, const char *body, size_t len)
{
	int n = (int)(len < 200 ? len : 200);
	const json_t *e, *code, *msg, *ptr;

	ck_assert_msg(a->text != NULL, "out of memory");
	ck_assert_msg(a->status >= 200 && a->status < 500, "status %d for %.*s: %.400s", a->status,
		      n, body ? body : "", a->text);
	ck_assert_msg(json_is_object(a->json), "incomplete body for %.*s: %.400s", n,
		      body ? body : "", a->text);
	ck_assert_msg(a->ctype != NULL && strcmp(a->ctype, "application/json") == 0,
		      "content type %s", a->ctype ? a->ctype : "(null)");
	e = json_object_get(a->json, "error");
	if (a->status < 300) {
		ck_assert_msg(e == NULL && a->code == NULL, "a %d with an error: %.300s", a->status,
			      a->text);
		return;
	}
	code = json_object_get(e, "code");
	msg = json_object_get(e, "message");
	ptr = json_object_get(e, "pointer");
	ck_assert_msg(json_object_size(a->json) == 1 && json_is_string(code) &&
			  json_is_string(msg) && json_string_length(msg) > 0,
		      "not the error shape: %.300s", a->text);
	ck_assert_msg(json_object_size(e) == 2u + (ptr != NULL), "extra error fields: %.300s",
		      a->text);
	ck_assert_msg(ptr == NULL || (json_is_string(ptr) && (json_string_length(ptr) == 0 ||
							      json_string_value(ptr)[0] == '/')),
		      "not a JSON pointer: %.300s", a->text);
	ck_assert_msg(a->code != NULL && strcmp(a->code, json_string_value(code)) == 0,
		      "reply.error_code %s, body %.300s", a->code ? a->code : "(null)", a->text);
}

struct answer harness_call_len(enum api_route route, const char *param, const char *body,
			       size_t len)
{
	struct answer a =
	    harness_run_request(harness_service, route, param, body, len, HARNESS_RESPONSE_MAX);

	harness_keep(a.text);
	harness_keep_json(a.json);
	harness_check_reply(&a, body, len);
	return a;
}

struct answer harness_call(enum api_route route, const char *param, const char *body)
{
	return harness_call_len(route, param, body, body ? strlen(body) : 0);
}

struct answer harness_attention(const char *body)
{
	return harness_call(API_ROUTE_ATTENTION, NULL, body);
}

struct answer harness_sdpa(const char *body)
{
	return harness_call(API_ROUTE_SDPA, NULL, body);
}

struct answer harness_call_json(enum api_route route, json_t *req)
{
	char *body;

	ck_assert_msg(req != NULL, "could not build the request");
	harness_keep_json(req);
	body = harness_keep(json_dumps(req, JSON_COMPACT));
	return harness_call(route, NULL, body);
}

struct answer harness_attention_json(json_t *req)
{
	return harness_call_json(API_ROUTE_ATTENTION, req);
}

int harness_status(enum api_route route, const char *body, size_t len)
{
	size_t mark = harness_mark();
	struct answer a = harness_call_len(route, NULL, body, len);

	/* release at once: loops make thousands of calls */
	harness_release_to(mark);
	return a.status;
}

void harness_expect_ok(const struct answer *a)
{
	ck_assert_msg(a->status == 200, "status %d: %.400s", a->status, a->text);
}

void harness_expect_error(const struct answer *a, int status, const char *code, const char *pointer)
{
	const json_t *e = json_object_get(a->json, "error");
	const char *got_code = json_string_value(json_object_get(e, "code"));
	const char *got_ptr = json_string_value(json_object_get(e, "pointer"));

	ck_assert_msg(a->status == status && got_code != NULL && strcmp(got_code, code) == 0 &&
			  (pointer == NULL || strcmp(got_ptr ? got_ptr : "", pointer) == 0),
		      "want %d %s at '%s', got %d: %.400s", status, code, pointer ? pointer : "*",
		      a->status, a->text);
}

void harness_expect_message(const struct answer *a, const char *said)
{
	const json_t *e = json_object_get(a->json, "error");
	const char *msg = json_string_value(json_object_get(e, "message"));

	ck_assert_msg(msg != NULL && strstr(msg, said) != NULL, "want a message with '%s', got %d: %.400s",
		      said, a->status, a->text);
}

void harness_expect_tokens(const struct answer *a, const json_t *want)
{
	ck_assert_msg(json_equal(harness_field(a->json, "tokens"), want), "tokens echo: %.200s",
		      a->text);
}

json_t *harness_field(const json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	ck_assert_msg(v != NULL, "no field '%s' in %.300s", key,
		      json_is_object(obj) ? "the object" : "a non-object");
	return v;
}

long long harness_int_field(const json_t *obj, const char *key)
{
	const json_t *v = harness_field(obj, key);

	ck_assert_msg(json_is_integer(v), "'%s' is not an integer", key);
	return json_integer_value(v);
}

/* ------------------------------------------------------------------------ */
/* The tiny model                                                           */
/* ------------------------------------------------------------------------ */

struct answer harness_tiny3(const char *extra)
{
	return harness_attention(harness_fmt(TINY EMB3 "%s}", extra));
}

struct answer harness_tiny_batch(const char *extra)
{
	return harness_attention(harness_fmt(TINY "\"embeddings\":[" X3 "," X3R "]%s}", extra));
}

const struct attn_model *harness_tiny_model(void)
{
	const struct api_model_entry *e = registry_find(harness_service, "tiny");

	ck_assert_ptr_nonnull(e);
	return e->model;
}
