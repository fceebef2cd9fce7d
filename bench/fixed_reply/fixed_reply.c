/*
 * fixed_reply.c: attnd with the API's work taken out, the "fixed" row of the
 * HTTP bench (bench/http_bench.sh).
 *
 * Linked with attnd's own objects into build/bench/attnd_fixed_reply, with
 * ld's --wrap=api_handle, so the server's calls to api_handle come here. The
 * first call on a thread runs the real api_handle and keeps its 2xx reply
 * with what was asked (route, path parameter, body bytes); a later call that
 * asks the same on that thread is answered with a copy of the kept reply:
 * its status, body, content type, model and FLOPs, with Server-Timing's
 * parse, compute and encode 0. Anything else goes to the real api_handle.
 *
 * So when wrk repeats the seeds' request, this server differs from attnd
 * only by the API's own work on it (decoding the body, tokens, the engine,
 * writing the answer); the rest runs as in attnd: libmicrohttpd, routing,
 * headers, the small request's path on the I/O thread, the same answer's
 * bytes, metrics and the access log. The gap between attnd and this server
 * is what the API costs a request; between this server and the bare one,
 * what the transport costs.
 *
 * Ownership: a thread's kept request and reply live until the process
 * exits (a bench program; no sanitizer or leak check runs it).
 */
#include <stdlib.h>
#include <string.h>

#include "api/service.h"

void __real_api_handle(const struct api_service *svc, enum api_route route, const char *param,
		       const char *body, size_t len, struct api_reply *reply);
void __wrap_api_handle(const struct api_service *svc, enum api_route route, const char *param,
		       const char *body, size_t len, struct api_reply *reply);

/* The first 2xx reply of a thread, with what it answered. */
struct kept {
	int valid;
	enum api_route route;
	char *param; /* NULL: the route has none */
	char *body;  /* len bytes (NULL when len is 0) */
	size_t len;
	char *answer; /* answer_len bytes of the reply's body */
	size_t answer_len;
	int status;
	const char *content_type, *model; /* string literals or the service's */
	double flops;
};

static _Thread_local struct kept kept;

static int same_param(const char *a, const char *b)
{
	return a == NULL || b == NULL ? a == b : strcmp(a, b) == 0;
}

static int asks_the_kept(enum api_route route, const char *param, const char *body, size_t len)
{
	return kept.valid && kept.route == route && same_param(kept.param, param) &&
	       kept.len == len && (len == 0 || memcmp(kept.body, body, len) == 0);
}

static char *copy_bytes(const char *p, size_t n)
{
	char *c = malloc(n + 1);

	if (c != NULL && n > 0)
		memcpy(c, p, n);
	if (c != NULL)
		c[n] = '\0';
	return c;
}

/* Keeps reply as the answer to (route, param, body) when it is a 2xx the
 * server would send (not declined); does nothing when memory is short. */
static void keep(enum api_route route, const char *param, const char *body, size_t len,
		 const struct api_reply *reply)
{
	if (kept.valid || reply->declined || reply->status < 200 || reply->status > 299)
		return;
	kept.param = param != NULL ? copy_bytes(param, strlen(param)) : NULL;
	kept.body = copy_bytes(body != NULL ? body : "", len);
	kept.answer = copy_bytes(reply->body.data != NULL ? reply->body.data : "", reply->body.len);
	if ((param != NULL && kept.param == NULL) || kept.body == NULL || kept.answer == NULL) {
		free(kept.param);
		free(kept.body);
		free(kept.answer);
		memset(&kept, 0, sizeof kept);
		return;
	}
	kept.route = route;
	kept.len = len;
	kept.answer_len = reply->body.len;
	kept.status = reply->status;
	kept.content_type = reply->content_type;
	kept.model = reply->model;
	kept.flops = reply->flops;
	kept.valid = 1;
}

/* The kept reply into reply (fresh from api_reply_init): 0, or -1 when its
 * body does not fit, and reply is left for the real call. */
static int answer_kept(struct api_reply *reply)
{
	if (buf_append(&reply->body, kept.answer, kept.answer_len) != 0) {
		buf_reset(&reply->body);
		return -1;
	}
	reply->status = kept.status;
	reply->content_type = kept.content_type;
	reply->model = kept.model;
	reply->flops = kept.flops;
	reply->error_code = NULL;
	reply->parse_ms = reply->compute_ms = reply->encode_ms = 0;
	reply->declined = 0;
	return 0;
}

void __wrap_api_handle(const struct api_service *svc, enum api_route route, const char *param,
		       const char *body, size_t len, struct api_reply *reply)
{
	if (asks_the_kept(route, param, body, len) && answer_kept(reply) == 0)
		return;
	__real_api_handle(svc, route, param, body, len, reply);
	keep(route, param, body, len, reply);
}
