/*
 * check_api.c: the API layer (api/) driven through its one entry point,
 * api_handle, on a service holding the built-in models (`base`: E 512, H 8,
 * vocab 32000; `tiny`: E 8, H 2, vocab 64).
 *
 * Every test builds request bodies, calls api_handle and reads the reply with
 * jansson. call() checks what must hold for every reply, whatever the body:
 * a status below 500, a complete JSON object, content type application/json,
 * and on failure the one error shape {"error": {"code", "message", "pointer"?}}.
 *
 * TCases:
 *   decode      inputs: embeddings [L, E] / [B, L, E] (ragged), tokens, text,
 *               key / value for cross-attention, inline seeded models
 *   mask        every mask form, checked by its equivalences and zeros
 *   positional  RoPE, ALiBi and sinusoidal parameters, checked by invariants
 *   options     scale, softcap, weights, scores, encodings, precision
 *   numbers     the seeds' numpy demo, PyTorch cases, and every golden fixture
 *               in tests/fixtures/mha (or $ATTN_FIXTURES/mha) as a request
 *   validation  a table of bad requests: status, code and JSON pointer
 *   sdpa        POST /v1/sdpa on the ONNX conformance cases in
 *               ../shared/conformance/onnx-attention (or $ATTN_ONNX_DIR)
 *   get         GET /v1/models, /v1/models/{name}, /version, /openapi.json
 *   robustness  truncated and mutated bodies, the memory and response limits,
 *               concurrent calls
 *
 * Tolerances: golden numbers within 1e-5 + 1e-4 |x| (tests/fixtures/README.md);
 * ONNX float32 outputs within 1e-5 and float16 outputs within 1 float16 ulp
 * after rounding ours (that folder's README); two answers that must agree by
 * the maths within 1e-6 + 1e-5 |x|; -inf cells always exactly.
 *
 * Ownership: main builds the service once; it is read-only and forked tests
 * inherit it. Whatever a test allocates goes to an arena that the checked
 * teardown frees, so even a failing test leaks nothing under CK_FORK=no.
 */
#include <cblas.h>
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "registry.h" /* tiny's embedding table, to check token lookup */
#include "service.h"

#define RESPONSE_MAX ((size_t)64 << 20)
#define REQUEST_MAX ((size_t)256 << 20)
#define TOL_ABS 1e-5 /* golden numbers */
#define TOL_REL 1e-4
#define SAME_ABS 1e-6 /* two answers equal by the maths */
#define SAME_REL 1e-5
#define ONNX_CASE_COUNT 76
#define ONNX_DEFAULT_DIR "../shared/conformance/onnx-attention"
#define FIXTURES_DEFAULT_DIR "tests/fixtures"
#define MIN_FIXTURES 30

static struct api_service *svc; /* built in main; read-only */

/* ------------------------------------------------------------------------ */
/* The arena: everything a test allocates, freed by the teardown             */
/* ------------------------------------------------------------------------ */

enum { ARENA_MAX = 1 << 14 };
static void *arena[ARENA_MAX];
static size_t arena_n;
static json_t *jarena[ARENA_MAX];
static size_t jarena_n;

static void *keep(void *p) __attribute__((returns_nonnull));

/* Takes ownership of p (asserting it is not NULL) until the teardown. */
static void *keep(void *p)
{
	ck_assert_msg(p != NULL, "out of memory");
	if (arena_n == ARENA_MAX)
		free(p);
	ck_assert_msg(arena_n < ARENA_MAX, "test arena full");
	arena[arena_n++] = p;
	return p;
}

/* Takes a reference (NULL passes through). */
static json_t *keep_json(json_t *j)
{
	if (j == NULL)
		return NULL;
	if (jarena_n == ARENA_MAX)
		json_decref(j);
	ck_assert_msg(jarena_n < ARENA_MAX, "test arena full");
	jarena[jarena_n++] = j;
	return j;
}

static struct rlimit saved_as; /* the address-space limit before cap_address_space */
static int as_capped;

/*
 * Caps the address space at its current size + extra bytes, so that an
 * allocation a request should not make fails (the teardown lifts the cap).
 * Returns 0 where that cannot work: ASan and valgrind need the room.
 */
static int cap_address_space(size_t extra)
{
#if defined(__SANITIZE_ADDRESS__)
	(void)extra;
	return 0;
#else
	const char *preload = getenv("LD_PRELOAD");
	unsigned long pages = 0;
	struct rlimit cap;
	FILE *f;

	if (preload != NULL && strstr(preload, "valgrind") != NULL)
		return 0;
	f = fopen("/proc/self/statm", "r");
	if (f == NULL)
		return 0;
	if (fscanf(f, "%lu", &pages) != 1)
		pages = 0;
	fclose(f);
	if (pages == 0 || getrlimit(RLIMIT_AS, &saved_as) != 0)
		return 0;
	cap = saved_as;
	cap.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + extra;
	if (saved_as.rlim_cur != RLIM_INFINITY && cap.rlim_cur > saved_as.rlim_cur)
		return 0;
	if (setrlimit(RLIMIT_AS, &cap) != 0)
		return 0;
	as_capped = 1;
	return 1;
#endif
}

static void arena_release(void)
{
	if (as_capped) {
		setrlimit(RLIMIT_AS, &saved_as);
		as_capped = 0;
	}
	while (arena_n > 0)
		free(arena[--arena_n]);
	while (jarena_n > 0)
		json_decref(jarena[--jarena_n]);
}

static const char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

/* A formatted string in the arena. */
static const char *fmt(const char *f, ...)
{
	va_list ap;
	int n;
	char *s;

	va_start(ap, f);
	n = vsnprintf(NULL, 0, f, ap);
	va_end(ap);
	ck_assert_int_ge(n, 0);
	s = keep(malloc((size_t)n + 1));
	va_start(ap, f);
	vsnprintf(s, (size_t)n + 1, f, ap);
	va_end(ap);
	return s;
}

/* head, then unit count times, then tail: a long body, in the arena. */
static const char *repeat(const char *head, const char *unit, size_t count, const char *tail)
{
	size_t h = strlen(head), u = strlen(unit), t = strlen(tail);
	char *s = keep(malloc(h + u * count + t + 1));

	memcpy(s, head, h);
	for (size_t i = 0; i < count; i++)
		memcpy(s + h + i * u, unit, u);
	memcpy(s + h + u * count, tail, t + 1);
	return s;
}

/* ------------------------------------------------------------------------ */
/* Calling the API                                                          */
/* ------------------------------------------------------------------------ */

struct answer {
	int status;
	json_t *json;	   /* the parsed body, or NULL when it is not JSON */
	char *text;	   /* the body, NUL-terminated */
	const char *code;  /* reply.error_code */
	const char *ctype; /* reply.content_type */
	double ms;	   /* wall time of api_handle */
};

/* Runs one request; the caller owns a.json and a.text (checked by nothing yet). */
static struct answer run_request(const struct api_service *s, enum api_route route,
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

/* What holds for every reply to anything a client can send. */
static void check_reply(const struct answer *a, const char *body, size_t len)
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

static struct answer call_len(enum api_route route, const char *param, const char *body, size_t len)
{
	struct answer a = run_request(svc, route, param, body, len, RESPONSE_MAX);

	keep(a.text);
	keep_json(a.json);
	check_reply(&a, body, len);
	return a;
}

static struct answer call(enum api_route route, const char *param, const char *body)
{
	return call_len(route, param, body, body ? strlen(body) : 0);
}

static struct answer attention(const char *body)
{
	return call(API_ROUTE_ATTENTION, NULL, body);
}

static struct answer sdpa(const char *body)
{
	return call(API_ROUTE_SDPA, NULL, body);
}

/* Dumps req (stolen) and posts it to route. */
static struct answer call_json(enum api_route route, json_t *req)
{
	char *body;

	ck_assert_msg(req != NULL, "could not build the request");
	keep_json(req);
	body = keep(json_dumps(req, JSON_COMPACT));
	return call(route, NULL, body);
}

static struct answer attention_json(json_t *req)
{
	return call_json(API_ROUTE_ATTENTION, req);
}

/* The status of one request, checked and freed at once (for loops). */
static int call_status(enum api_route route, const char *body, size_t len)
{
	struct answer a = run_request(svc, route, NULL, body, len, RESPONSE_MAX);
	int status = a.status;

	keep(a.text);
	keep_json(a.json);
	check_reply(&a, body, len);
	/* release at once: loops make thousands of calls */
	arena_n--;
	free(a.text);
	if (a.json != NULL) {
		jarena_n--;
		json_decref(a.json);
	}
	return status;
}

static void expect_ok(const struct answer *a)
{
	ck_assert_msg(a->status == 200, "status %d: %.400s", a->status, a->text);
}

/* The error: status, code and JSON pointer ("" = none; NULL = not checked). */
static void expect_error(const struct answer *a, int status, const char *code, const char *pointer)
{
	const json_t *e = json_object_get(a->json, "error");
	const char *got_code = json_string_value(json_object_get(e, "code"));
	const char *got_ptr = json_string_value(json_object_get(e, "pointer"));

	ck_assert_msg(a->status == status && got_code != NULL && strcmp(got_code, code) == 0 &&
			  (pointer == NULL || strcmp(got_ptr ? got_ptr : "", pointer) == 0),
		      "want %d %s at '%s', got %d: %.400s", status, code, pointer ? pointer : "*",
		      a->status, a->text);
}

static json_t *field(const json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	ck_assert_msg(v != NULL, "no field '%s' in %.300s", key,
		      json_is_object(obj) ? "the object" : "a non-object");
	return v;
}

static long long int_field(const json_t *obj, const char *key)
{
	const json_t *v = field(obj, key);

	ck_assert_msg(json_is_integer(v), "'%s' is not an integer", key);
	return json_integer_value(v);
}

/* ------------------------------------------------------------------------ */
/* base64 (RFC 4648), written here to check the API's independently         */
/* ------------------------------------------------------------------------ */

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static const char *b64_encode(const void *data, size_t n)
{
	const uint8_t *p = data;
	char *out = keep(malloc((n + 2) / 3 * 4 + 1)), *o = out;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		*o++ = b64_alphabet[(v >> 18) & 63];
		*o++ = b64_alphabet[(v >> 12) & 63];
		*o++ = i + 1 < n ? b64_alphabet[(v >> 6) & 63] : '=';
		*o++ = i + 2 < n ? b64_alphabet[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

/* Decodes strict padded base64 into out (room for n / 4 * 3); -1 when invalid. */
static long b64_decode(uint8_t *out, const char *in, size_t n)
{
	size_t len = 0;

	if (n % 4 != 0)
		return -1;
	for (size_t i = 0; i < n; i += 4) {
		uint32_t v = 0;
		int pad = 0;

		for (size_t k = 0; k < 4; k++) {
			const char *c = strchr(b64_alphabet, in[i + k]);

			if (in[i + k] == '=' && i + 4 == n && k >= 2) {
				pad++;
				v <<= 6;
				continue;
			}
			if (c == NULL || in[i + k] == '\0' || pad > 0)
				return -1;
			v = (v << 6) | (uint32_t)(c - b64_alphabet);
		}
		out[len++] = (uint8_t)(v >> 16);
		if (pad < 2)
			out[len++] = (uint8_t)(v >> 8);
		if (pad < 1)
			out[len++] = (uint8_t)v;
	}
	return (long)len;
}

/* ------------------------------------------------------------------------ */
/* Tensors in answers and fixtures                                           */
/* ------------------------------------------------------------------------ */

/* A tensor read back from JSON: flat, row-major, outermost first. */
struct flat {
	float *x; /* in the arena */
	size_t n, rank, shape[6];
};

/* A number, or one of the strings JSON uses for non-finite floats. */
static float cell_value(const json_t *v)
{
	const char *s = json_string_value(v);

	if (json_is_number(v))
		return (float)json_number_value(v);
	ck_assert_msg(s != NULL, "a tensor cell is neither a number nor a string");
	if (strcmp(s, "-Infinity") == 0)
		return -INFINITY;
	if (strcmp(s, "Infinity") == 0)
		return INFINITY;
	ck_assert_msg(strcmp(s, "NaN") == 0, "a tensor cell is the string '%s'", s);
	return NAN;
}

static void flat_fill(const json_t *v, struct flat *f, size_t d, size_t *pos)
{
	if (d == f->rank) {
		ck_assert_msg(!json_is_array(v), "a tensor nested deeper than its first row");
		f->x[(*pos)++] = cell_value(v);
		return;
	}
	ck_assert_msg(json_is_array(v) && json_array_size(v) == f->shape[d],
		      "a ragged tensor where a regular one is expected (axis %zu)", d);
	for (size_t k = 0; k < f->shape[d]; k++)
		flat_fill(json_array_get(v, k), f, d + 1, pos);
}

static struct flat flat_base64(const json_t *v)
{
	const json_t *shape = field(v, "shape"), *b64 = field(v, "base64");
	struct flat f;
	uint8_t *bytes;
	long got;

	memset(&f, 0, sizeof(f));
	ck_assert_msg(json_object_size(v) == 2, "a base64 tensor has only shape and base64");
	ck_assert_msg(json_is_array(shape) && json_array_size(shape) <= 6, "bad base64 shape");
	f.rank = json_array_size(shape);
	f.n = 1;
	for (size_t a = 0; a < f.rank; a++) {
		f.shape[a] = (size_t)json_integer_value(json_array_get(shape, a));
		f.n *= f.shape[a];
	}
	ck_assert_msg(json_is_string(b64), "base64 is not a string");
	bytes = keep(malloc(json_string_length(b64) / 4 * 3 + 4));
	got = b64_decode(bytes, json_string_value(b64), json_string_length(b64));
	ck_assert_msg(got == (long)(f.n * sizeof(float)), "base64 decodes to %ld bytes, want %zu",
		      got, f.n * sizeof(float));
	f.x = keep(malloc(f.n * sizeof(float) + 1));
	memcpy(f.x, bytes, f.n * sizeof(float)); /* little-endian float32, as the host */
	return f;
}

/* Reads nested arrays or {"shape", "base64"}; asserts the tensor is regular. */
static struct flat flat_of(const json_t *v)
{
	struct flat f;
	const json_t *cur = v;
	size_t pos = 0;

	if (json_is_object(v))
		return flat_base64(v);
	memset(&f, 0, sizeof(f));
	f.n = 1;
	while (json_is_array(cur)) {
		ck_assert_msg(f.rank < 6, "tensor rank above 6");
		f.shape[f.rank++] = json_array_size(cur);
		f.n *= json_array_size(cur);
		cur = json_array_get(cur, 0);
	}
	ck_assert_msg(f.rank > 0, "not a tensor");
	f.x = keep(malloc(f.n * sizeof(float) + 1));
	flat_fill(v, &f, 0, &pos);
	return f;
}

static struct flat tensor_at(const struct answer *a, const char *key)
{
	return flat_of(field(a->json, key));
}

/* Item b of a per-item answer (a ragged batch comes back as a list). */
static struct flat item_at(const struct answer *a, const char *key, size_t b)
{
	const json_t *v = field(a->json, key);

	ck_assert_msg(json_is_array(v) && b < json_array_size(v), "'%s' has no item %zu", key, b);
	return flat_of(json_array_get(v, b));
}

static void assert_shape(const char *what, const struct flat *f, size_t rank, ...)
{
	va_list ap;
	char want[96] = "", got[96] = "";
	int ok = f->rank == rank;

	va_start(ap, rank);
	for (size_t a = 0; a < rank; a++) {
		size_t d = (size_t)va_arg(ap, int);

		ok = ok && f->shape[a] == d;
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%zu", a ? "," : "",
			 d);
	}
	va_end(ap);
	for (size_t a = 0; a < f->rank; a++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%zu", a ? "," : "",
			 f->shape[a]);
	ck_assert_msg(ok, "%s: shape [%s], want [%s]", what, got, want);
}

/* |got - want| <= atol + rtol |want|; infinities and NaN only match themselves. */
static int near(double got, double want, double atol, double rtol)
{
	if (isnan(want))
		return isnan(got);
	if (isinf(want) || isinf(got))
		return got == want;
	return fabs(got - want) <= atol + rtol * fabs(want);
}

static void assert_near_n(const char *what, const float *got, const float *want, size_t n,
			  double atol, double rtol)
{
	for (size_t k = 0; k < n; k++)
		ck_assert_msg(near(got[k], want[k], atol, rtol), "%s[%zu] = %.9g, want %.9g", what,
			      k, (double)got[k], (double)want[k]);
}

static void assert_flat_near(const char *what, const struct flat *got, const struct flat *want,
			     double atol, double rtol)
{
	ck_assert_msg(got->rank == want->rank &&
			  memcmp(got->shape, want->shape, got->rank * sizeof(size_t)) == 0,
		      "%s: shapes differ (rank %zu vs %zu)", what, got->rank, want->rank);
	assert_near_n(what, got->x, want->x, got->n, atol, rtol);
}

/* The tensor `key` of two answers agrees within the tolerance (0, 0: equal). */
static void assert_same(const struct answer *a, const struct answer *b, const char *key,
			double atol, double rtol)
{
	struct flat x = tensor_at(a, key), y = tensor_at(b, key);

	assert_flat_near(key, &x, &y, atol, rtol);
}

/* The largest |a - b| of the tensor `key` of two answers of one shape. */
static double max_diff(const struct answer *a, const struct answer *b, const char *key)
{
	struct flat x = tensor_at(a, key), y = tensor_at(b, key);
	double m = 0;

	ck_assert_uint_eq(x.n, y.n);
	for (size_t k = 0; k < x.n; k++)
		m = fmax(m, fabs((double)x.x[k] - (double)y.x[k]));
	return m;
}

/* A JSON array of floats (numbers, or the strings for non-finite values). */
static float *floats_of(const json_t *arr, size_t *n)
{
	float *x;

	ck_assert_msg(json_is_array(arr), "not an array of floats");
	*n = json_array_size(arr);
	x = keep(malloc(*n * sizeof(float) + 1));
	for (size_t k = 0; k < *n; k++)
		x[k] = cell_value(json_array_get(arr, k));
	return x;
}

static json_t *jfloats(const float *x, size_t n)
{
	json_t *arr = json_array();

	for (size_t k = 0; k < n; k++)
		json_array_append_new(arr, json_real((double)x[k]));
	return arr;
}

/* x [rows, cols] as nested arrays. */
static json_t *jmatrix(const float *x, size_t rows, size_t cols)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < rows; i++)
		json_array_append_new(arr, jfloats(x + i * cols, cols));
	return arr;
}

/* The flat JSON array `data` (borrowed cells) nested to `shape`. */
static json_t *nest(const json_t *data, const size_t *shape, size_t rank, size_t *pos)
{
	json_t *arr = json_array();

	for (size_t k = 0; k < shape[0]; k++) {
		if (rank == 1)
			json_array_append(arr, json_array_get(data, (*pos)++));
		else
			json_array_append_new(arr, nest(data, shape + 1, rank - 1, pos));
	}
	return arr;
}

/* {"shape": shape, "data": data (borrowed)} */
static json_t *tensor_obj(const json_t *data, size_t rank, const size_t *shape)
{
	json_t *shp = json_array();

	for (size_t a = 0; a < rank; a++)
		json_array_append_new(shp, json_integer((json_int_t)shape[a]));
	return json_pack("{s:o, s:O}", "shape", shp, "data", data);
}

/* ------------------------------------------------------------------------ */
/* Request fragments for the tiny model (E = 8)                              */
/* ------------------------------------------------------------------------ */

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

static const float x3_rows[3][8] = {
    {0.5f, -0.25f, 0.125f, 1, 0, -1, 0.75f, 0.25f},
    {0.8f, -0.2f, 0.3f, 0.1f, -0.5f, 0.6f, 0.2f, 0.1f},
    {-0.3f, 0.2f, 0.9f, -0.4f, 0.5f, 0.1f, 0.7f, -0.8f},
};

/* tiny on X3 with extra top-level fields (",\"mask\":...") */
static struct answer tiny3(const char *extra)
{
	return attention(fmt(TINY EMB3 "%s}", extra));
}

/* tiny on the batch [X3, X3R] */
static struct answer tiny_batch(const char *extra)
{
	return attention(fmt(TINY "\"embeddings\":[" X3 "," X3R "]%s}", extra));
}

static const struct attn_model *tiny_model(void)
{
	const struct api_model_entry *e = registry_find(svc, "tiny");

	ck_assert_ptr_nonnull(e);
	return e->model;
}

/* FNV-1a 64 of the UTF-8 bytes: the documented stable token hash. */
static uint64_t fnv1a(const char *s)
{
	uint64_t h = UINT64_C(14695981039346656037);

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= UINT64_C(1099511628211);
	}
	return h;
}

/* weights [H, Lq, Lk] (one item) row i of head h */
static const float *wrow(const struct flat *w, size_t h, size_t i)
{
	size_t Lq = w->shape[w->rank - 2], Lk = w->shape[w->rank - 1];

	return w->x + (h * Lq + i) * Lk;
}

/* ------------------------------------------------------------------------ */
/* decode                                                                   */
/* ------------------------------------------------------------------------ */

START_TEST(test_embeddings_unbatched)
{
	struct answer a = tiny3("");
	const json_t *shape;
	struct flat out, w;

	expect_ok(&a);
	ck_assert_str_eq(json_string_value(field(a.json, "model")), "tiny");
	shape = field(a.json, "shape");
	ck_assert_int_eq(int_field(shape, "batch"), 1);
	ck_assert_int_eq(int_field(shape, "query_length"), 3);
	ck_assert_int_eq(int_field(shape, "key_length"), 3);
	ck_assert_int_eq(int_field(shape, "d_model"), 8);
	ck_assert_int_eq(int_field(shape, "num_heads"), 2);
	ck_assert_int_eq(int_field(shape, "num_kv_heads"), 2);
	ck_assert_int_eq(int_field(shape, "head_dim"), 4);
	out = tensor_at(&a, "output");
	assert_shape("output", &out, 2, 3, 8);
	w = tensor_at(&a, "weights"); /* per_head is the default */
	assert_shape("weights", &w, 3, 2, 3, 3);
	for (size_t h = 0; h < 2; h++)
		for (size_t i = 0; i < 3; i++) {
			const float *row = wrow(&w, h, i);

			ck_assert(row[0] > 0 && row[1] > 0 && row[2] > 0);
			ck_assert_double_eq_tol(row[0] + row[1] + row[2], 1.0, 1e-6);
		}
	ck_assert_ptr_null(json_object_get(a.json, "tokens"));
	ck_assert_ptr_null(json_object_get(a.json, "scores"));
	ck_assert(json_number_value(field(field(a.json, "usage"), "flops")) > 0);
	ck_assert(json_number_value(field(field(a.json, "usage"), "milliseconds")) >= 0);
}
END_TEST

/* [B, L, E]: each item as if sent alone. */
START_TEST(test_embeddings_batched)
{
	struct answer batch = tiny_batch("");
	struct answer one = tiny3(""), two = attention(TINY "\"embeddings\":" X3R "}");
	struct flat out, w, o1 = tensor_at(&one, "output"), o2 = tensor_at(&two, "output");
	struct flat w1 = tensor_at(&one, "weights"), w2 = tensor_at(&two, "weights");

	expect_ok(&batch);
	ck_assert_int_eq(int_field(field(batch.json, "shape"), "batch"), 2);
	out = tensor_at(&batch, "output");
	assert_shape("output", &out, 3, 2, 3, 8);
	w = tensor_at(&batch, "weights");
	assert_shape("weights", &w, 4, 2, 2, 3, 3);
	assert_near_n("item 0 output", out.x, o1.x, 24, SAME_ABS, SAME_REL);
	assert_near_n("item 1 output", out.x + 24, o2.x, 24, SAME_ABS, SAME_REL);
	assert_near_n("item 0 weights", w.x, w1.x, 18, SAME_ABS, SAME_REL);
	assert_near_n("item 1 weights", w.x + 18, w2.x, 18, SAME_ABS, SAME_REL);
}
END_TEST

/* A ragged batch: each item comes back trimmed to its own length. */
START_TEST(test_ragged_batch)
{
	struct answer r = attention(TINY "\"embeddings\":[" X3 ",[" R3 "]],\"scores\":\"raw\"}");
	struct answer one = tiny3(",\"scores\":\"raw\"");
	struct answer two = attention(TINY "\"embeddings\":[" R3 "],\"scores\":\"raw\"}");
	struct answer mean =
	    attention(TINY "\"embeddings\":[" X3 ",[" R3 "]],\"weights\":\"mean\"}");
	struct flat o0, o1, w0, w1, s0, s1, m0, m1;

	expect_ok(&r);
	ck_assert_int_eq(int_field(field(r.json, "shape"), "batch"), 2);
	ck_assert_int_eq(int_field(field(r.json, "shape"), "query_length"), 3);
	o0 = item_at(&r, "output", 0);
	o1 = item_at(&r, "output", 1);
	assert_shape("output item 0", &o0, 2, 3, 8);
	assert_shape("output item 1", &o1, 2, 1, 8);
	w0 = item_at(&r, "weights", 0);
	w1 = item_at(&r, "weights", 1);
	assert_shape("weights item 0", &w0, 3, 2, 3, 3);
	assert_shape("weights item 1", &w1, 3, 2, 1, 1);
	ck_assert(w1.x[0] == 1.0f && w1.x[1] == 1.0f);
	s0 = item_at(&r, "scores", 0);
	s1 = item_at(&r, "scores", 1);
	assert_shape("scores item 0", &s0, 3, 2, 3, 3);
	assert_shape("scores item 1", &s1, 3, 2, 1, 1);
	{
		struct flat a0 = tensor_at(&one, "output"), a1 = tensor_at(&two, "output");
		struct flat aw = tensor_at(&one, "weights"), as = tensor_at(&one, "scores");
		struct flat bs = tensor_at(&two, "scores");

		assert_flat_near("item 0 output", &o0, &a0, SAME_ABS, SAME_REL);
		assert_flat_near("item 1 output", &o1, &a1, SAME_ABS, SAME_REL);
		assert_flat_near("item 0 weights", &w0, &aw, SAME_ABS, SAME_REL);
		assert_flat_near("item 0 scores", &s0, &as, SAME_ABS, SAME_REL);
		assert_flat_near("item 1 scores", &s1, &bs, SAME_ABS, SAME_REL);
	}
	expect_ok(&mean);
	m0 = item_at(&mean, "weights", 0);
	m1 = item_at(&mean, "weights", 1);
	assert_shape("mean item 0", &m0, 2, 3, 3);
	assert_shape("mean item 1", &m1, 2, 1, 1);
}
END_TEST

/* Token ids are rows of the model's embedding table. */
START_TEST(test_tokens_ids)
{
	const struct attn_model *m = tiny_model();
	const int64_t ids[3] = {3, 5, 63};
	json_t *emb = json_array(), *want_tokens = keep_json(json_pack("[iii]", 3, 5, 63));
	struct answer by_id = attention(TINY "\"tokens\":[3,5,63]}"), by_emb;

	for (size_t i = 0; i < 3; i++)
		json_array_append_new(emb, jfloats(m->embed + (size_t)ids[i] * m->E, m->E));
	by_emb = attention_json(json_pack("{s:s, s:o}", "model", "tiny", "embeddings", emb));
	expect_ok(&by_id);
	expect_ok(&by_emb);
	assert_same(&by_id, &by_emb, "output", 0, 0);
	assert_same(&by_id, &by_emb, "weights", 0, 0);
	ck_assert_msg(json_equal(field(by_id.json, "tokens"), want_tokens), "tokens echo: %.200s",
		      by_id.text);
	ck_assert_ptr_null(json_object_get(by_emb.json, "tokens"));
}
END_TEST

/* String tokens without a vocabulary: FNV-1a 64 of the bytes mod vocab. */
START_TEST(test_tokens_strings)
{
	unsigned h = (unsigned)(fnv1a("hello") % 64), w = (unsigned)(fnv1a("world") % 64);
	struct answer s = attention(TINY "\"tokens\":[\"hello\",\"world\",\"hello\"]}");
	struct answer i = attention(fmt(TINY "\"tokens\":[%u,%u,%u]}", h, w, h));
	struct answer mixed = attention(TINY "\"tokens\":[3,\"hello\"]}");
	json_t *want = keep_json(json_pack("[sss]", "hello", "world", "hello"));
	json_t *want_mixed = keep_json(json_pack("[is]", 3, "hello"));
	struct flat out;

	expect_ok(&s);
	expect_ok(&i);
	assert_same(&s, &i, "output", 0, 0);
	ck_assert_msg(json_equal(field(s.json, "tokens"), want), "tokens echo: %.200s", s.text);
	out = tensor_at(&s, "output"); /* equal inputs, no positions: equal rows */
	assert_near_n("row 2 vs row 0", out.x + 16, out.x, 8, 0, 0);
	expect_ok(&mixed);
	ck_assert_msg(json_equal(field(mixed.json, "tokens"), want_mixed), "tokens echo: %.200s",
		      mixed.text);
}
END_TEST

START_TEST(test_tokens_batch)
{
	struct answer r = attention(TINY "\"tokens\":[[1,2,3],[4,5]]}");
	struct answer a = attention(TINY "\"tokens\":[1,2,3]}");
	struct answer b = attention(TINY "\"tokens\":[4,5]}");
	struct answer even = attention(TINY "\"tokens\":[[1,2],[3,4]]}");
	json_t *want = keep_json(json_pack("[[iii][ii]]", 1, 2, 3, 4, 5));
	struct flat o0, o1, w1, eo;

	expect_ok(&r);
	ck_assert_msg(json_equal(field(r.json, "tokens"), want), "tokens echo: %.200s", r.text);
	o0 = item_at(&r, "output", 0);
	o1 = item_at(&r, "output", 1);
	assert_shape("item 0", &o0, 2, 3, 8);
	assert_shape("item 1", &o1, 2, 2, 8);
	w1 = item_at(&r, "weights", 1);
	assert_shape("weights item 1", &w1, 3, 2, 2, 2);
	{
		struct flat ao = tensor_at(&a, "output"), bo = tensor_at(&b, "output");
		struct flat bw = tensor_at(&b, "weights");

		assert_flat_near("item 0", &o0, &ao, SAME_ABS, SAME_REL);
		assert_flat_near("item 1", &o1, &bo, SAME_ABS, SAME_REL);
		assert_flat_near("weights item 1", &w1, &bw, SAME_ABS, SAME_REL);
	}
	expect_ok(&even);
	eo = tensor_at(&even, "output");
	assert_shape("even batch", &eo, 3, 2, 2, 8);
}
END_TEST

/* text: split on whitespace, UTF-8 intact, the same as the tokens it splits into. */
START_TEST(test_text)
{
	struct answer t = attention(TINY "\"text\":\"나는 맛있는 사과를\"}");
	struct answer k = attention(TINY "\"tokens\":[\"나는\",\"맛있는\",\"사과를\"]}");
	struct answer ws = attention(TINY "\"text\":\" \\t나는\\n\\n맛있는  사과를\\r\\n\"}");
	struct answer list = attention(TINY "\"text\":[\"나는 사과를\",\"먹었다\"]}");
	struct answer klist = attention(TINY "\"tokens\":[[\"나는\",\"사과를\"],[\"먹었다\"]]}");
	struct answer dflt = attention("{\"text\":\"hello world\"}");
	json_t *want = keep_json(json_pack("[sss]", "나는", "맛있는", "사과를"));
	json_t *want_list = keep_json(json_pack("[[ss][s]]", "나는", "사과를", "먹었다"));
	struct flat o;

	expect_ok(&t);
	expect_ok(&k);
	assert_same(&t, &k, "output", 0, 0);
	ck_assert_msg(json_equal(field(t.json, "tokens"), want), "tokens echo: %.200s", t.text);
	expect_ok(&ws);
	assert_same(&ws, &k, "output", 0, 0);
	ck_assert_msg(json_equal(field(ws.json, "tokens"), want), "tokens echo: %.200s", ws.text);
	expect_ok(&list);
	expect_ok(&klist);
	ck_assert_msg(json_equal(field(list.json, "tokens"), want_list), "echo: %.200s", list.text);
	{
		struct flat a0 = item_at(&list, "output", 0), b0 = item_at(&klist, "output", 0);
		struct flat a1 = item_at(&list, "output", 1), b1 = item_at(&klist, "output", 1);

		assert_flat_near("list item 0", &a0, &b0, 0, 0);
		assert_flat_near("list item 1", &a1, &b1, 0, 0);
		assert_shape("list item 1", &a1, 2, 1, 8);
	}
	/* no model: the default, base */
	expect_ok(&dflt);
	ck_assert_str_eq(json_string_value(field(dflt.json, "model")), "base");
	ck_assert_int_eq(int_field(field(dflt.json, "shape"), "d_model"), 512);
	o = tensor_at(&dflt, "output");
	assert_shape("base output", &o, 2, 2, 512);
}
END_TEST

/* key / value: Lq != Lk; value defaults to key; weights depend on q and k only. */
START_TEST(test_cross_attention)
{
	const char *q = "\"embeddings\":[" R0 "," R1 "]";
	const char *k = "\"key\":[" R0 "," R1 "," R2 "," R3 "," R1 "]";
	struct answer a = attention(fmt(TINY "%s,%s}", q, k));
	struct answer same =
	    attention(fmt(TINY "%s,%s,\"value\":[" R0 "," R1 "," R2 "," R3 "," R1 "]}", q, k));
	struct answer other =
	    attention(fmt(TINY "%s,%s,\"value\":[" R3 "," R2 "," R1 "," R0 "," R2 "]}", q, k));
	struct answer batch = attention(TINY "\"embeddings\":[[" R0 "],[" R1 "]],\"key\":[[" R0
					     "," R1 "," R2 "],[" R2 "," R3 "," R0 "]]}");
	struct flat out, w;

	expect_ok(&a);
	ck_assert_int_eq(int_field(field(a.json, "shape"), "query_length"), 2);
	ck_assert_int_eq(int_field(field(a.json, "shape"), "key_length"), 5);
	out = tensor_at(&a, "output");
	assert_shape("output", &out, 2, 2, 8);
	w = tensor_at(&a, "weights");
	assert_shape("weights", &w, 3, 2, 2, 5);
	expect_ok(&same);
	assert_same(&a, &same, "output", 0, 0);
	expect_ok(&other);
	assert_same(&a, &other, "weights", 0, 0);
	ck_assert(max_diff(&a, &other, "output") > 1e-3);
	expect_ok(&batch);
	out = tensor_at(&batch, "output");
	assert_shape("batched output", &out, 3, 2, 1, 8);
	w = tensor_at(&batch, "weights");
	assert_shape("batched weights", &w, 4, 2, 2, 1, 3);
}
END_TEST

/*
 * A batch whose keys are ragged and whose queries are not: numbers as each item
 * alone; the weights of item 1 are trimmed to its own key length, [H, 1, 1],
 * as ragged queries are.
 */
START_TEST(test_cross_ragged_keys)
{
	struct answer r = attention(TINY "\"embeddings\":[[" R0 "],[" R1 "]],\"key\":[[" R0 "," R1
					 "," R2 "],[" R2 "]]}");
	struct answer one = attention(TINY "\"embeddings\":[" R1 "],\"key\":[" R2 "]}");
	const json_t *w;
	struct flat out, o1;

	expect_ok(&r);
	expect_ok(&one);
	out = tensor_at(&r, "output");
	o1 = tensor_at(&one, "output");
	assert_near_n("item 1 output", out.x + 8, o1.x, 8, SAME_ABS, SAME_REL);
	w = json_array_get(field(r.json, "weights"), 1); /* item 1: [H, 1, Lk_1] */
	w = json_array_get(json_array_get(w, 0), 0);
	ck_assert_msg(json_array_size(w) == 1,
		      "weights of item 1 not trimmed to its key length 1: %.300s",
		      r.text);
}
END_TEST

/* Inline seeded models: deterministic per seed, any H / Hkv that divide. */
START_TEST(test_inline_seeded)
{
	const char *m7 = "{\"model\":{\"d_model\":8,\"num_heads\":2,\"seed\":7}," EMB3 "}";
	struct answer a = attention(m7), b = attention(m7);
	struct answer c =
	    attention("{\"model\":{\"d_model\":8,\"num_heads\":2,\"seed\":8}," EMB3 "}");
	struct answer g = attention("{\"model\":{\"d_model\":8,\"num_heads\":2,\"num_kv_heads\":1,"
				    "\"bias\":false}," EMB3 "}");

	expect_ok(&a);
	ck_assert_str_eq(json_string_value(field(a.json, "model")), "inline");
	assert_same(&a, &b, "output", 0, 0);
	expect_ok(&c);
	ck_assert(max_diff(&a, &c, "output") > 1e-4);
	expect_ok(&g);
	ck_assert_int_eq(int_field(field(g.json, "shape"), "num_kv_heads"), 1);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* mask                                                                     */
/* ------------------------------------------------------------------------ */

START_TEST(test_mask_none)
{
	struct answer a = tiny3(""), b = tiny3(",\"mask\":\"none\""), c = tiny3(",\"mask\":{}");

	expect_ok(&b);
	expect_ok(&c);
	assert_same(&a, &b, "output", 0, 0);
	assert_same(&a, &c, "output", 0, 0);
	assert_same(&a, &c, "weights", 0, 0);
}
END_TEST

/* Every way to say "causal" gives the same answer, with exact zeros above the diagonal. */
START_TEST(test_mask_causal_forms)
{
	static const char *const forms[] = {
	    ",\"mask\":{\"causal\":true}",
	    ",\"mask\":{\"causal\":true,\"alignment\":\"top_left\"}",
	    ",\"mask\":{\"allow\":" TRIL3 "}",
	    ",\"mask\":{\"allow\":[" TRIL3 "]}",
	    ",\"mask\":{\"allow\":[[" TRIL3 "," TRIL3 "]]}",
	    ",\"mask\":{\"allow\":{\"shape\":[3,3],\"data\":[true,false,false,true,true,false,"
	    "true,true,true]}}",
	    ",\"mask\":{\"bias\":" NEG3 "}",
	    ",\"mask\":{\"bias\":{\"shape\":[1,3,3],\"data\":[0,\"-Infinity\",\"-Infinity\",0,0,"
	    "\"-Infinity\",0,0,0]}}",
	    ",\"mask\":{\"causal\":true,\"allow\":" ALL3 "}",
	};
	struct answer c = tiny3(",\"mask\":\"causal\"");
	struct flat w;

	expect_ok(&c);
	w = tensor_at(&c, "weights");
	for (size_t h = 0; h < 2; h++) {
		ck_assert(wrow(&w, h, 0)[0] == 1.0f && wrow(&w, h, 0)[1] == 0.0f &&
			  wrow(&w, h, 0)[2] == 0.0f);
		ck_assert(wrow(&w, h, 1)[2] == 0.0f && wrow(&w, h, 1)[1] > 0.0f);
	}
	for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
		struct answer a = tiny3(forms[f]);

		expect_ok(&a);
		assert_same(&a, &c, "weights", SAME_ABS, SAME_REL);
		assert_same(&a, &c, "output", SAME_ABS, SAME_REL);
	}
}
END_TEST

/* allow [B, Lq, Lk] is per item; [B, H, Lq, Lk] per item and head; 1 broadcasts. */
START_TEST(test_mask_batch_head_shapes)
{
	struct answer full = tiny_batch(""), causal = tiny_batch(",\"mask\":\"causal\"");
	struct answer per_item = tiny_batch(",\"mask\":{\"allow\":[" TRIL3 "," ALL3 "]}");
	struct answer per_head =
	    tiny_batch(",\"mask\":{\"allow\":[[" TRIL3 "," ALL3 "],[" ALL3 "," TRIL3 "]]}");
	struct answer bcast = tiny_batch(",\"mask\":{\"allow\":[[" TRIL3 "," ALL3 "]]}");
	struct flat f = tensor_at(&full, "weights"), c = tensor_at(&causal, "weights");
	struct flat pi, ph, bc;

	expect_ok(&per_item);
	expect_ok(&per_head);
	expect_ok(&bcast);
	pi = tensor_at(&per_item, "weights");
	ph = tensor_at(&per_head, "weights");
	bc = tensor_at(&bcast, "weights");
	/* [B, H, 3, 3]: slice (b, h) starts at (b * 2 + h) * 9 */
	assert_near_n("per item, item 0", pi.x, c.x, 18, SAME_ABS, SAME_REL);
	assert_near_n("per item, item 1", pi.x + 18, f.x + 18, 18, SAME_ABS, SAME_REL);
	assert_near_n("per head, (0, 0)", ph.x, c.x, 9, SAME_ABS, SAME_REL);
	assert_near_n("per head, (0, 1)", ph.x + 9, f.x + 9, 9, SAME_ABS, SAME_REL);
	assert_near_n("per head, (1, 0)", ph.x + 18, f.x + 18, 9, SAME_ABS, SAME_REL);
	assert_near_n("per head, (1, 1)", ph.x + 27, c.x + 27, 9, SAME_ABS, SAME_REL);
	assert_near_n("broadcast, (0, 0)", bc.x, c.x, 9, SAME_ABS, SAME_REL);
	assert_near_n("broadcast, (1, 0)", bc.x + 18, c.x + 18, 9, SAME_ABS, SAME_REL);
	assert_near_n("broadcast, (1, 1)", bc.x + 27, f.x + 27, 9, SAME_ABS, SAME_REL);
}
END_TEST

/* An additive bias enters the softmax: +ln 2 on key 0 doubles its odds. */
START_TEST(test_mask_bias_values)
{
	const char *l2 = "0.6931471805599453";
	struct answer none = tiny3("");
	struct answer odds =
	    tiny3(fmt(",\"mask\":{\"bias\":[[%s,0,0],[%s,0,0],[%s,0,0]]}", l2, l2, l2));
	struct answer flat_bias = tiny3(",\"mask\":{\"bias\":[[5,5,5],[-3,-3,-3],[0.5,0.5,0.5]]}");
	struct flat w = tensor_at(&none, "weights"), b;

	expect_ok(&odds);
	b = tensor_at(&odds, "weights");
	for (size_t h = 0; h < 2; h++)
		for (size_t i = 0; i < 3; i++) {
			double before = wrow(&w, h, i)[0] / wrow(&w, h, i)[1];
			double after = wrow(&b, h, i)[0] / wrow(&b, h, i)[1];

			ck_assert_msg(near(after, 2 * before, 0, 1e-5), "odds %g, want %g", after,
				      2 * before);
		}
	/* the same bias along a whole row changes nothing */
	expect_ok(&flat_bias);
	assert_same(&flat_bias, &none, "weights", SAME_ABS, SAME_REL);
}
END_TEST

/* top_left vs bottom_right causal when Lq < Lk, and alignment for a window alone. */
START_TEST(test_mask_alignment)
{
	const char *q1 = TINY "\"embeddings\":[" R0 "],\"key\":" X3;
	const char *q2 = TINY "\"embeddings\":[" R0 "," R1 "],\"key\":" X3;
	struct answer tl = attention(fmt("%s,\"mask\":\"causal\"}", q1));
	struct answer br =
	    attention(fmt("%s,\"mask\":{\"causal\":true,\"alignment\":\"bottom_right\"}}", q1));
	struct answer none = attention(fmt("%s}", q1));
	struct answer br2 =
	    attention(fmt("%s,\"mask\":{\"causal\":true,\"alignment\":\"bottom_right\"}}", q2));
	struct answer win_br =
	    attention(fmt("%s,\"mask\":{\"window\":1,\"alignment\":\"bottom_right\"}}", q1));
	struct answer win_tl = attention(fmt("%s,\"mask\":{\"window\":1}}", q1));
	struct flat w;

	expect_ok(&tl);
	w = tensor_at(&tl, "weights");
	for (size_t h = 0; h < 2; h++)
		ck_assert(wrow(&w, h, 0)[0] == 1.0f && wrow(&w, h, 0)[1] == 0.0f &&
			  wrow(&w, h, 0)[2] == 0.0f);
	expect_ok(&br);
	assert_same(&br, &none, "weights", SAME_ABS, SAME_REL);
	expect_ok(&br2);
	w = tensor_at(&br2, "weights");
	for (size_t h = 0; h < 2; h++) {
		ck_assert(wrow(&w, h, 0)[0] > 0 && wrow(&w, h, 0)[1] > 0 &&
			  wrow(&w, h, 0)[2] == 0.0f);
		ck_assert(wrow(&w, h, 1)[2] > 0);
	}
	expect_ok(&win_br);
	w = tensor_at(&win_br, "weights");
	ck_assert(wrow(&w, 0, 0)[0] == 0.0f && wrow(&w, 0, 0)[2] == 1.0f);
	expect_ok(&win_tl);
	w = tensor_at(&win_tl, "weights");
	ck_assert(wrow(&w, 1, 0)[0] == 1.0f && wrow(&w, 1, 0)[2] == 0.0f);
}
END_TEST

/* Sliding windows: symmetric without causal, one-sided with it. */
START_TEST(test_mask_window)
{
	struct answer w1 = tiny3(",\"mask\":{\"window\":1}");
	struct answer w2 = tiny3(",\"mask\":{\"window\":2}");
	struct answer w2c = tiny3(",\"mask\":{\"window\":2,\"causal\":true}");
	struct flat w;

	expect_ok(&w1);
	w = tensor_at(&w1, "weights");
	for (size_t h = 0; h < 2; h++)
		for (size_t i = 0; i < 3; i++)
			for (size_t j = 0; j < 3; j++)
				ck_assert(wrow(&w, h, i)[j] == (i == j ? 1.0f : 0.0f));
	expect_ok(&w2);
	w = tensor_at(&w2, "weights");
	for (size_t h = 0; h < 2; h++) {
		ck_assert(wrow(&w, h, 0)[1] > 0 && wrow(&w, h, 0)[2] == 0.0f);
		ck_assert(wrow(&w, h, 1)[0] > 0 && wrow(&w, h, 1)[2] > 0);
		ck_assert(wrow(&w, h, 2)[0] == 0.0f && wrow(&w, h, 2)[1] > 0);
	}
	expect_ok(&w2c);
	w = tensor_at(&w2c, "weights");
	for (size_t h = 0; h < 2; h++) {
		ck_assert(wrow(&w, h, 0)[0] == 1.0f);
		ck_assert(wrow(&w, h, 1)[0] > 0 && wrow(&w, h, 1)[2] == 0.0f);
		ck_assert(wrow(&w, h, 2)[0] == 0.0f && wrow(&w, h, 2)[1] > 0);
	}
}
END_TEST

/* mask.lengths hides keys past each item's length: the same as a ragged batch. */
START_TEST(test_mask_lengths)
{
	struct answer l2 = tiny3(",\"mask\":{\"lengths\":[2]}");
	struct answer ragged = attention(TINY "\"embeddings\":[" X3 ",[" R3 "," R0 "]]}");
	struct answer padded = attention(TINY "\"embeddings\":[" X3 ",[" R3 "," R0
					      ",[0,0,0,0,0,0,0,0]]],\"mask\":{\"lengths\":[3,2]}}");
	struct answer capped =
	    attention(TINY "\"embeddings\":[" X3 ",[" R3 "," R0 "]],\"mask\":{\"lengths\":[1,3]}}");
	struct flat w, ro, rw, po, pw, cw;

	expect_ok(&l2);
	w = tensor_at(&l2, "weights");
	for (size_t h = 0; h < 2; h++)
		for (size_t i = 0; i < 3; i++) {
			ck_assert(wrow(&w, h, i)[2] == 0.0f);
			ck_assert_double_eq_tol(wrow(&w, h, i)[0] + wrow(&w, h, i)[1], 1.0, 1e-6);
		}
	expect_ok(&ragged);
	expect_ok(&padded);
	ro = item_at(&ragged, "output", 1);
	rw = item_at(&ragged, "weights", 1);
	po = tensor_at(&padded, "output");
	pw = tensor_at(&padded, "weights");
	assert_near_n("item 1 output", ro.x, po.x + 24, 16, SAME_ABS, SAME_REL);
	for (size_t h = 0; h < 2; h++)
		for (size_t i = 0; i < 2; i++) {
			assert_near_n("item 1 weights", wrow(&rw, h, i),
				      pw.x + 18 + (h * 3 + i) * 3, 2, SAME_ABS, SAME_REL);
			ck_assert(pw.x[18 + (h * 3 + i) * 3 + 2] == 0.0f);
		}
	/* lengths cap a ragged item further, never extend it */
	expect_ok(&capped);
	cw = item_at(&capped, "weights", 0);
	ck_assert(wrow(&cw, 0, 2)[0] == 1.0f && wrow(&cw, 1, 1)[0] == 1.0f);
	cw = item_at(&capped, "weights", 1);
	assert_shape("capped item 1", &cw, 3, 2, 2, 2);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* positional                                                               */
/* ------------------------------------------------------------------------ */

START_TEST(test_positional_kinds)
{
	static const char *const kinds[] = {"sinusoidal", "rope", "alibi"};
	struct answer none = tiny3(""), named = tiny3(",\"positional\":\"none\"");
	struct answer obj = tiny3(",\"positional\":{\"type\":\"none\"}");

	expect_ok(&named);
	expect_ok(&obj);
	assert_same(&none, &named, "output", 0, 0);
	assert_same(&none, &obj, "output", 0, 0);
	for (size_t k = 0; k < 3; k++) {
		struct answer s = tiny3(fmt(",\"positional\":\"%s\"", kinds[k]));
		struct answer o = tiny3(fmt(",\"positional\":{\"type\":\"%s\"}", kinds[k]));

		expect_ok(&s);
		expect_ok(&o);
		assert_same(&s, &o, "output", 0, 0);
		ck_assert_msg(max_diff(&s, &none, "output") > 1e-4, "%s changes nothing", kinds[k]);
	}
}
END_TEST

/* RoPE: offset == positions; scaling divides positions; defaults; relative. */
START_TEST(test_rope_parameters)
{
	struct answer rope = tiny3(",\"positional\":\"rope\"");
	struct answer off = tiny3(",\"positional\":{\"type\":\"rope\",\"offset\":3}");
	struct answer pos = tiny3(",\"positional\":{\"type\":\"rope\",\"positions\":[3,4,5]}");
	struct answer theta = tiny3(",\"positional\":{\"type\":\"rope\",\"theta\":10000}");
	struct answer rdim = tiny3(",\"positional\":{\"type\":\"rope\",\"rotary_dim\":4}");
	struct answer scaled = tiny3(",\"positional\":{\"type\":\"rope\",\"scaling\":2,"
				     "\"positions\":[0,1,2]}");
	struct answer halfpos =
	    tiny3(",\"positional\":{\"type\":\"rope\",\"positions\":[0,0.5,1]}");
	struct answer half = tiny3(",\"positional\":{\"type\":\"rope\",\"style\":\"half\"}");
	struct answer inter =
	    tiny3(",\"positional\":{\"type\":\"rope\",\"style\":\"interleaved\"}");
	struct answer r2 = tiny3(",\"positional\":{\"type\":\"rope\",\"rotary_dim\":2}");
	struct answer t500 = tiny3(",\"positional\":{\"type\":\"rope\",\"theta\":500}");

	expect_ok(&off);
	expect_ok(&pos);
	assert_same(&off, &pos, "output", SAME_ABS, SAME_REL);
	/* RoPE scores depend only on position differences */
	assert_same(&off, &rope, "weights", TOL_ABS, TOL_REL);
	expect_ok(&theta);
	expect_ok(&rdim);
	expect_ok(&inter);
	assert_same(&theta, &rope, "output", 0, 0);
	assert_same(&rdim, &rope, "output", 0, 0);
	assert_same(&inter, &rope, "output", 0, 0);
	expect_ok(&scaled);
	expect_ok(&halfpos);
	assert_same(&scaled, &halfpos, "output", SAME_ABS, SAME_REL);
	expect_ok(&half);
	expect_ok(&r2);
	expect_ok(&t500);
	ck_assert(max_diff(&half, &rope, "output") > 1e-5);
	ck_assert(max_diff(&r2, &rope, "output") > 1e-5);
	ck_assert(max_diff(&t500, &rope, "output") > 1e-5);
}
END_TEST

/* Cross-attention: key_positions default to 0..Lk-1; a common shift changes nothing. */
START_TEST(test_rope_key_positions)
{
	const char *q = TINY "\"embeddings\":[" R0 "," R1 "],\"key\":" X3;
	struct answer dflt = attention(fmt("%s,\"positional\":\"rope\"}", q));
	struct answer expl =
	    attention(fmt("%s,\"positional\":{\"type\":\"rope\",\"positions\":[0,1],"
			  "\"key_positions\":[0,1,2]}}",
			  q));
	struct answer shifted = attention(fmt("%s,\"positional\":{\"type\":\"rope\",\"positions\":"
					      "[7,8],\"key_positions\":[7,8,9]}}",
					      q));
	struct answer moved =
	    attention(fmt("%s,\"positional\":{\"type\":\"rope\",\"key_positions\":"
			  "[5,1,2]}}",
			  q));

	expect_ok(&dflt);
	expect_ok(&expl);
	expect_ok(&shifted);
	expect_ok(&moved);
	assert_same(&dflt, &expl, "output", SAME_ABS, SAME_REL);
	assert_same(&dflt, &shifted, "weights", TOL_ABS, TOL_REL);
	ck_assert(max_diff(&dflt, &moved, "weights") > 1e-5);
}
END_TEST

/* ALiBi: only distances matter. */
START_TEST(test_alibi)
{
	struct answer a = tiny3(",\"positional\":\"alibi\"");
	struct answer off = tiny3(",\"positional\":{\"type\":\"alibi\",\"offset\":10}");
	struct answer pos = tiny3(",\"positional\":{\"type\":\"alibi\",\"positions\":[4,5,6]}");
	struct answer far = tiny3(",\"positional\":{\"type\":\"alibi\",\"positions\":[0,2,4]}");

	expect_ok(&a);
	expect_ok(&off);
	expect_ok(&pos);
	expect_ok(&far);
	assert_same(&a, &off, "weights", SAME_ABS, SAME_REL);
	assert_same(&a, &pos, "weights", SAME_ABS, SAME_REL);
	ck_assert(max_diff(&a, &far, "weights") > 1e-4);
}
END_TEST

/* Sinusoidal: the same as adding pe[p, 2i] = sin(p / 10000^(2i/E)), pe[p, 2i+1] = cos(...). */
START_TEST(test_sinusoidal)
{
	struct answer s = tiny3(",\"positional\":\"sinusoidal\"");
	struct answer pos =
	    tiny3(",\"positional\":{\"type\":\"sinusoidal\",\"positions\":[0,1,2]}");
	struct answer off = tiny3(",\"positional\":{\"type\":\"sinusoidal\",\"offset\":1}");
	struct answer pos1 =
	    tiny3(",\"positional\":{\"type\":\"sinusoidal\",\"positions\":[1,2,3]}");
	float xpe[3][8];
	struct answer added;

	for (size_t p = 0; p < 3; p++)
		for (size_t i = 0; i < 4; i++) {
			double angle = (double)p / pow(10000.0, (double)(2 * i) / 8.0);

			xpe[p][2 * i] = (float)(x3_rows[p][2 * i] + sin(angle));
			xpe[p][2 * i + 1] = (float)(x3_rows[p][2 * i + 1] + cos(angle));
		}
	added = attention_json(
	    json_pack("{s:s, s:o}", "model", "tiny", "embeddings", jmatrix(&xpe[0][0], 3, 8)));
	expect_ok(&s);
	expect_ok(&added);
	assert_same(&s, &added, "output", TOL_ABS, TOL_REL);
	expect_ok(&pos);
	assert_same(&s, &pos, "output", SAME_ABS, SAME_REL);
	expect_ok(&off);
	expect_ok(&pos1);
	assert_same(&off, &pos1, "output", SAME_ABS, SAME_REL);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* options                                                                  */
/* ------------------------------------------------------------------------ */

START_TEST(test_scale)
{
	struct answer dflt = tiny3(",\"scores\":\"raw\"");
	struct answer half = tiny3(",\"scale\":0.5,\"scores\":\"raw\""); /* 1 / sqrt(D = 4) */
	struct answer one = tiny3(",\"scale\":1,\"scores\":\"raw\"");
	struct flat a, b;

	expect_ok(&half);
	assert_same(&dflt, &half, "output", SAME_ABS, SAME_REL);
	expect_ok(&one);
	a = tensor_at(&dflt, "scores");
	b = tensor_at(&one, "scores");
	for (size_t k = 0; k < a.n; k++)
		ck_assert(near(b.x[k], 2.0 * a.x[k], SAME_ABS, SAME_REL));
	ck_assert(max_diff(&dflt, &one, "weights") > 1e-4);
}
END_TEST

/* The four score views with softcap and a causal mask, against each other. */
START_TEST(test_scores_views)
{
#define VIEW(v) ",\"mask\":\"causal\",\"softcap\":0.5,\"scores\":\"" v "\""
	struct answer raw = tiny3(VIEW("raw")), cap = tiny3(VIEW("softcap"));
	struct answer masked = tiny3(VIEW("masked")), soft = tiny3(VIEW("softmax"));
#undef VIEW
	struct answer nocap = tiny3(",\"scores\":\"softcap\""),
		      noraw = tiny3(",\"scores\":\"raw\"");
	struct flat r, c, m, s, w;

	expect_ok(&raw);
	expect_ok(&cap);
	expect_ok(&masked);
	expect_ok(&soft);
	r = tensor_at(&raw, "scores");
	c = tensor_at(&cap, "scores");
	m = tensor_at(&masked, "scores");
	s = tensor_at(&soft, "scores");
	w = tensor_at(&soft, "weights");
	assert_shape("scores", &r, 3, 2, 3, 3);
	for (size_t k = 0; k < r.n; k++) {
		size_t i = (k / 3) % 3, j = k % 3;

		ck_assert(near(c.x[k], 0.5 * tanh(r.x[k] / 0.5), SAME_ABS, SAME_REL));
		ck_assert(fabsf(c.x[k]) <= 0.5f);
		if (j > i)
			ck_assert(m.x[k] == -INFINITY);
		else
			ck_assert(near(m.x[k], c.x[k], SAME_ABS, SAME_REL));
	}
	assert_flat_near("softmax view vs weights", &s, &w, SAME_ABS, SAME_REL);
	/* no softcap: the softcap view is the raw one */
	expect_ok(&nocap);
	assert_same(&nocap, &noraw, "scores", 0, 0);
}
END_TEST

/* A huge softcap is none; softcap changes the weights otherwise. */
START_TEST(test_softcap)
{
	struct answer none = tiny3(""), zero = tiny3(",\"softcap\":0");
	struct answer big = tiny3(",\"softcap\":1000000"), small = tiny3(",\"softcap\":0.1");

	expect_ok(&zero);
	expect_ok(&big);
	expect_ok(&small);
	assert_same(&none, &zero, "output", 0, 0);
	assert_same(&none, &big, "weights", SAME_ABS, SAME_REL);
	ck_assert(max_diff(&none, &small, "weights") > 1e-3);
}
END_TEST

START_TEST(test_weights_modes)
{
	struct answer per = tiny3(",\"weights\":\"per_head\""), dflt = tiny3("");
	struct answer mean = tiny3(",\"weights\":\"mean\""), none = tiny3(",\"weights\":\"none\"");
	struct flat p, m;

	expect_ok(&per);
	expect_ok(&mean);
	expect_ok(&none);
	assert_same(&per, &dflt, "weights", 0, 0);
	p = tensor_at(&per, "weights");
	m = tensor_at(&mean, "weights");
	assert_shape("mean", &m, 2, 3, 3);
	for (size_t k = 0; k < 9; k++)
		ck_assert(near(m.x[k], 0.5 * ((double)p.x[k] + p.x[k + 9]), SAME_ABS, SAME_REL));
	ck_assert_ptr_null(json_object_get(none.json, "weights"));
	assert_same(&none, &per, "output", SAME_ABS, SAME_REL);
	assert_same(&mean, &per, "output", SAME_ABS, SAME_REL);
}
END_TEST

/* The same bits whether floats travel as text or as base64, -inf included. */
static void assert_bits_equal(const char *what, const struct flat *text, const struct flat *b64)
{
	ck_assert_msg(text->n == b64->n && text->rank == b64->rank &&
			  memcmp(text->shape, b64->shape, text->rank * sizeof(size_t)) == 0,
		      "%s: shapes differ", what);
	for (size_t k = 0; k < text->n; k++) {
		float a = text->x[k], b = b64->x[k];

		/* "0" and "-0" both parse to +0 through jansson: compare zeros by value */
		ck_assert_msg(memcmp(&a, &b, sizeof(a)) == 0 || (a == 0 && b == 0) ||
				  (isnan(a) && isnan(b)),
			      "%s[%zu]: text %.9g, base64 %.9g", what, k, (double)a, (double)b);
	}
}

START_TEST(test_base64_output)
{
	const char *opts = ",\"mask\":\"causal\",\"scores\":\"masked\"";
	struct answer f = tiny3(opts), b = tiny3(fmt("%s,\"encoding\":\"base64\"", opts));
	struct answer rf = attention(TINY "\"embeddings\":[" X3 ",[" R3 "]]}");
	struct answer rb =
	    attention(TINY "\"embeddings\":[" X3 ",[" R3 "]],\"encoding\":\"base64\"}");
	static const char *const keys[] = {"output", "weights", "scores"};

	expect_ok(&f);
	expect_ok(&b);
	for (size_t k = 0; k < 3; k++) {
		struct flat x = tensor_at(&f, keys[k]), y = tensor_at(&b, keys[k]);

		ck_assert_msg(json_is_object(field(b.json, keys[k])), "%s is not base64", keys[k]);
		assert_bits_equal(keys[k], &x, &y);
	}
	/* ragged: one base64 tensor per item */
	expect_ok(&rf);
	expect_ok(&rb);
	for (size_t item = 0; item < 2; item++) {
		struct flat x = item_at(&rf, "output", item), y = item_at(&rb, "output", item);
		struct flat wx = item_at(&rf, "weights", item), wy = item_at(&rb, "weights", item);

		assert_bits_equal("ragged output", &x, &y);
		assert_bits_equal("ragged weights", &wx, &wy);
	}
}
END_TEST

/* Inputs as nested arrays, {"shape", "data"} and {"shape", "base64"} are one. */
START_TEST(test_tensor_forms)
{
	struct answer nested = attention(TINY EMB1 ",\"key\":" X3 "}");
	struct answer data =
	    attention(TINY "\"embeddings\":{\"shape\":[1,8],\"data\":" R0 "},\"key\":" X3 "}");
	struct answer b64 = attention(TINY "\"embeddings\":{\"shape\":[1,8],\"base64\":\"" R0_B64
					   "\"},\"key\":" X3 "}");
	struct answer key64 =
	    attention(fmt(TINY EMB1 ",\"key\":{\"shape\":[3,8],\"base64\":\"%s\"}}",
			  b64_encode(x3_rows, sizeof(x3_rows))));
	struct answer batched =
	    attention(TINY "\"embeddings\":{\"shape\":[1,1,8],\"data\":" R0 "},\"key\":[" X3 "]}");
	struct flat o;

	expect_ok(&nested);
	expect_ok(&data);
	expect_ok(&b64);
	expect_ok(&key64);
	assert_same(&nested, &data, "output", 0, 0);
	assert_same(&nested, &b64, "output", 0, 0);
	assert_same(&nested, &key64, "output", 0, 0);
	expect_ok(&batched);
	o = tensor_at(&batched, "output");
	assert_shape("batched output", &o, 3, 1, 1, 8);
}
END_TEST

/* precision: at most that many significant digits, close to the full value. */
START_TEST(test_precision)
{
	struct answer full = tiny3(""), p3 = tiny3(",\"precision\":3");
	struct answer p9 = tiny3(",\"precision\":9");
	struct flat a = tensor_at(&full, "output"), b, w;

	expect_ok(&p3);
	b = tensor_at(&p3, "output");
	for (size_t k = 0; k < a.n; k++) {
		double v = json_number_value(
		    json_array_get(json_array_get(field(p3.json, "output"), k / 8), k % 8));
		char buf[32];

		snprintf(buf, sizeof(buf), "%.3g", v);
		ck_assert_msg(strtod(buf, NULL) == v, "%.17g has more than 3 digits", v);
		ck_assert(near(b.x[k], a.x[k], 1e-12, 5e-3));
	}
	w = tensor_at(&p3, "weights");
	ck_assert_uint_eq(w.n, 18);
	expect_ok(&p9);
	assert_same(&p9, &full, "output", 0, 0);
	assert_same(&p9, &full, "weights", 0, 0);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* numbers: the seeds' demo, PyTorch cases, every golden fixture            */
/* ------------------------------------------------------------------------ */

static const char *fixtures_dir(void)
{
	const char *d = getenv("ATTN_FIXTURES");

	return d && *d ? d : FIXTURES_DEFAULT_DIR;
}

static json_t *load_fixture(const char *name)
{
	json_error_t jerr;
	const char *path = fmt("%s/mha/%s.json", fixtures_dir(), name);
	json_t *fx = json_load_file(path, 0, &jerr);

	ck_assert_msg(fx != NULL, "%s: %s", path, jerr.text);
	return keep_json(fx);
}

/* The fixture's floats at request/key or expected/out etc. */
static float *fx_floats(const json_t *obj, const char *key, size_t want_n)
{
	size_t n;
	float *x = floats_of(field(obj, key), &n);

	ck_assert_msg(n == want_n, "%s has %zu values, want %zu", key, n, want_n);
	return x;
}

/* The per-head argmax the seed prints equals ours. */
static void assert_argmax(const struct flat *w, const json_t *argmax, size_t H, size_t L)
{
	for (size_t h = 0; h < H; h++)
		for (size_t i = 0; i < L; i++) {
			const float *row = wrow(w, h, i);
			size_t best = 0;

			for (size_t j = 1; j < L; j++)
				best = row[j] > row[best] ? j : best;
			ck_assert_int_eq((long long)best,
					 json_integer_value(json_array_get(argmax, h * L + i)));
		}
}

/* The seed demo's model and input as JSON: explicit weights [24, 8] and [8, 8]. */
struct seed_demo {
	json_t *fx;
	float *w_qkv, *w_o, *x, *out, *weights;
};

static struct seed_demo seed_demo_load(void)
{
	struct seed_demo s;
	const json_t *w, *req, *exp;

	s.fx = load_fixture("seed_demo_000");
	w = field(s.fx, "weights");
	req = field(s.fx, "request");
	exp = field(s.fx, "expected");
	ck_assert(json_is_false(field(field(s.fx, "config"), "bias")));
	s.w_qkv = fx_floats(w, "w_qkv", 24 * 8);
	s.w_o = fx_floats(w, "w_o", 8 * 8);
	s.x = fx_floats(req, "query", 4 * 8);
	s.out = fx_floats(exp, "out", 4 * 8);
	s.weights = fx_floats(exp, "weights", 2 * 4 * 4);
	return s;
}

static void seed_demo_check(const struct seed_demo *s, const struct answer *a)
{
	struct flat out, w;

	expect_ok(a);
	ck_assert_str_eq(json_string_value(field(a->json, "model")), "inline");
	out = tensor_at(a, "output");
	assert_shape("output", &out, 2, 4, 8);
	assert_near_n("output", out.x, s->out, 32, TOL_ABS, TOL_REL);
	w = tensor_at(a, "weights");
	assert_shape("weights", &w, 3, 2, 4, 4);
	assert_near_n("weights", w.x, s->weights, 32, TOL_ABS, TOL_REL);
	assert_argmax(&w, field(s->fx, "argmax"), 2, 4);
}

/*
 * The seeds' numpy demo through an inline explicit model, the request exactly
 * as the brief writes it: {d_model 8, num_heads 2, bias false, in_proj_weight
 * [24, 8], out_proj_weight [8, 8]}; "bias" is accepted when it agrees with
 * the weights given (false: no in_proj_bias).
 */
START_TEST(test_seed_demo_inline)
{
	struct seed_demo s = seed_demo_load();
	json_t *model = json_pack("{s:i, s:i, s:b, s:o, s:o}", "d_model", 8, "num_heads", 2, "bias",
				  0, "in_proj_weight", jmatrix(s.w_qkv, 24, 8), "out_proj_weight",
				  jmatrix(s.w_o, 8, 8));
	struct answer a = attention_json(
	    json_pack("{s:o, s:o}", "model", model, "embeddings", jmatrix(s.x, 4, 8)));

	seed_demo_check(&s, &a);
}
END_TEST

/* The same with base64 weights, input and answer. */
START_TEST(test_seed_demo_base64)
{
	struct seed_demo s = seed_demo_load();
	json_t *model = json_pack("{s:i, s:i, s:{s:[ii], s:s}, s:{s:[ii], s:s}}", "d_model", 8,
				  "num_heads", 2, "in_proj_weight", "shape", 24, 8, "base64",
				  b64_encode(s.w_qkv, 192 * sizeof(float)), "out_proj_weight",
				  "shape", 8, 8, "base64", b64_encode(s.w_o, 64 * sizeof(float)));
	struct answer a = attention_json(
	    json_pack("{s:o, s:{s:[ii], s:s}, s:s}", "model", model, "embeddings", "shape", 4, 8,
		      "base64", b64_encode(s.x, 32 * sizeof(float)), "encoding", "base64"));

	seed_demo_check(&s, &a);
	ck_assert(json_is_object(field(a.json, "output")));
}
END_TEST

/*
 * The demo from its own four words: an inline model with vocab_size 64 whose
 * embedding table holds X at the rows the words hash to (FNV-1a mod 64).
 */
START_TEST(test_seed_demo_text)
{
	struct seed_demo s = seed_demo_load();
	const json_t *words = field(s.fx, "tokens");
	float *table = keep(calloc(64 * 8, sizeof(float)));
	char text[256] = "";
	size_t ids[4];
	json_t *model;
	struct answer a;

	for (size_t i = 0; i < 4; i++) {
		const char *word = json_string_value(json_array_get(words, i));

		ids[i] = (size_t)(fnv1a(word) % 64);
		for (size_t j = 0; j < i; j++)
			ck_assert_msg(ids[j] != ids[i], "two demo words share row %zu", ids[i]);
		memcpy(table + ids[i] * 8, s.x + i * 8, 8 * sizeof(float));
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s%s", i ? " " : "",
			 word);
	}
	model =
	    json_pack("{s:i, s:i, s:i, s:o, s:o, s:o}", "d_model", 8, "num_heads", 2, "vocab_size",
		      64, "in_proj_weight", jmatrix(s.w_qkv, 24, 8), "out_proj_weight",
		      jmatrix(s.w_o, 8, 8), "embed_tokens", jmatrix(table, 64, 8));
	a = attention_json(json_pack("{s:o, s:s}", "model", model, "text", text));
	seed_demo_check(&s, &a);
	ck_assert_msg(json_equal(field(a.json, "tokens"), words), "tokens echo: %.200s", a.text);
}
END_TEST

/* A fixture's model as an inline explicit model. */
static json_t *fixture_model(const json_t *fx)
{
	const json_t *cfg = field(fx, "config"), *w = field(fx, "weights");
	size_t E = (size_t)int_field(cfg, "E"), H = (size_t)int_field(cfg, "H");
	size_t Hkv = (size_t)int_field(cfg, "Hkv"), rows = (H + 2 * Hkv) * (E / H);
	size_t qkv[2] = {rows, E}, o[2] = {E, E};
	json_t *m = json_pack("{s:I, s:I, s:I, s:o, s:o}", "d_model", (json_int_t)E, "num_heads",
			      (json_int_t)H, "num_kv_heads", (json_int_t)Hkv, "in_proj_weight",
			      tensor_obj(field(w, "w_qkv"), 2, qkv), "out_proj_weight",
			      tensor_obj(field(w, "w_o"), 2, o));

	if (json_is_array(json_object_get(w, "b_qkv"))) {
		json_object_set_new(m, "in_proj_bias", tensor_obj(field(w, "b_qkv"), 1, &rows));
		json_object_set_new(m, "out_proj_bias", tensor_obj(field(w, "b_o"), 1, &E));
	}
	return m;
}

/*
 * The engine's user mask (rank 2..4, right-aligned to [B, H, Lq, Lk], last axis
 * possibly short) as the API's rank-4 allow / bias: leading 1s, and a short
 * last axis padded with "not allowed".
 */
static json_t *fixture_user_mask(const json_t *user, size_t Lk, int *is_bool)
{
	const json_t *shape = field(user, "shape"), *data = field(user, "data");
	size_t r = json_array_size(shape), s[4] = {1, 1, 1, 1}, full[4], rows, pos = 0;
	json_t *flat = json_array(), *out;

	*is_bool = strcmp(json_string_value(field(user, "kind")), "bool") == 0;
	for (size_t a = 0; a < r; a++)
		s[4 - r + a] = (size_t)json_integer_value(json_array_get(shape, a));
	memcpy(full, s, sizeof(s));
	if (s[3] != 1 && s[3] < Lk)
		full[3] = Lk;
	rows = s[0] * s[1] * s[2];
	for (size_t i = 0; i < rows; i++) {
		for (size_t j = 0; j < full[3]; j++) {
			const json_t *cell = j < s[3] ? json_array_get(data, i * s[3] + j) : NULL;

			if (*is_bool)
				json_array_append_new(
				    flat, json_boolean(cell && json_number_value(cell) != 0));
			else
				json_array_append_new(flat, cell ? json_deep_copy(cell)
								 : json_string("-Infinity"));
		}
	}
	out = nest(flat, full, 4, &pos);
	json_decref(flat);
	return out;
}

static json_t *fixture_mask(const json_t *req, size_t Lk)
{
	const json_t *m = field(req, "mask");
	const char *causal = json_string_value(field(m, "causal"));
	json_t *out = json_object();

	if (strcmp(causal, "none") != 0)
		json_object_set_new(out, "causal", json_true());
	if (strcmp(causal, "bottom_right") == 0)
		json_object_set_new(out, "alignment", json_string("bottom_right"));
	if (int_field(m, "window") > 0)
		json_object_set(out, "window", field(m, "window"));
	if (json_object_get(m, "kv_lengths") != NULL)
		json_object_set(out, "lengths", field(m, "kv_lengths"));
	if (json_object_get(m, "user") != NULL) {
		int is_bool;
		json_t *u = fixture_user_mask(field(m, "user"), Lk, &is_bool);

		json_object_set_new(out, is_bool ? "allow" : "bias", u);
	}
	return out;
}

static json_t *fixture_positional(const json_t *req)
{
	const json_t *p = field(req, "positional");
	const char *kind = json_string_value(field(p, "kind"));
	json_t *out;

	if (strcmp(kind, "none") == 0)
		return json_string("none");
	out = json_pack("{s:s, s:O, s:O}", "type", kind, "style", field(p, "style"), "offset",
			field(p, "offset"));
	if (json_number_value(field(p, "theta")) != 0)
		json_object_set(out, "theta", field(p, "theta"));
	if (json_integer_value(field(p, "rotary_dim")) != 0)
		json_object_set(out, "rotary_dim", field(p, "rotary_dim"));
	if (json_number_value(field(p, "scaling")) != 0)
		json_object_set(out, "scaling", field(p, "scaling"));
	if (json_object_get(p, "q_positions") != NULL)
		json_object_set(out, "positions", field(p, "q_positions"));
	if (json_object_get(p, "k_positions") != NULL)
		json_object_set(out, "key_positions", field(p, "k_positions"));
	return out;
}

/* A golden fixture (tests/fixtures/README.md) as a /v1/attention request. */
static json_t *fixture_request(const json_t *fx)
{
	const json_t *req = field(fx, "request");
	size_t E = (size_t)int_field(field(fx, "config"), "E"), B = (size_t)int_field(req, "B");
	size_t Lq = (size_t)int_field(req, "Lq"), Lk = (size_t)int_field(req, "Lk");
	size_t qs[3] = {B, Lq, E}, ks[3] = {B, Lk, E};
	json_t *r =
	    json_pack("{s:o, s:o, s:o, s:o, s:O, s:O}", "model", fixture_model(fx), "embeddings",
		      tensor_obj(field(req, "query"), 3, qs), "mask", fixture_mask(req, Lk),
		      "positional", fixture_positional(req), "weights", field(req, "weights_mode"),
		      "scores", field(req, "scores_view"));

	if (json_object_get(req, "key") != NULL)
		json_object_set_new(r, "key", tensor_obj(field(req, "key"), 3, ks));
	if (json_object_get(req, "value") != NULL)
		json_object_set_new(r, "value", tensor_obj(field(req, "value"), 3, ks));
	if (json_number_value(field(req, "scale")) != 0)
		json_object_set(r, "scale", field(req, "scale"));
	if (json_number_value(field(req, "softcap")) != 0)
		json_object_set(r, "softcap", field(req, "softcap"));
	return r;
}

/* The answer to a fixture's request against its expected tensors. */
static void fixture_check(const json_t *fx, const struct answer *a)
{
	const json_t *exp = field(fx, "expected");
	static const char *const pairs[3][2] = {
	    {"out", "output"}, {"weights", "weights"}, {"scores", "scores"}};

	expect_ok(a);
	for (size_t p = 0; p < 3; p++) {
		const json_t *want = json_object_get(exp, pairs[p][0]);
		struct flat got;
		size_t n;
		float *x;

		if (want == NULL)
			continue;
		got = tensor_at(a, pairs[p][1]);
		x = floats_of(want, &n);
		ck_assert_msg(got.n == n, "%s: %zu values, want %zu", pairs[p][1], got.n, n);
		assert_near_n(pairs[p][1], got.x, x, n, TOL_ABS, TOL_REL);
	}
}

static char **fixture_names; /* from MANIFEST, owned by main */
static size_t fixture_count;

START_TEST(test_fixture_count)
{
	int seed = 0;

	ck_assert_msg(fixture_count >= MIN_FIXTURES, "%zu fixtures listed in %s/mha/MANIFEST",
		      fixture_count, fixtures_dir());
	for (size_t i = 0; i < fixture_count; i++)
		seed |= strcmp(fixture_names[i], "seed_demo_000") == 0;
	ck_assert(seed);
}
END_TEST

/* Every golden fixture through POST /v1/attention. */
START_TEST(test_fixture)
{
	json_t *fx = load_fixture(fixture_names[_i]);
	struct answer a = attention_json(fixture_request(fx));

	fixture_check(fx, &a);
}
END_TEST

/* PyTorch, bias, key padding [6, 3, 1] as mask.lengths. */
START_TEST(test_torch_key_padding_lengths)
{
	json_t *fx = load_fixture("torch_key_padding_b3");
	json_t *req = fixture_request(fx);
	struct answer a;

	ck_assert(json_is_true(field(field(fx, "config"), "bias")));
	ck_assert_ptr_nonnull(json_object_get(field(req, "mask"), "lengths"));
	a = attention_json(req);
	fixture_check(fx, &a);
}
END_TEST

/* A fixture's [B, L, E] tensor as a ragged batch of items of lens[b] rows. */
static json_t *ragged_items(const float *x, size_t B, size_t L, size_t E, const json_t *lens)
{
	json_t *items = json_array();

	for (size_t b = 0; b < B; b++)
		json_array_append_new(
		    items,
		    jmatrix(x + b * L * E, (size_t)json_integer_value(json_array_get(lens, b)), E));
	return items;
}

/* The same PyTorch case with key padding as a ragged key / value batch. */
START_TEST(test_torch_key_padding_ragged)
{
	json_t *fx = load_fixture("torch_key_padding_b3");
	const json_t *req = field(fx, "request");
	const json_t *lens = field(field(req, "mask"), "kv_lengths");
	float *key = fx_floats(req, "key", 3 * 6 * 8), *value = fx_floats(req, "value", 3 * 6 * 8);
	float *want_w = fx_floats(field(fx, "expected"), "weights", 3 * 2 * 4 * 6);
	json_t *r = fixture_request(fx);
	struct answer a;
	struct flat out;
	size_t n;

	json_object_del(field(r, "mask"), "lengths");
	json_object_set_new(r, "key", ragged_items(key, 3, 6, 8, lens));
	json_object_set_new(r, "value", ragged_items(value, 3, 6, 8, lens));
	json_object_set_new(r, "weights", json_string("per_head"));
	a = attention_json(r);
	expect_ok(&a);
	out = tensor_at(&a, "output");
	assert_near_n("output", out.x, floats_of(field(field(fx, "expected"), "out"), &n),
		      3 * 4 * 8, TOL_ABS, TOL_REL);
	ck_assert_uint_eq(out.n, n);
	/* weights: item b's [H, Lq, len_b] block (padded columns, if sent, are zero) */
	for (size_t b = 0; b < 3; b++) {
		struct flat w = item_at(&a, "weights", b);
		size_t len = (size_t)json_integer_value(json_array_get(lens, b));
		size_t cols = w.shape[2];

		ck_assert(w.rank == 3 && (cols == len || cols == 6));
		for (size_t h = 0; h < 2; h++)
			for (size_t i = 0; i < 4; i++)
				for (size_t j = 0; j < cols; j++)
					ck_assert(near(wrow(&w, h, i)[j],
						       want_w[((b * 2 + h) * 4 + i) * 6 + j],
						       TOL_ABS, TOL_REL));
	}
}
END_TEST

/* PyTorch self-attention with key padding [5, 2] as a ragged embeddings batch. */
START_TEST(test_torch_self_padding_ragged)
{
	json_t *fx = load_fixture("torch_key_padding_self_e16h4");
	const json_t *req = field(fx, "request");
	const json_t *lens = field(field(req, "mask"), "kv_lengths");
	float *q = fx_floats(req, "query", 2 * 5 * 16);
	float *want_o = fx_floats(field(fx, "expected"), "out", 2 * 5 * 16);
	float *want_w = fx_floats(field(fx, "expected"), "weights", 2 * 5 * 5); /* mean */
	json_t *r = fixture_request(fx);
	struct answer a;

	json_object_del(field(r, "mask"), "lengths");
	json_object_set_new(r, "embeddings", ragged_items(q, 2, 5, 16, lens));
	a = attention_json(r);
	expect_ok(&a);
	for (size_t b = 0; b < 2; b++) {
		size_t len = (size_t)json_integer_value(json_array_get(lens, b));
		struct flat o = item_at(&a, "output", b), w = item_at(&a, "weights", b);

		assert_shape("item output", &o, 2, (int)len, 16);
		assert_shape("item weights", &w, 2, (int)len, (int)len);
		assert_near_n("item output", o.x, want_o + b * 5 * 16, len * 16, TOL_ABS, TOL_REL);
		for (size_t i = 0; i < len; i++)
			assert_near_n("item weights", w.x + i * len, want_w + (b * 5 + i) * 5, len,
				      TOL_ABS, TOL_REL);
	}
}
END_TEST

/* ------------------------------------------------------------------------ */
/* validation: bad requests, their status, code and pointer                  */
/* ------------------------------------------------------------------------ */

#define SQ "[[[[1,0],[0,1]]]]" /* a [1, 1, 2, 2] tensor */
#define SDPA_QKV "{\"q\":" SQ ",\"k\":" SQ ",\"v\":" SQ

struct bad_request {
	const char *name;
	enum api_route route;
	const char *body;
	int status;
	const char *code;
	const char *pointer; /* "" = none, NULL = not checked */
};

#define A API_ROUTE_ATTENTION
#define S API_ROUTE_SDPA

static const struct bad_request bad_requests[] = {
    /* malformed JSON and duplicate keys: 400 */
    {"truncated", A, "{\"model\":", 400, "malformed_json", ""},
    {"trailing garbage", A, "{} x", 400, "malformed_json", ""},
    {"empty body", A, "", 400, "malformed_json", ""},
    {"bare string", A, "\"x\"", 400, "malformed_json", ""},
    {"invalid UTF-8", A, "{\"text\":\"\xff\xfe\"}", 400, "malformed_json", ""},
    {"NUL in a string", A, "{\"text\":\"a\\u0000b\"}", 400, "malformed_json", ""},
    {"duplicate key", A, TINY EMB1 "," EMB1 "}", 400, "duplicate_key", ""},
    {"duplicate nested key", A, TINY EMB1 ",\"mask\":{\"causal\":true,\"causal\":false}}", 400,
     "duplicate_key", ""},
    {"sdpa duplicate key", S, SDPA_QKV ",\"q\":" SQ "}", 400, "duplicate_key", ""},
    {"top-level array", A, "[1,2]", 422, "invalid_type", ""},
    {"sdpa top-level array", S, "[]", 422, "invalid_type", ""},
    /* unknown fields, at every level */
    {"unknown top-level field", A, TINY EMB1 ",\"xyz\":1}", 422, "unknown_field", "/xyz"},
    {"unknown mask field", A, TINY EMB1 ",\"mask\":{\"xyz\":1}}", 422, "unknown_field",
     "/mask/xyz"},
    {"unknown positional field", A, TINY EMB1 ",\"positional\":{\"xyz\":1}}", 422, "unknown_field",
     "/positional/xyz"},
    {"unknown model field", A, "{\"model\":{\"d_model\":8,\"num_heads\":2,\"xyz\":1}," EMB1 "}",
     422, "unknown_field", "/model/xyz"},
    {"pointer escapes / and ~", A, TINY EMB1 ",\"a/b~c\":1}", 422, "unknown_field", "/a~1b~0c"},
    {"unknown tensor field", A,
     TINY "\"embeddings\":{\"shape\":[1,8],\"data\":" R0 ",\"extra\":1}}", 422, "unknown_field",
     "/embeddings/extra"},
    {"sdpa unknown field", S, SDPA_QKV ",\"xyz\":1}", 422, "unknown_field", "/xyz"},
    /* wrong types */
    {"model a number", A, "{\"model\":5," EMB1 "}", 422, "invalid_type", "/model"},
    {"model an array", A, "{\"model\":[]," EMB1 "}", 422, "invalid_type", "/model"},
    {"embeddings a string", A, TINY "\"embeddings\":\"x\"}", 422, "invalid_type", "/embeddings"},
    {"tokens a string", A, TINY "\"tokens\":\"abc\"}", 422, "invalid_type", "/tokens"},
    {"text a number", A, TINY "\"text\":5}", 422, "invalid_type", "/text"},
    {"text item a number", A, TINY "\"text\":[\"a b\",5]}", 422, "invalid_type", "/text/1"},
    {"tokens mixed depth", A, TINY "\"tokens\":[[1,2],3]}", 422, "invalid_type", "/tokens/1"},
    {"tokens nested item", A, TINY "\"tokens\":[1,[2]]}", 422, "invalid_type", "/tokens/1"},
    {"token true", A, TINY "\"tokens\":[true]}", 422, "invalid_type", "/tokens/0"},
    {"token 1.5", A, TINY "\"tokens\":[1.5]}", 422, "invalid_type", "/tokens/0"},
    {"causal a string", A, TINY EMB1 ",\"mask\":{\"causal\":\"yes\"}}", 422, "invalid_type",
     "/mask/causal"},
    {"mask a number", A, TINY EMB1 ",\"mask\":5}", 422, "invalid_value", "/mask"},
    {"mask an unknown name", A, TINY EMB1 ",\"mask\":\"diagonal\"}", 422, "invalid_value", "/mask"},
    {"alignment unknown", A, TINY EMB1 ",\"mask\":{\"alignment\":\"center\"}}", 422,
     "invalid_value", "/mask/alignment"},
    {"window 1.5", A, TINY EMB1 ",\"mask\":{\"window\":1.5}}", 422, "invalid_type", "/mask/window"},
    {"lengths a string", A, TINY EMB1 ",\"mask\":{\"lengths\":\"2\"}}", 422, "invalid_type",
     "/mask/lengths"},
    {"allow numbers", A, TINY EMB1 ",\"mask\":{\"allow\":[[1]]}}", 422, "invalid_type",
     "/mask/allow/0/0"},
    {"bias booleans", A, TINY EMB1 ",\"mask\":{\"bias\":[[true]]}}", 422, "invalid_type",
     "/mask/bias/0/0"},
    {"bias \"-inf\"", A, TINY EMB1 ",\"mask\":{\"bias\":[[\"-inf\"]]}}", 422, "invalid_number",
     "/mask/bias/0/0"},
    {"positional a number", A, TINY EMB1 ",\"positional\":5}", 422, "invalid_value", "/positional"},
    {"positional type unknown", A, TINY EMB1 ",\"positional\":{\"type\":\"xpos\"}}", 422,
     "invalid_value", "/positional/type"},
    {"theta a string", A, TINY EMB1 ",\"positional\":{\"type\":\"rope\",\"theta\":\"big\"}}", 422,
     "invalid_type", "/positional/theta"},
    {"positions a string", A, TINY EMB1 ",\"positional\":{\"type\":\"rope\",\"positions\":\"0\"}}",
     422, "invalid_type", "/positional/positions"},
    {"weights unknown", A, TINY EMB1 ",\"weights\":\"all\"}", 422, "invalid_value", "/weights"},
    {"scores unknown", A, TINY EMB1 ",\"scores\":\"logits\"}", 422, "invalid_value", "/scores"},
    {"encoding unknown", A, TINY EMB1 ",\"encoding\":\"hex\"}", 422, "invalid_value", "/encoding"},
    {"scale a string", A, TINY EMB1 ",\"scale\":\"1\"}", 422, "invalid_type", "/scale"},
    {"softcap a bool", A, TINY EMB1 ",\"softcap\":true}", 422, "invalid_type", "/softcap"},
    {"precision 2.5", A, TINY EMB1 ",\"precision\":2.5}", 422, "invalid_type", "/precision"},
    {"bias flag a string", A,
     "{\"model\":{\"d_model\":8,\"num_heads\":2,\"bias\":\"no\"}," EMB1 "}", 422, "invalid_type",
     "/model/bias"},
    {"d_model a string", A, "{\"model\":{\"d_model\":\"8\",\"num_heads\":2}," EMB1 "}", 422,
     "invalid_type", "/model/d_model"},
    {"sdpa q a string", S, "{\"q\":\"x\",\"k\":" SQ ",\"v\":" SQ "}", 422, "invalid_type", "/q"},
    {"sdpa is_causal 1", S, SDPA_QKV ",\"is_causal\":1}", 422, "invalid_type", "/is_causal"},
    {"sdpa num_heads a string", S,
     "{\"q\":[[[1,0,0,1]]],\"k\":[[[1,0,0,1]]],\"v\":[[[1,0,0,1]]],\"num_heads\":\"2\"}", 422,
     "invalid_type", "/num_heads"},
    /* ragged arrays where not allowed, mixed depth */
    {"ragged [L, E] rows", A, TINY "\"embeddings\":[" R0 ",[1,2,3,4,5,6,7]]}", 422, "ragged_array",
     "/embeddings/1"},
    {"ragged [Lk, E] key rows", A, TINY EMB1 ",\"key\":[" R0 ",[1,2,3]]}", 422, "ragged_array",
     "/key/1"},
    {"ragged row inside a batch item", A, TINY "\"embeddings\":[[" R0 "," R0 "],[[1,2]]]}", 422,
     "ragged_array", "/embeddings/1/0"},
    {"ragged allow", A,
     TINY "\"embeddings\":[" R0 "," R1 "],\"mask\":{\"allow\":[[true,true],"
	  "[true]]}}",
     422, "ragged_array", "/mask/allow/1"},
    {"ragged in_proj_weight", A,
     "{\"model\":{\"d_model\":8,\"num_heads\":2,\"in_proj_weight\":[[1,2],[3]]}," EMB1 "}", 422,
     "ragged_array", "/model/in_proj_weight/1"},
    {"ragged sdpa q", S, "{\"q\":[[[[1,0],[0]]]],\"k\":" SQ ",\"v\":" SQ "}", 422, "ragged_array",
     "/q/0/0/1"},
    {"number after a row", A, TINY "\"embeddings\":[" R0 ",0.5]}", 422, "invalid_shape",
     "/embeddings/1"},
    {"row after a batch item", A, TINY "\"embeddings\":[[" R0 "]," R0 "]}", 422, "invalid_shape",
     "/embeddings/1/0"},
    {"array in place of a number", A, TINY "\"embeddings\":[[1,2,3,4,5,6,7,[8]]]}", 422,
     "invalid_shape", "/embeddings/0/7"},
    {"rank 1 embeddings", A, TINY "\"embeddings\":" R0 "}", 422, "invalid_shape", "/embeddings"},
    {"rank 4 embeddings", A, TINY "\"embeddings\":[[[" R0 "]]]}", 422, "invalid_shape",
     "/embeddings"},
    {"rank 1 bias", A, TINY EMB1 ",\"mask\":{\"bias\":[0]}}", 422, "invalid_shape", "/mask/bias"},
    /* numbers outside float32, non-finite, strings for numbers */
    {"1e39", A, TINY "\"embeddings\":[[1e39,0,0,0,0,0,0,0]]}", 422, "out_of_range",
     "/embeddings/0/0"},
    {"-1e39", A, TINY "\"embeddings\":[" R0 ",[0,0,0,0,0,-1e39,0,0]]}", 422, "out_of_range",
     "/embeddings/1/5"},
    {"1e39 in data", A, TINY "\"embeddings\":{\"shape\":[1,8],\"data\":[0,0,1e39,0,0,0,0,0]}}", 422,
     "out_of_range", "/embeddings/data/2"},
    {"1e39 in key", A, TINY EMB1 ",\"key\":[" R0 ",[0,0,1e39,0,0,0,0,0]]}", 422, "out_of_range",
     "/key/1/2"},
    {"-1e39 in value", A, TINY EMB1 ",\"key\":[" R0 "],\"value\":[[0,-1e39,0,0,0,0,0,0]]}", 422,
     "out_of_range", "/value/0/1"},
    {"1e39 in bias", A, TINY EMB1 ",\"mask\":{\"bias\":[[1e39]]}}", 422, "out_of_range",
     "/mask/bias/0/0"},
    {"1e39 in positions", A, TINY EMB1 ",\"positional\":{\"type\":\"rope\",\"positions\":[1e39]}}",
     422, "out_of_range", "/positional/positions/0"},
    {"1e39 in sdpa q", S, "{\"q\":[[[[1e39,0],[0,1]]]],\"k\":" SQ ",\"v\":" SQ "}", 422,
     "out_of_range", "/q/0/0/0/0"},
    {"-1e39 in sdpa mask", S, SDPA_QKV ",\"attn_mask\":[[0,-1e39],[0,0]]}", 422, "out_of_range",
     "/attn_mask/0/1"},
    {"\"1\" for a number", A, TINY "\"embeddings\":[[0,0,0,0,0,0,0,\"1\"]]}", 422, "invalid_type",
     "/embeddings/0/7"},
    {"\"-Infinity\" in embeddings", A, TINY "\"embeddings\":[[\"-Infinity\",0,0,0,0,0,0,0]]}", 422,
     "invalid_type", "/embeddings/0/0"},
    {"\"NaN\" in key", A, TINY EMB1 ",\"key\":[[0,\"NaN\",0,0,0,0,0,0]]}", 422, "invalid_type",
     "/key/0/1"},
    {"null for a number", A, TINY "\"embeddings\":[[0,0,0,null,0,0,0,0]]}", 422, "invalid_type",
     "/embeddings/0/3"},
    /* an additive mask holds numbers and "-Infinity" only */
    {"\"Infinity\" in bias", A, TINY EMB1 ",\"mask\":{\"bias\":[[\"Infinity\"]]}}", 422,
     "invalid_number", "/mask/bias/0/0"},
    {"\"NaN\" in bias", A, TINY EMB1 ",\"mask\":{\"bias\":[[\"NaN\"]]}}", 422,
     "invalid_number", "/mask/bias/0/0"},
    {"scale 0", A, TINY EMB1 ",\"scale\":0}", 422, "out_of_range", "/scale"},
    {"scale 1e39", A, TINY EMB1 ",\"scale\":1e39}", 422, "out_of_range", "/scale"},
    {"softcap -1", A, TINY EMB1 ",\"softcap\":-1}", 422, "out_of_range", "/softcap"},
    {"precision 0", A, TINY EMB1 ",\"precision\":0}", 422, "out_of_range", "/precision"},
    {"precision 10", A, TINY EMB1 ",\"precision\":10}", 422, "out_of_range", "/precision"},
    /* token ids */
    {"token -1", A, TINY "\"tokens\":[-1]}", 422, "token_out_of_range", "/tokens/0"},
    {"token = vocab", A, TINY "\"tokens\":[0,64]}", 422, "token_out_of_range", "/tokens/1"},
    {"base token 32000", A, "{\"model\":\"base\",\"tokens\":[31999,32000]}", 422,
     "token_out_of_range", "/tokens/1"},
    {"token 2^63 - 1", A, TINY "\"tokens\":[9223372036854775807]}", 422, "token_out_of_range",
     "/tokens/0"},
    {"token -2^63", A, TINY "\"tokens\":[-9223372036854775808]}", 422, "token_out_of_range",
     "/tokens/0"},
    {"token in a batch", A, TINY "\"tokens\":[[1,2],[3,-1]]}", 422, "token_out_of_range",
     "/tokens/1/1"},
    {"no tokens", A, TINY "\"tokens\":[]}", 422, "invalid_type", "/tokens"},
    {"empty batch item", A, TINY "\"tokens\":[[1],[]]}", 422, "empty_sequence", "/tokens/1"},
    {"empty text", A, TINY "\"text\":\"\"}", 422, "empty_sequence", "/text"},
    {"blank text", A, TINY "\"text\":\" \\t\\n \"}", 422, "empty_sequence", "/text"},
    {"blank text item", A, TINY "\"text\":[\"a\",\" \"]}", 422, "empty_sequence", "/text/1"},
    {"no text items", A, TINY "\"text\":[]}", 422, "invalid_type", "/text"},
    {"tokens without a table", A, "{\"model\":{\"d_model\":8,\"num_heads\":2},\"tokens\":[1]}", 422,
     "no_embedding_table", "/tokens"},
    /* models */
    {"unknown model", A, "{\"model\":\"nope\"," EMB1 "}", 404, "model_not_found", "/model"},
    {"E % H != 0", A, "{\"model\":{\"d_model\":6,\"num_heads\":4},\"embeddings\":[[1,2,3,4,5,6]]}",
     422, "heads_do_not_divide_model_dim", "/model/num_heads"},
    {"H % Hkv != 0", A, "{\"model\":{\"d_model\":8,\"num_heads\":2,\"num_kv_heads\":3}," EMB1 "}",
     422, "kv_heads_do_not_divide_heads", "/model/num_kv_heads"},
    {"d_model 0", A, "{\"model\":{\"d_model\":0,\"num_heads\":2}," EMB1 "}", 422, "out_of_range",
     "/model/d_model"},
    {"num_heads 0", A, "{\"model\":{\"d_model\":8,\"num_heads\":0}," EMB1 "}", 422, "out_of_range",
     "/model/num_heads"},
    {"d_model over the inline limit", A, "{\"model\":{\"d_model\":2048,\"num_heads\":2}," EMB1 "}",
     422, "out_of_range", "/model/d_model"},
    {"num_heads missing", A, "{\"model\":{\"d_model\":8}," EMB1 "}", 422, "missing_field",
     "/model"},
    {"in_proj_weight of the wrong shape", A,
     "{\"model\":{\"d_model\":8,\"num_heads\":2,\"in_proj_weight\":[[1,2]]}," EMB1 "}", 422,
     "dimension_mismatch", "/model/in_proj_weight"},
    {"out_proj_weight alone", A,
     "{\"model\":{\"d_model\":8,\"num_heads\":2,\"out_proj_weight\":{\"shape\":[8,8],"
     "\"data\":[]}}," EMB1 "}",
     422, "invalid_model", NULL},
    /* inputs */
    {"two inputs", A, TINY EMB1 ",\"tokens\":[1]}", 422, "invalid_input", ""},
    {"three inputs", A, TINY EMB1 ",\"tokens\":[1],\"text\":\"a\"}", 422, "invalid_input", ""},
    {"no input", A, "{\"model\":\"tiny\"}", 422, "invalid_input", ""},
    {"empty object", A, "{}", 422, "invalid_input", ""},
    {"value without key", A, TINY EMB1 ",\"value\":[" R0 "]}", 422, "invalid_input", "/value"},
    {"embeddings of the wrong width", A, TINY "\"embeddings\":[[1,2,3,4,5,6,7]]}", 422,
     "dimension_mismatch", "/embeddings"},
    {"key of the wrong width", A, TINY EMB1 ",\"key\":[[1,2,3]]}", 422, "dimension_mismatch",
     "/key"},
    {"value unlike key", A, TINY EMB1 ",\"key\":[" R0 "," R1 "],\"value\":[" R0 "]}", 422,
     "dimension_mismatch", "/value"},
    {"batched key, unbatched query", A, TINY EMB1 ",\"key\":[[" R0 "]]}", 422, "dimension_mismatch",
     "/key"},
    {"key batch of another size", A, TINY "\"embeddings\":[[" R0 "]],\"key\":[[" R0 "],[" R1 "]]}",
     422, "dimension_mismatch", "/key"},
    {"ragged value unlike ragged key", A,
     TINY "\"embeddings\":[[" R0 "],[" R1 "]],\"key\":[[" R0 "," R1 "],[" R2 "," R3
	  "]],\"value\":[[" R0 "," R1 "],[" R2 "]]}",
     422, "dimension_mismatch", "/value/1"},
    {"key_positions without key", A,
     TINY EMB1 ",\"positional\":{\"type\":\"rope\",\"key_positions\":[0]}}", 422, "invalid_value",
     "/positional/key_positions"},
    /* zero and impossible dimensions, tensor objects */
    {"no rows", A, TINY "\"embeddings\":[]}", 422, "invalid_shape", "/embeddings"},
    {"empty row", A, TINY "\"embeddings\":[[]]}", 422, "invalid_shape", "/embeddings"},
    {"shape with 0", A, TINY "\"embeddings\":{\"shape\":[0,8],\"data\":[]}}", 422, "invalid_shape",
     "/embeddings/shape/0"},
    {"shape with -1", A, TINY "\"embeddings\":{\"shape\":[1,-8],\"data\":" R0 "}}", 422,
     "invalid_shape", "/embeddings/shape/1"},
    {"shape missing", A, TINY "\"embeddings\":{\"data\":" R0 "}}", 422, "invalid_shape",
     "/embeddings/shape"},
    {"shape of rank 5", A, TINY "\"embeddings\":{\"shape\":[1,1,1,1,8],\"data\":" R0 "}}", 422,
     "invalid_shape", "/embeddings/shape"},
    {"data of the wrong length", A, TINY "\"embeddings\":{\"shape\":[2,8],\"data\":" R0 "}}", 422,
     "invalid_shape", "/embeddings/data"},
    {"data and base64", A,
     TINY "\"embeddings\":{\"shape\":[1,8],\"data\":" R0 ",\"base64\":\"" R0_B64 "\"}}", 422,
     "invalid_tensor", "/embeddings"},
    {"neither data nor base64", A, TINY "\"embeddings\":{\"shape\":[1,8]}}", 422, "invalid_tensor",
     "/embeddings"},
    {"2^64 elements", A, TINY "\"embeddings\":{\"shape\":[4294967296,4294967296,8],\"data\":[]}}",
     422, "too_large", "/embeddings"},
    {"window 0", A, TINY EMB1 ",\"mask\":{\"window\":0}}", 422, "out_of_range", "/mask/window"},
    {"positions of the wrong count", A,
     TINY EMB3 ",\"positional\":{\"type\":\"rope\",\"positions\":[0,1]}}", 422,
     "dimension_mismatch", "/positional/positions"},
    {"odd rotary_dim", A, TINY EMB1 ",\"positional\":{\"type\":\"rope\",\"rotary_dim\":3}}", 422,
     "invalid_rotary_dim", "/positional/rotary_dim"},
    {"rotary_dim over D", A, TINY EMB1 ",\"positional\":{\"type\":\"rope\",\"rotary_dim\":6}}", 422,
     "out_of_range", "/positional/rotary_dim"},
    {"theta 1", A, TINY EMB1 ",\"positional\":{\"type\":\"rope\",\"theta\":1}}", 422,
     "out_of_range", "/positional/theta"},
    /* masks */
    {"allow and bias", A, TINY EMB1 ",\"mask\":{\"allow\":[[true]],\"bias\":[[0]]}}", 422,
     "invalid_mask", "/mask"},
    {"allow of the wrong shape", A, TINY EMB1 ",\"mask\":{\"allow\":[[true,true]]}}", 422,
     "dimension_mismatch", "/mask/allow"},
    {"bias of the wrong batch", A, TINY EMB1 ",\"mask\":{\"bias\":[[[0]],[[0]]]}}", 422,
     "dimension_mismatch", "/mask/bias"},
    {"lengths over Lk", A, TINY EMB1 ",\"mask\":{\"lengths\":[2]}}", 422, "out_of_range",
     "/mask/lengths/0"},
    {"lengths -1", A, TINY EMB1 ",\"mask\":{\"lengths\":[-1]}}", 422, "out_of_range",
     "/mask/lengths/0"},
    {"lengths of the wrong count", A, TINY EMB1 ",\"mask\":{\"lengths\":[1,1]}}", 422,
     "dimension_mismatch", "/mask/lengths"},
    /* base64 */
    {"base64 of the wrong length", A, TINY "\"embeddings\":{\"shape\":[1,8],\"base64\":\"AAAA\"}}",
     422, "invalid_base64", "/embeddings/base64"},
    {"base64 with a bad character", A,
     TINY
     "\"embeddings\":{\"shape\":[1,8],\"base64\":\"AAAAPwAAgL4AAAA+AACAPw!AAAAAIC/AABAPwAAgD4=\"}}",
     422, "invalid_base64", "/embeddings/base64"},
    {"base64 with inner padding", A,
     TINY
     "\"embeddings\":{\"shape\":[1,8],\"base64\":\"AAAAPwAAgL4AAAA+AACAPw==AAAAIC/AABAPwAAgD4=\"}}",
     422, "invalid_base64", "/embeddings/base64"},
    {"base64 not a string", A, TINY "\"embeddings\":{\"shape\":[1,8],\"base64\":5}}", 422,
     "invalid_type", "/embeddings/base64"},
    {"base64 holding NaN", A,
     TINY "\"embeddings\":{\"shape\":[1,8],\"base64\":"
	  "\"AADAfwAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"}}",
     422, "out_of_range", "/embeddings/base64"},
    /* /v1/sdpa */
    {"sdpa without q", S, "{\"k\":" SQ ",\"v\":" SQ "}", 422, "invalid_type", "/q"},
    {"sdpa k of another rank", S, "{\"q\":" SQ ",\"k\":[[[1,0]]],\"v\":" SQ "}", 422,
     "dimension_mismatch", "/k"},
    {"sdpa k of another length than v", S,
     "{\"q\":" SQ ",\"k\":[[[[1,0],[0,1],[1,1]]]],\"v\":" SQ "}", 422, "dimension_mismatch", "/k"},
    {"sdpa 3D without num_heads", S,
     "{\"q\":[[[1,0,0,1]]],\"k\":[[[1,0,0,1]]],\"v\":[[[1,0,0,"
     "1]]]}",
     422, "dimension_mismatch", "/num_heads"},
    {"sdpa H % Hkv != 0", S,
     "{\"q\":[[[[1,0]],[[0,1]],[[1,1]]]],\"k\":[[[[1,0]],[[0,1]]]],\"v\":[[[[1,0]],[[0,1]]]]}", 422,
     "kv_heads_do_not_divide_heads", NULL},
    {"sdpa past_key alone", S, SDPA_QKV ",\"past_key\":[[[[1,0]]]]}", 422, "invalid_input",
     "/past_value"},
    {"sdpa past of the wrong width", S,
     SDPA_QKV ",\"past_key\":[[[[1,0,0]]]],\"past_value\":[[[[1,0]]]]}", 422, "dimension_mismatch",
     "/past_key"},
    {"sdpa kv_lengths with a past", S,
     SDPA_QKV ",\"past_key\":[[[[1,0]]]],\"past_value\":[[[[1,0]]]],\"kv_lengths\":[1]}", 422,
     "invalid_input", "/kv_lengths"},
    {"sdpa kv_lengths over S", S, SDPA_QKV ",\"kv_lengths\":[3]}", 422, "out_of_range",
     "/kv_lengths/0"},
    {"sdpa kv_lengths of the wrong count", S, SDPA_QKV ",\"kv_lengths\":[1,1]}", 422,
     "dimension_mismatch", "/kv_lengths"},
    {"sdpa mask of the wrong shape", S,
     SDPA_QKV ",\"attn_mask\":[[true,false,true],[true,"
	      "true,true]]}",
     422, "mask_shape", "/attn_mask"},
    {"sdpa mask mixing bool and numbers", S, SDPA_QKV ",\"attn_mask\":[[true,false],[true,1]]}",
     422, "invalid_type", "/attn_mask/1/1"},
    {"sdpa scores unknown", S, SDPA_QKV ",\"scores\":\"logits\"}", 422, "invalid_value", "/scores"},
};

#undef A
#undef S

START_TEST(test_bad_request)
{
	const struct bad_request *r = &bad_requests[_i];
	struct answer a = call(r->route, NULL, r->body);
	const json_t *e = json_object_get(a.json, "error");
	const char *code = json_string_value(json_object_get(e, "code"));
	const char *ptr = json_string_value(json_object_get(e, "pointer"));

	ck_assert_msg(a.status == r->status && code != NULL && strcmp(code, r->code) == 0 &&
			  (r->pointer == NULL || strcmp(ptr ? ptr : "", r->pointer) == 0),
		      "%s: want %d %s at '%s', got %d: %.300s", r->name, r->status, r->code,
		      r->pointer ? r->pointer : "*", a.status, a.text);
}
END_TEST

/* Malformed JSON: the message has the line and the column. */
START_TEST(test_malformed_position)
{
	struct answer a = attention("{\n  \"model\": \"tiny\",\n  \"embeddings\": [1,\n}");
	const char *msg;

	expect_error(&a, 400, "malformed_json", "");
	msg = json_string_value(field(field(a.json, "error"), "message"));
	ck_assert_msg(strstr(msg, "line 4") != NULL && strstr(msg, "column") != NULL,
		      "message without line 4 and a column: %s", msg);
}
END_TEST

/*
 * 2^63 does not fit jansson's integer: it fails at parse time. Either 400
 * (malformed, as now) or 422 is right; never 5xx.
 */
START_TEST(test_token_2_pow_63)
{
	struct answer a = attention(TINY "\"tokens\":[9223372036854775808]}");
	struct answer b = attention(TINY "\"tokens\":[18446744073709551616]}");

	ck_assert_msg(a.status == 400 || a.status == 422, "%d: %s", a.status, a.text);
	ck_assert_msg(b.status == 400 || b.status == 422, "%d: %s", b.status, b.text);
}
END_TEST

/* Explicit weights: both projections or none, biases in pairs, shapes exact. */
START_TEST(test_inline_weights)
{
	float *zq = keep(calloc(24 * 8, sizeof(float))), *zo = keep(calloc(8 * 8, sizeof(float)));
	float *nan_q = keep(calloc(24 * 8, sizeof(float)));
	const char *wq = fmt("\"in_proj_weight\":{\"shape\":[24,8],\"base64\":\"%s\"}",
			     b64_encode(zq, 24 * 8 * sizeof(float)));
	const char *wo = fmt("\"out_proj_weight\":{\"shape\":[8,8],\"base64\":\"%s\"}",
			     b64_encode(zo, 8 * 8 * sizeof(float)));
	const char *m = "{\"model\":{\"d_model\":8,\"num_heads\":2,";
	const char *bq = "\"in_proj_bias\":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]";
	const char *bo = "\"out_proj_bias\":[1,2,3,4,5,6,7,8]";
	struct answer a;
	struct flat out;

	nan_q[5] = NAN;
	a = attention(fmt("%s%s}," EMB1 "}", m, wq));
	expect_error(&a, 422, "invalid_model", "/model");
	a = attention(fmt("%s%s,%s,%s}," EMB1 "}", m, wq, wo, bq));
	expect_error(&a, 422, "invalid_model", "/model");
	a = attention(fmt("%s%s,%s,%s,\"out_proj_bias\":[1,2,3]}," EMB1 "}", m, wq, wo, bq));
	expect_error(&a, 422, "dimension_mismatch", "/model/out_proj_bias");
	a = attention(fmt("%s%s,%s,\"embed_tokens\":[" R0 "]}," EMB1 "}", m, wq, wo));
	expect_error(&a, 422, "invalid_model", "/model/embed_tokens");
	a = attention(fmt("%s%s,%s,\"vocab_size\":4}," EMB1 "}", m, wq, wo));
	expect_error(&a, 422, "invalid_model", "/model/embed_tokens");
	a = attention(fmt("%s\"in_proj_weight\":{\"shape\":[24,8],\"base64\":\"%s\"},%s}," EMB1 "}",
			  m, b64_encode(nan_q, 24 * 8 * sizeof(float)), wo));
	expect_error(&a, 422, "out_of_range", "/model/in_proj_weight/base64");
	/* zero weights: the output is the output bias, exactly */
	a = attention(fmt("%s%s,%s,%s,%s}," EMB3 "}", m, wq, wo, bq, bo));
	expect_ok(&a);
	out = tensor_at(&a, "output");
	for (size_t k = 0; k < out.n; k++)
		ck_assert(out.x[k] == (float)(k % 8 + 1));
}
END_TEST

/* ------------------------------------------------------------------------ */
/* sdpa: ONNX conformance cases and a few by hand                           */
/* ------------------------------------------------------------------------ */

static const char *onnx_dir(void)
{
	const char *d = getenv("ATTN_ONNX_DIR");

	return d && *d ? d : ONNX_DEFAULT_DIR;
}

static char **onnx_names; /* sorted file names, owned by main */
static size_t onnx_count;

/* x rounded to the nearest float16 (ties to even); values here stay far from overflow. */
static double half_round(double x)
{
	int e;

	if (x == 0 || !isfinite(x))
		return x;
	frexp(x, &e); /* |x| in [2^(e-1), 2^e) */
	return nearbyint(ldexp(x, -((e - 1 < -14 ? -14 : e - 1) - 10))) *
	       ldexp(1.0, (e - 1 < -14 ? -14 : e - 1) - 10);
}

/* Consecutive float16 values have consecutive ordinals (+0 and -0 share 0). */
static long half_ordinal(double h)
{
	double a = fabs(h);
	long o;
	int e;

	if (a < ldexp(1.0, -14)) {
		o = (long)(a / ldexp(1.0, -24));
	} else {
		frexp(a, &e);
		o = (long)(e - 1 + 15) * 1024 + (long)(a / ldexp(1.0, e - 11)) - 1024;
	}
	return h < 0 ? -o : o;
}

/* {"shape", "data"} of a case tensor, without its dtype. */
static json_t *onnx_obj(const json_t *t)
{
	return json_pack("{s:O, s:O}", "shape", field(t, "shape"), "data", field(t, "data"));
}

static size_t shape_of(const json_t *t, size_t *shape)
{
	const json_t *s = field(t, "shape");

	for (size_t a = 0; a < json_array_size(s); a++)
		shape[a] = (size_t)json_integer_value(json_array_get(s, a));
	return json_array_size(s);
}

/* An ONNX Attention case (that folder's README) as a /v1/sdpa request. */
static json_t *onnx_request(const json_t *cs)
{
	static const char *const views[] = {"raw", "softcap", "masked", "softmax"};
	static const char *const qkv[3][2] = {{"Q", "q"}, {"K", "k"}, {"V", "v"}};
	const json_t *in = field(cs, "inputs"), *attrs = field(cs, "attributes");
	const json_t *mask = json_object_get(in, "attn_mask");
	json_t *v;
	json_t *r = json_object();

	for (size_t k = 0; k < 3; k++)
		json_object_set_new(r, qkv[k][1], onnx_obj(field(in, qkv[k][0])));
	if (mask != NULL) { /* masks travel as nested arrays, the other tensors as objects */
		size_t shape[4], pos = 0, rank = shape_of(mask, shape);

		json_object_set_new(r, "attn_mask", nest(field(mask, "data"), shape, rank, &pos));
	}
	if (json_object_get(in, "past_key") != NULL) {
		json_object_set_new(r, "past_key", onnx_obj(field(in, "past_key")));
		json_object_set_new(r, "past_value", onnx_obj(field(in, "past_value")));
	}
	if (json_object_get(in, "nonpad_kv_seqlen") != NULL)
		json_object_set(r, "kv_lengths", field(field(in, "nonpad_kv_seqlen"), "data"));
	if ((v = json_object_get(attrs, "is_causal")) != NULL)
		json_object_set_new(r, "is_causal", json_boolean(json_integer_value(v) != 0));
	if ((v = json_object_get(attrs, "q_num_heads")) != NULL)
		json_object_set(r, "num_heads", v);
	if ((v = json_object_get(attrs, "kv_num_heads")) != NULL)
		json_object_set(r, "num_kv_heads", v);
	if ((v = json_object_get(attrs, "scale")) != NULL)
		json_object_set(r, "scale", v);
	if ((v = json_object_get(attrs, "softcap")) != NULL)
		json_object_set(r, "softcap", v);
	if (json_object_get(field(cs, "outputs"), "qk_matmul_output") != NULL) {
		v = json_object_get(attrs, "qk_matmul_output_mode");
		json_object_set_new(r, "scores", json_string(views[v ? json_integer_value(v) : 0]));
	}
	return r;
}

/* float32: within 1e-5; float16: ours rounded to float16 within 1 ulp; -inf exactly. */
static void onnx_compare(const char *name, const char *what, const struct flat *got,
			 const json_t *want, int exact)
{
	size_t shape[4], rank = shape_of(want, shape), n;
	int f16 = strcmp(json_string_value(field(want, "dtype")), "float16") == 0;
	float *x = floats_of(field(want, "data"), &n);

	ck_assert_msg(got->rank == rank && memcmp(got->shape, shape, rank * sizeof(size_t)) == 0,
		      "%s: %s has another shape", name, what);
	for (size_t k = 0; k < n; k++) {
		int ok;

		if (exact || !isfinite(x[k]))
			ok = near(got->x[k], x[k], 0, 0);
		else if (f16)
			ok = labs(half_ordinal(half_round(got->x[k])) - half_ordinal(x[k])) <= 1;
		else
			ok = near(got->x[k], x[k], 1e-5, 0);
		ck_assert_msg(ok, "%s: %s[%zu] = %.9g, want %.9g%s", name, what, k,
			      (double)got->x[k], (double)x[k], f16 ? " (float16)" : "");
	}
}

START_TEST(test_onnx_count)
{
	ck_assert_msg(onnx_count == ONNX_CASE_COUNT, "%zu ONNX cases in %s, want %d", onnx_count,
		      onnx_dir(), ONNX_CASE_COUNT);
}
END_TEST

START_TEST(test_onnx_case)
{
	const char *path = fmt("%s/%s", onnx_dir(), onnx_names[_i]);
	json_error_t jerr;
	json_t *cs = keep_json(json_load_file(path, 0, &jerr));
	const json_t *outs;
	struct answer a;

	ck_assert_msg(cs != NULL, "%s: %s", path, jerr.text);
	outs = field(cs, "outputs");
	a = call_json(API_ROUTE_SDPA, onnx_request(cs));
	ck_assert_msg(a.status == 200, "%s: %d %.300s", onnx_names[_i], a.status, a.text);
	{
		struct flat y = tensor_at(&a, "output");

		onnx_compare(onnx_names[_i], "Y", &y, field(outs, "Y"), 0);
	}
	if (json_object_get(outs, "present_key") != NULL) {
		struct flat pk = tensor_at(&a, "present_key"), pv = tensor_at(&a, "present_value");

		onnx_compare(onnx_names[_i], "present_key", &pk, field(outs, "present_key"), 1);
		onnx_compare(onnx_names[_i], "present_value", &pv, field(outs, "present_value"), 1);
	}
	if (json_object_get(outs, "qk_matmul_output") != NULL) {
		struct flat s = tensor_at(&a, "scores");

		onnx_compare(onnx_names[_i], "qk_matmul_output", &s,
			     field(outs, "qk_matmul_output"), 0);
	}
}
END_TEST

/* q = k = v = I [1, 1, 2, 2]: the answer by hand. */
START_TEST(test_sdpa_by_hand)
{
	struct answer none = sdpa(SDPA_QKV "}");
	struct answer per = sdpa(SDPA_QKV ",\"weights\":\"per_head\"}");
	struct answer mean = sdpa(SDPA_QKV ",\"weights\":\"mean\",\"encoding\":\"base64\"}");
	double s = 1 / sqrt(2.0), p = exp(s) / (exp(s) + 1);
	const float want[4] = {(float)p, (float)(1 - p), (float)(1 - p), (float)p};
	const json_t *shape;
	struct flat o, w;

	expect_ok(&none);
	shape = field(none.json, "shape");
	ck_assert_int_eq(int_field(shape, "batch"), 1);
	ck_assert_int_eq(int_field(shape, "num_heads"), 1);
	ck_assert_int_eq(int_field(shape, "key_length"), 2);
	ck_assert_int_eq(int_field(shape, "head_dim"), 2);
	ck_assert_ptr_null(json_object_get(none.json, "weights"));
	ck_assert_ptr_null(json_object_get(none.json, "present_key"));
	o = tensor_at(&none, "output");
	assert_shape("output", &o, 4, 1, 1, 2, 2);
	assert_near_n("output", o.x, want, 4, SAME_ABS, SAME_REL);
	expect_ok(&per);
	w = tensor_at(&per, "weights");
	assert_shape("weights", &w, 4, 1, 1, 2, 2);
	assert_near_n("weights", w.x, want, 4, SAME_ABS, SAME_REL);
	expect_ok(&mean);
	w = tensor_at(&mean, "weights");
	assert_shape("mean", &w, 3, 1, 2, 2);
	assert_near_n("mean", w.x, want, 4, SAME_ABS, SAME_REL);
}
END_TEST

/* 3D [B, L, H * D] splits heads head-major, as the 4D [B, H, L, D] equivalent. */
START_TEST(test_sdpa_3d_layout)
{
	struct answer d3 = sdpa("{\"q\":[[[1,2,3,4],[5,6,7,8]]],\"k\":[[[1,0,0,1],[0,1,1,0]]],"
				"\"v\":[[[1,2,3,4],[5,6,7,8]]],\"num_heads\":2}");
	struct answer d4 =
	    sdpa("{\"q\":[[[[1,2],[5,6]],[[3,4],[7,8]]]],\"k\":[[[[1,0],[0,1]],[[0,1],"
		 "[1,0]]]],\"v\":[[[[1,2],[5,6]],[[3,4],[7,8]]]]}");
	struct flat a, b;

	expect_ok(&d3);
	expect_ok(&d4);
	a = tensor_at(&d3, "output"); /* [1, 2, 4] */
	b = tensor_at(&d4, "output"); /* [1, 2, 2, 2] */
	assert_shape("3D output", &a, 3, 1, 2, 4);
	for (size_t l = 0; l < 2; l++)
		for (size_t h = 0; h < 2; h++)
			assert_near_n("3D vs 4D", a.x + l * 4 + h * 2, b.x + (h * 2 + l) * 2, 2, 0,
				      0);
}
END_TEST

/* A boolean attn_mask as {"shape", "data"} is read as boolean, as the nested form. */
START_TEST(test_sdpa_bool_mask_object)
{
	struct answer nested = sdpa(SDPA_QKV ",\"attn_mask\":[[true,false],[true,true]]}");
	struct answer obj = sdpa(SDPA_QKV ",\"attn_mask\":{\"shape\":[2,2],\"data\":[true,false,"
					  "true,true]}}");

	expect_ok(&nested);
	expect_ok(&obj);
	assert_same(&nested, &obj, "output", 0, 0);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* get                                                                      */
/* ------------------------------------------------------------------------ */

static const json_t *model_named(const json_t *list, const char *name)
{
	for (size_t i = 0; i < json_array_size(list); i++) {
		const json_t *m = json_array_get(list, i);

		if (strcmp(json_string_value(field(m, "name")), name) == 0)
			return m;
	}
	ck_abort_msg("no model %s in the list", name);
	return NULL;
}

START_TEST(test_models)
{
	struct answer a = call(API_ROUTE_MODELS, NULL, NULL);
	const json_t *list, *base, *tiny;

	expect_ok(&a);
	list = field(a.json, "models");
	ck_assert_uint_eq(json_array_size(list), 2);
	base = model_named(list, "base");
	tiny = model_named(list, "tiny");
	ck_assert_int_eq(int_field(base, "d_model"), 512);
	ck_assert_int_eq(int_field(base, "num_heads"), 8);
	ck_assert_int_eq(int_field(base, "vocab_size"), 32000);
	ck_assert(json_is_true(field(base, "default")));
	ck_assert_int_eq(int_field(tiny, "d_model"), 8);
	ck_assert_int_eq(int_field(tiny, "num_heads"), 2);
	ck_assert_int_eq(int_field(tiny, "head_dim"), 4);
	ck_assert_int_eq(int_field(tiny, "vocab_size"), 64);
	ck_assert(json_is_false(field(tiny, "default")));
	ck_assert(strncmp(json_string_value(field(tiny, "source")), "seed:", 5) == 0);
}
END_TEST

START_TEST(test_model_one)
{
	struct answer list = call(API_ROUTE_MODELS, NULL, NULL);
	struct answer tiny = call(API_ROUTE_MODEL, "tiny", NULL);
	struct answer nope = call(API_ROUTE_MODEL, "nope", NULL);
	struct answer none = call(API_ROUTE_MODEL, NULL, NULL);
	struct answer body = call(API_ROUTE_MODEL, "tiny", "this body is ignored");

	expect_ok(&tiny);
	ck_assert(json_equal(tiny.json, model_named(field(list.json, "models"), "tiny")));
	expect_error(&nope, 404, "model_not_found", NULL);
	expect_error(&none, 404, "model_not_found", NULL);
	expect_ok(&body);
}
END_TEST

START_TEST(test_version_and_openapi)
{
	struct answer v = call(API_ROUTE_VERSION, NULL, NULL);
	struct answer o = call(API_ROUTE_OPENAPI, NULL, NULL);
	struct answer bad = call((enum api_route)API_ROUTE_COUNT, NULL, NULL);
	const char *version;

	expect_ok(&v);
	ck_assert_str_eq(json_string_value(field(v.json, "name")), "attnd");
	version = json_string_value(field(v.json, "version"));
	ck_assert(version != NULL && version[0] != '\0');
	expect_ok(&o);
	ck_assert(strncmp(json_string_value(field(o.json, "openapi")), "3.1", 3) == 0);
	ck_assert_str_eq(json_string_value(field(field(o.json, "info"), "version")), version);
	ck_assert(json_is_object(field(o.json, "paths")));
	expect_error(&bad, 404, "not_found", "");
}
END_TEST

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
	struct answer full = attention(rich_body), full_sdpa = sdpa(rich_sdpa);

	expect_ok(&full);
	expect_ok(&full_sdpa);
	for (size_t n = 0; n + 1 < sizeof(rich_body); n++)
		ck_assert_int_eq(call_status(API_ROUTE_ATTENTION, rich_body, n), 400);
	for (size_t n = 0; n + 1 < sizeof(rich_sdpa); n++)
		ck_assert_int_eq(call_status(API_ROUTE_SDPA, rich_sdpa, n), 400);
}
END_TEST

/* One byte changed or dropped anywhere: some answer below 500, always whole. */
static void mutate_all(enum api_route route, const char *body)
{
	static const char subs[] = "\"}]{[0-9eE.,: x\\\xff";
	size_t n = strlen(body);
	char *buf = keep(malloc(n + 1));

	for (size_t p = 0; p < n; p++) {
		for (size_t s = 0; s < sizeof(subs) - 1; s++) {
			memcpy(buf, body, n + 1);
			buf[p] = subs[s];
			call_status(route, buf, n);
		}
		memcpy(buf, body, p);
		memcpy(buf + p, body + p + 1, n - p);
		call_status(route, buf, n - 1);
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
	struct answer a = run_request(svc, API_ROUTE_ATTENTION, NULL, body, strlen(body), 512);

	keep(a.text);
	keep_json(a.json);
	check_reply(&a, body, strlen(body));
	expect_error(&a, 422, "response_too_large", "");
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
	a = attention(body);
	getrusage(RUSAGE_SELF, &after);
	expect_error(&a, 422, "request_too_large", "");
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
		    call(body[2] == 'q' ? API_ROUTE_SDPA : API_ROUTE_ATTENTION, NULL, body);
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

/* Nesting far deeper than any tensor: an error, not a crash. */
START_TEST(test_deep_nesting)
{
	const size_t depth = 100000;
	const char *body = fmt(TINY "\"embeddings\":%s%s}", repeat("", "[", depth, ""),
			       repeat("", "]", depth, ""));

	ck_assert_int_eq(call_status(API_ROUTE_ATTENTION, body, strlen(body)), 400);
	ck_assert_int_eq(call_status(API_ROUTE_SDPA, body, strlen(body)), 400);
	/* within jansson's depth limit: a shape error */
	body = TINY "\"embeddings\":[[[[[[[[[[]]]]]]]]]]}";
	ck_assert_int_eq(call_status(API_ROUTE_ATTENTION, body, strlen(body)), 422);
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
		struct answer a = run_request(svc, API_ROUTE_ATTENTION, NULL, rich_body,
					      strlen(rich_body), RESPONSE_MAX);
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
	struct answer ref = attention(rich_body);
	struct worker w[4];
	pthread_t t[4];

	expect_ok(&ref);
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

/* A service of its own: no models yet, then one with a vocabulary. */
START_TEST(test_own_service)
{
	struct api_limits limits = {REQUEST_MAX, RESPONSE_MAX, 1024, 1};
	struct api_service *own = api_service_new(&limits);
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
	json_t *want = keep_json(json_pack("[sss]", "c", "a", "한국어"));

	ck_assert_ptr_nonnull(own);
	r[0] = run_request(own, API_ROUTE_ATTENTION, NULL, bodies[0], strlen(bodies[0]),
			   RESPONSE_MAX); /* no model loaded */
	keep(r[0].text);
	keep_json(r[0].json);
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
	ck_assert_int_eq(api_service_set_default(own, "nope", &err), -1);
	ck_assert_int_eq(err.status, 404);
	for (size_t i = 1; i < 6; i++) {
		r[i] = run_request(own, API_ROUTE_ATTENTION, NULL, bodies[i], strlen(bodies[i]),
				   RESPONSE_MAX);
		keep(r[i].text);
		keep_json(r[i].json);
	}
	api_service_free(own);
	for (size_t i = 1; i < 6; i++)
		check_reply(&r[i], bodies[i], strlen(bodies[i]));
	/* string tokens map through the vocabulary; ids echo their strings */
	expect_ok(&r[1]);
	expect_ok(&r[2]);
	expect_ok(&r[3]);
	assert_same(&r[1], &r[2], "output", 0, 0);
	assert_same(&r[1], &r[3], "output", 0, 0);
	ck_assert_msg(json_equal(field(r[1].json, "tokens"), want), "echo %.200s", r[1].text);
	ck_assert_msg(json_equal(field(r[2].json, "tokens"), want), "echo %.200s", r[2].text);
	expect_error(&r[4], 422, "unknown_token", "/tokens/1");
	expect_ok(&r[5]);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* The suite                                                                */
/* ------------------------------------------------------------------------ */

static TCase *tcase(Suite *s, const char *name, int timeout)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, NULL, arena_release);
	tcase_set_timeout(tc, timeout);
	suite_add_tcase(s, tc);
	return tc;
}

static Suite *api_suite(void)
{
	Suite *s = suite_create("api");
	TCase *tc;

	tc = tcase(s, "decode", 60);
	tcase_add_test(tc, test_embeddings_unbatched);
	tcase_add_test(tc, test_embeddings_batched);
	tcase_add_test(tc, test_ragged_batch);
	tcase_add_test(tc, test_tokens_ids);
	tcase_add_test(tc, test_tokens_strings);
	tcase_add_test(tc, test_tokens_batch);
	tcase_add_test(tc, test_text);
	tcase_add_test(tc, test_cross_attention);
	tcase_add_test(tc, test_cross_ragged_keys);
	tcase_add_test(tc, test_inline_seeded);
	tcase_add_test(tc, test_inline_weights);

	tc = tcase(s, "mask", 60);
	tcase_add_test(tc, test_mask_none);
	tcase_add_test(tc, test_mask_causal_forms);
	tcase_add_test(tc, test_mask_batch_head_shapes);
	tcase_add_test(tc, test_mask_bias_values);
	tcase_add_test(tc, test_mask_alignment);
	tcase_add_test(tc, test_mask_window);
	tcase_add_test(tc, test_mask_lengths);

	tc = tcase(s, "positional", 60);
	tcase_add_test(tc, test_positional_kinds);
	tcase_add_test(tc, test_rope_parameters);
	tcase_add_test(tc, test_rope_key_positions);
	tcase_add_test(tc, test_alibi);
	tcase_add_test(tc, test_sinusoidal);

	tc = tcase(s, "options", 60);
	tcase_add_test(tc, test_scale);
	tcase_add_test(tc, test_scores_views);
	tcase_add_test(tc, test_softcap);
	tcase_add_test(tc, test_weights_modes);
	tcase_add_test(tc, test_base64_output);
	tcase_add_test(tc, test_tensor_forms);
	tcase_add_test(tc, test_precision);

	tc = tcase(s, "numbers", 120);
	tcase_add_test(tc, test_seed_demo_inline);
	tcase_add_test(tc, test_seed_demo_base64);
	tcase_add_test(tc, test_seed_demo_text);
	tcase_add_test(tc, test_torch_key_padding_lengths);
	tcase_add_test(tc, test_torch_key_padding_ragged);
	tcase_add_test(tc, test_torch_self_padding_ragged);
	tcase_add_test(tc, test_fixture_count);
	tcase_add_loop_test(tc, test_fixture, 0, (int)fixture_count);

	tc = tcase(s, "validation", 60);
	tcase_add_loop_test(tc, test_bad_request, 0,
			    (int)(sizeof(bad_requests) / sizeof(bad_requests[0])));
	tcase_add_test(tc, test_malformed_position);
	tcase_add_test(tc, test_token_2_pow_63);

	tc = tcase(s, "sdpa", 120);
	tcase_add_test(tc, test_sdpa_by_hand);
	tcase_add_test(tc, test_sdpa_3d_layout);
	tcase_add_test(tc, test_sdpa_bool_mask_object);
	tcase_add_test(tc, test_onnx_count);
	tcase_add_loop_test(tc, test_onnx_case, 0, (int)onnx_count);

	tc = tcase(s, "get", 60);
	tcase_add_test(tc, test_models);
	tcase_add_test(tc, test_model_one);
	tcase_add_test(tc, test_version_and_openapi);

	tc = tcase(s, "robustness", 600);
	tcase_add_test(tc, test_truncated_bodies);
	tcase_add_test(tc, test_mutated_bodies);
	tcase_add_test(tc, test_response_limit);
	tcase_add_test(tc, test_request_too_large);
	tcase_add_test(tc, test_deep_nesting);
	tcase_add_test(tc, test_declared_sizes_unallocated);
	tcase_add_test(tc, test_concurrent);
	tcase_add_test(tc, test_own_service);
	return s;
}

/* Appends a malloc'd copy of name to a growing list; -1 when out of memory. */
static int list_add(char ***list, size_t *n, size_t *cap, const char *name, size_t len)
{
	if (*n == *cap) {
		size_t grown_cap = *cap ? 2 * *cap : 64;
		char **grown = realloc(*list, grown_cap * sizeof(char *));

		if (grown == NULL)
			return -1;
		*list = grown;
		*cap = grown_cap;
	}
	(*list)[*n] = strndup(name, len);
	if ((*list)[*n] == NULL)
		return -1;
	(*n)++;
	return 0;
}

/* The fixture names of MANIFEST, one a line; none when it cannot be read. */
static void list_fixtures(void)
{
	char path[1024], line[256];
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/mha/MANIFEST", fixtures_dir());
	f = fopen(path, "r");
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		size_t len = strcspn(line, "\r\n");

		if (len > 0 && list_add(&fixture_names, &fixture_count, &cap, line, len) != 0)
			break;
	}
	fclose(f);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* test_attention_*.json in the ONNX folder, sorted. */
static void list_onnx(void)
{
	DIR *d = opendir(onnx_dir());
	struct dirent *de;
	size_t cap = 0;

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);

		if (strncmp(de->d_name, "test_attention_", 15) == 0 && len > 5 &&
		    strcmp(de->d_name + len - 5, ".json") == 0 &&
		    list_add(&onnx_names, &onnx_count, &cap, de->d_name, len) != 0)
			break;
	}
	closedir(d);
	if (onnx_count > 0)
		qsort(onnx_names, onnx_count, sizeof(char *), by_name);
}

static void free_list(char **list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

int main(void)
{
	struct api_limits limits = {REQUEST_MAX, RESPONSE_MAX, 1024, 1};
	struct api_error err;
	SRunner *sr;
	int failed;

	/* one BLAS thread: the server's model, and reproducible numbers */
	openblas_set_num_threads(1);
	svc = api_service_new(&limits);
	if (svc == NULL || api_service_add_builtins(svc, &err) != 0) {
		fprintf(stderr, "check_api: cannot build the built-in models\n");
		api_service_free(svc);
		return EXIT_FAILURE;
	}
	list_fixtures();
	list_onnx();
	sr = srunner_create(api_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	free_list(fixture_names, fixture_count);
	free_list(onnx_names, onnx_count);
	api_service_free(svc);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
