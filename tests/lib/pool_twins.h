/*
 * pool_twins.h: the pooled parse (api/json/fastjson.h) against jansson's own,
 * for the suites that check it (check_fastpath: rows of numbers;
 * check_pool_base64: base64 strings). Two services built alike, the plain
 * one reading every tensor through jansson (api_service_set_plain_json),
 * and comparisons that assert identical answers, identical tensors, or
 * identical errors.
 *
 * Ownership: pool_twins_start makes both services, pool_twins_stop frees
 * them. Failures are Check assertions. Every name starts with pool_.
 */
#ifndef ATTN_TESTS_POOL_TWINS_H
#define ATTN_TESTS_POOL_TWINS_H

#include <stddef.h>
#include <stdint.h>

#include "api/service.h"

struct pool_twins {
	struct api_service *fast;  /* pools large rows and base64 strings (the default) */
	struct api_service *plain; /* leaves every number to jansson */
};

/* Both services with the built-in models: 256 MiB requests, 64 MiB answers. */
void pool_twins_start(struct pool_twins *t);
void pool_twins_stop(struct pool_twins *t);

/* A copy (malloc'd) of a reply's body with `usage` (always last, with its
 * timing) cut off, on a 200. */
char *pool_reply_text(const struct api_reply *r);

/* The same request on both gives the same status and the same answer, up
 * to `usage` (last, with its timing); returns the status. */
int pool_same_answer(const struct pool_twins *t, enum api_route route, const char *body,
		     size_t len);

/* Mutates body `rounds` times (each one to three replacements, deletions
 * or insertions of alphabet's characters at places rng picks) and asserts
 * pool_same_answer on every mutant. */
void pool_same_mutated(const struct pool_twins *t, enum api_route route, const char *body,
		       size_t len, const char *alphabet, int rounds, uint64_t (*rng)(void));

/* Reads body's `field` (a JSON pointer of one object key, "/x") as a tensor
 * with `flags` (api/json/json_tensor.h), pooled and through jansson:
 * identical bits, or identical errors. Returns the rows pooled (pool_rows). */
size_t pool_same_tensor(const char *body, const char *field, unsigned flags);

/* pool_same_tensor with the reader's rank bounds and element limit. */
size_t pool_same_read(const char *body, const char *field, size_t min_rank, size_t max_rank,
		      size_t max_elems, unsigned flags);

/* The rows of numbers and base64 strings in pool: its entries but the
 * matrices (whose rows count one by one); and the matrices alone. */
struct fastjson_pool;
size_t pool_rows(const struct fastjson_pool *pool);
size_t pool_matrices(const struct fastjson_pool *pool);

#endif
