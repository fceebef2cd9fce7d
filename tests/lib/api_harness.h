/*
 * api_harness.h: what the API suites (check_api_decode, _options, _numbers,
 * _validation, _sdpa, _get, _robustness) share to drive the API layer
 * (api/) through its one entry point, api_handle, on a service holding the
 * built-in models (`base`: E 512, H 8, vocab 32000; `tiny`: E 8, H 2, vocab 64).
 *
 * harness_call checks what must hold for every reply, whatever the body: a
 * status below 500, a complete JSON object, content type application/json,
 * and on failure the one error shape {"error": {"code", "message", "pointer"?}}.
 *
 * Ownership: harness_setup builds the service once, before the suite runs
 * (suite_main.h: .setup = harness_setup, .teardown = harness_teardown); it
 * is read-only and forked tests inherit it. Whatever a test allocates goes to
 * the arena (harness_keep, harness_keep_json, harness_defer), which the
 * checked teardown of every harness_tcase releases, last in first out: even
 * a failing test leaks nothing under CK_FORK=no. Every function and global
 * here starts with harness_: the Makefile links this file into every test
 * binary. The macros and struct answer are for the API suites, which include
 * this header.
 */
#ifndef ATTN_TESTS_API_HARNESS_H
#define ATTN_TESTS_API_HARNESS_H

#include <check.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "api/service.h"

struct attn_model;

#define HARNESS_RESPONSE_MAX ((size_t)64 << 20)
#define HARNESS_REQUEST_MAX ((size_t)256 << 20)

/*
 * Tolerances: golden numbers within 1e-5 + 1e-4 |x| (tests/data/fixtures/README.md);
 * two answers that must agree by the maths within 1e-6 + 1e-5 |x|; -inf cells
 * always exactly.
 */
#define TOL_ABS 1e-5
#define TOL_REL 1e-4
#define SAME_ABS 1e-6
#define SAME_REL 1e-5

/* Request fragments for the tiny model (E = 8). */
#define R0 "[0.5,-0.25,0.125,1,0,-1,0.75,0.25]"
#define R1 "[0.8,-0.2,0.3,0.1,-0.5,0.6,0.2,0.1]"
#define R2 "[-0.3,0.2,0.9,-0.4,0.5,0.1,0.7,-0.8]"
#define R3 "[0.25,0.5,-0.75,0.3,0.2,-0.1,0.4,0.6]"
#define R0_B64 "AAAAPwAAgL4AAAA+AACAPwAAAAAAAIC/AABAPwAAgD4=" /* R0 as float32 LE */
#define X3 "[" R0 "," R1 "," R2 "]"			      /* [3, 8] */
#define X3R "[" R3 "," R2 "," R1 "]"
#define TINY "{\"model\":\"tiny\","
#define EMB1 "\"embeddings\":[" R0 "]"
#define EMB3 "\"embeddings\":" X3
#define TRIL3 "[[true,false,false],[true,true,false],[true,true,true]]"
#define ALL3 "[[true,true,true],[true,true,true],[true,true,true]]"
#define NEG3 "[[0,\"-Infinity\",\"-Infinity\"],[0,0,\"-Infinity\"],[0,0,0]]"

/* ... and for /v1/sdpa. */
#define SQ "[[[[1,0],[0,1]]]]" /* a [1, 1, 2, 2] tensor */
#define SDPA_QKV "{\"q\":" SQ ",\"k\":" SQ ",\"v\":" SQ

/* X3 as floats. */
extern const float harness_x3[3][8];

/* The service's limits: 256 MB a request, 64 MB a response, inline d_model <= 1024, 1 thread. */
extern const struct api_limits harness_limits;

/* The service of the built-in models, built by harness_setup; read-only. */
extern struct api_service *harness_service;

/* One reply to one request. */
struct answer {
	int status;
	json_t *json;	   /* the parsed body, or NULL when it is not JSON */
	char *text;	   /* the body, NUL-terminated */
	const char *code;  /* reply.error_code */
	const char *ctype; /* reply.content_type */
	double ms;	   /* wall time of api_handle */
};

/*
 * The set-up and tear-down of an API suite's run (struct suite_main_opts):
 * one BLAS thread (the server's model, and reproducible numbers), then the
 * service. harness_setup returns 0, or -1 (said on stderr, nothing held)
 * when the models cannot be built; harness_teardown frees the service.
 */
int harness_setup(void);
void harness_teardown(void);

/* A TCase of s whose teardown releases the arena. */
TCase *harness_tcase(Suite *s, const char *name, int timeout);

/* Takes ownership of p (asserting it is not NULL) until the teardown. */
void *harness_keep(void *p) __attribute__((returns_nonnull));

/* Takes a reference of j until the teardown (NULL passes through). */
json_t *harness_keep_json(json_t *j);

/* release(obj) at the teardown, before anything kept earlier is released. */
void harness_defer(void (*release)(void *), void *obj);

/* The arena's depth now; harness_release_to(mark) releases what came after. */
size_t harness_mark(void);
void harness_release_to(size_t mark);

/* A formatted string in the arena. */
const char *harness_fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

/* FNV-1a 64 of the UTF-8 bytes: the documented stable token hash. */
uint64_t harness_fnv1a(const char *s);

/* Runs one request on s; the caller owns a.json and a.text (checked by nothing yet). */
struct answer harness_run_request(const struct api_service *s, enum api_route route,
				  const char *param, const char *body, size_t len, size_t max_body);

/* What holds for every reply to anything a client can send. */
void harness_check_reply(const struct answer *a, const char *body, size_t len);

/* One checked request on the service; the answer is in the arena. */
struct answer harness_call_len(enum api_route route, const char *param, const char *body,
			       size_t len);
struct answer harness_call(enum api_route route, const char *param, const char *body);
struct answer harness_attention(const char *body);
struct answer harness_sdpa(const char *body);

/* Dumps req (stolen) and posts it to route. */
struct answer harness_call_json(enum api_route route, json_t *req);
struct answer harness_attention_json(json_t *req);

/* The status of one request, checked and released at once (for loops). */
int harness_status(enum api_route route, const char *body, size_t len);

void harness_expect_ok(const struct answer *a);

/* The error: status, code and JSON pointer ("" = none; NULL = not checked). */
void harness_expect_error(const struct answer *a, int status, const char *code,
			  const char *pointer);

/* The error's message holds `said`. */
void harness_expect_message(const struct answer *a, const char *said);

/* The answer echoes the tokens want. */
void harness_expect_tokens(const struct answer *a, const json_t *want);

/* obj[key], asserted present (borrowed). */
json_t *harness_field(const json_t *obj, const char *key);

/* obj[key], asserted an integer. */
long long harness_int_field(const json_t *obj, const char *key);

/* tiny on X3 with extra top-level fields (",\"mask\":..."). */
struct answer harness_tiny3(const char *extra);

/* tiny on the batch [X3, X3R]. */
struct answer harness_tiny_batch(const char *extra);

/* The tiny model of the service (its embedding table, to check token lookup). */
const struct attn_model *harness_tiny_model(void);

#endif
