/*
 * handlers.h: one function per route, and what they share. Internal to api/;
 * service.c dispatches to them. Each leaves a complete reply (see service.h).
 *
 * Ownership: svc and body are borrowed for the call (nothing keeps a pointer
 * into body); the reply is the caller's (service.h), and what a handler puts
 * in it is the reply's. A struct api_threads is a value whose workers and
 * cancel pointers are borrowed from the reply or its lender, valid until
 * api_give_back.
 */
#ifndef API_HANDLERS_H
#define API_HANDLERS_H

#include <stddef.h>
#include <time.h>

#include "registry.h"
#include "service.h"

void api_attention(const struct api_service *svc, const char *body, size_t len,
		   struct api_reply *reply);
void api_sdpa(const struct api_service *svc, const char *body, size_t len,
	      struct api_reply *reply);

/* v1_tokenize.c: POST /v1/tokenize, POST /v1/detokenize, GET /v1/tokenizers. */
void api_tokenize(const struct api_service *svc, const char *body, size_t len,
		  struct api_reply *reply);
void api_detokenize(const struct api_service *svc, const char *body, size_t len,
		    struct api_reply *reply);
void api_tokenizers(const struct api_service *svc, struct api_reply *reply);

/* Replaces the reply's body with the error body and sets its status. */
void api_reply_error(struct api_reply *reply, const struct api_error *err);

/* Milliseconds since t0 (CLOCK_MONOTONIC). */
double api_ms_since(const struct timespec *t0);

/* The engine threads of one call (reply.c): the reply's own, or lent for
 * its work by the reply's lender (service.h), until api_give_back. */
struct api_threads {
	size_t threads;
	struct attn_workers *workers;
	int lent;
	const atomic_int *cancel; /* the reply's cancel flag, for the engine call */
};

struct api_threads api_own_threads(const struct api_service *svc, const struct api_reply *reply);
struct api_threads api_lend_threads(const struct api_service *svc, const struct api_reply *reply,
				    double work);

/* Gives lent threads back (once; nothing when t was not lent) and leaves t
 * the reply's own. */
void api_give_back(const struct api_service *svc, const struct api_reply *reply,
		   struct api_threads *t);

/* The work of a call as max_request_gflop counts it, in FLOPs (service.h). */
double api_work(double flops, double scores);

#endif
