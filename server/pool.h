/*
 * pool.h: a fixed set of worker threads fed by a bounded FIFO queue.
 *
 * pool_submit never blocks: it fails at once when the queue is full, so the
 * caller can answer 503. pool_free stops taking jobs, lets the workers finish
 * every job already accepted, and joins them.
 *
 * Ownership: pool_new returns a pool the caller frees with pool_free (NULL
 * accepted). A job's arg stays the caller's; the pool only passes it to run.
 */
#ifndef SERVER_POOL_H
#define SERVER_POOL_H

#include <stddef.h>

struct pool;

typedef void (*pool_fn)(void *arg);

/* Starts `workers` threads (>= 1) with a queue of `capacity` jobs (>= 1).
 * Returns NULL if a thread or the memory cannot be had (none are left running). */
struct pool *pool_new(size_t workers, size_t capacity);

/* Queues run(arg). Returns 0, or -1 when the queue is full or the pool is
 * shutting down (run is then never called). */
int pool_submit(struct pool *p, pool_fn run, void *arg);

/* Drains every accepted job, joins the workers, frees the pool. */
void pool_free(struct pool *p);

#endif
