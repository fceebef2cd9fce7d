/* fuzz_api.c: the services the request harnesses share (see fuzz.h). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "engine/model.h"

/* Small limits: a request that needs more than a few MiB, or more than
 * 1 GFLOP of work (api_check_work: some 10 ms), is refused (422) before
 * anything is allocated or computed, so no input can run into -timeout or
 * -rss_limit_mb by asking for a large computation. (Memory alone did not
 * bound time: without weights, attention is O(L) in memory, O(L^2) in time.) */
enum {
	FUZZ_MAX_REQUEST = 4 << 20,
	FUZZ_MAX_RESPONSE = 1 << 20,
	FUZZ_MAX_INLINE_D_MODEL = 64,
	FUZZ_MAX_GFLOP = 1,
};

static struct api_service *fast, *plain;

static struct api_service *service_new(int plain_json)
{
	/* as registry.c's built-in `tiny` */
	const struct attn_model_config tiny = { 8, 2, 2, 0, 64 };
	const struct api_limits limits = { .max_request_bytes = FUZZ_MAX_REQUEST,
					   .max_response_bytes = FUZZ_MAX_RESPONSE,
					   .max_inline_d_model = FUZZ_MAX_INLINE_D_MODEL,
					   .engine_threads = 1,
					   .max_request_gflop = FUZZ_MAX_GFLOP };
	struct api_service *svc = api_service_new(&limits);
	struct attn_model *m = NULL;
	struct attn_error aerr;
	struct api_error err;

	if (svc == NULL || attn_model_new_seeded(&m, &tiny, 42, &aerr) != ATTN_OK ||
	    api_service_add_model(svc, "tiny", m, "seed:42", NULL, &err) != 0 ||
	    api_service_set_default(svc, "tiny", &err) != 0) {
		fprintf(stderr, "fuzz: cannot build a service with the tiny model\n");
		exit(1);
	}
	api_service_set_plain_json(svc, plain_json);
	return svc;
}

void fuzz_api_init(void)
{
	openblas_set_num_threads(1);
	fast = service_new(0);
	plain = service_new(1);
}

/* small_only: ask for the server's inline answer (service.h), which a request
 * that is not small declines; returns 0 then, with the reply released. */
static int answer(const struct api_service *svc, enum api_route route,
		  const struct api_v2_call *call, const uint8_t *body, size_t len,
		  int small_only, struct api_reply *reply)
{
	api_reply_init(reply, FUZZ_MAX_RESPONSE);
	reply->small_only = small_only;
	if (call != NULL)
		api_handle_v2(svc, route, call, (const char *)body, len, reply);
	else
		api_handle(svc, route, NULL, (const char *)body, len, reply);
	if (small_only && reply->declined) {
		api_reply_release(reply);
		return 0;
	}
	/* service.h: always a complete reply, a 2xx or an error body */
	if (reply->status < 200 || reply->status > 599 || reply->body.len == 0 ||
	    (reply->status >= 400 && reply->error_code == NULL))
		abort();
	return 1;
}

/* The bytes of a reply's body to compare: a v1 answer without its usage
 * (always last, with the request's milliseconds). */
static size_t compared_len(const struct api_reply *r, int v1)
{
	static const char usage[] = ",\"usage\":";
	const char *p = r->body.data, *end = p + r->body.len;

	if (!v1 || r->status != 200 || r->body.len < sizeof(usage) - 1)
		return r->body.len;
	for (const char *q = end - (sizeof(usage) - 1); q >= p; q--)
		if (memcmp(q, usage, sizeof(usage) - 1) == 0)
			return (size_t)(q - p);
	return r->body.len;
}

/* Aborts unless a and b are the same answer (what names how b was made). */
static void same(const struct api_reply *a, const struct api_reply *b, int v1, const char *what)
{
	size_t na = compared_len(a, v1), nb = compared_len(b, v1);

	if (a->status == b->status && (a->error_code == NULL) == (b->error_code == NULL) &&
	    (a->error_code == NULL || strcmp(a->error_code, b->error_code) == 0) && na == nb &&
	    memcmp(a->body.data, b->body.data, na) == 0)
		return;
	fprintf(stderr, "fuzz: the answer differs %s:\n%d %.*s\n%d %.*s\n", what, a->status,
		(int)a->body.len, a->body.data, b->status, (int)b->body.len, b->body.data);
	abort();
}

void fuzz_api_run(enum api_route route, const struct api_v2_call *call, const uint8_t *body,
		  size_t len)
{
	struct api_reply a, b;
	int v1 = call == NULL;

	answer(fast, route, call, body, len, 0, &a);
	answer(plain, route, call, body, len, 0, &b);
	same(&a, &b, v1, "with jansson alone (api_service_set_plain_json)");
	api_reply_release(&b);
	if (v1 && answer(fast, route, call, body, len, 1, &b)) {
		same(&a, &b, v1, "when answered as a small request (small_only)");
		api_reply_release(&b);
	}
	api_reply_release(&a);
}
