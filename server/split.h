/*
 * split.h: the cores of idle workers lent to one large engine call, as the
 * API's lender (struct api_lender in api/service.h; the thread model in
 * main.c says when and why).
 *
 * Ownership: a struct split_policy is the server's, read-only once the
 * server starts, and borrows its pool, metrics and kept workers. A struct
 * split_lease is one request's, used on its worker thread only; it holds
 * workers from its lender's lend to its give_back (or split_lease_end).
 */
#ifndef SERVER_SPLIT_H
#define SERVER_SPLIT_H

#include <stddef.h>

#include "api/service.h"

struct attn_workers;
struct metrics;
struct pool;

struct split_policy {
	struct pool *pool;
	struct metrics *metrics;
	size_t threads;               /* engine threads one call may use; < 2: no lending */
	struct attn_workers *workers; /* kept for calls of that width, or NULL */
};

struct split_lease {
	const struct split_policy *policy;
	size_t lent;                  /* workers this call holds now */
	struct api_lender lender;     /* hand &lender to the API (api_reply.lender) */
};

/* Makes lease a lender for one call under policy, holding nothing. */
void split_lease_init(struct split_lease *lease, const struct split_policy *policy);

/* Gives back whatever the call still holds (the API gives workers back
 * right after the engine call; this is for a call that did not). */
void split_lease_end(struct split_lease *lease);

#endif
