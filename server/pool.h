/*
 * pool.h: a fixed set of worker threads fed by a bounded FIFO queue, whose
 * idle workers a running job may borrow.
 *
 * pool_submit never blocks: it fails at once when the queue is full, so the
 * caller can answer 503. pool_free stops taking jobs, lets the workers finish
 * every job already accepted, and joins them.
 *
 * Borrowing (server/main.c, the thread model, says why): a job may take the
 * workers that are idle while nothing is queued, to run its engine call on
 * their cores; a borrowed worker takes no job until the borrower returns it.
 * The workers running a job plus the workers lent never exceed the pool's
 * size, so two borrowers never count the same worker, and the threads at
 * work stay within `workers`.
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

/* Takes out of the queue, oldest first, up to max jobs whose dead(arg)
 * holds (under the pool's lock: dead must only read), keeping the others'
 * order, and stores their args in out; returns how many. Their run is never
 * called by the pool: the caller ends them. So a queue full of jobs nobody
 * waits for any more (server/http_compute.c: clients gone, deadlines past)
 * makes room for a live one. */
size_t pool_evict(struct pool *p, int (*dead)(void *arg), void **out, size_t max);

/* Called by a job, on one of p's workers: lends it up to `max` of the
 * workers that are idle, and returns how many (0 when a job is queued, none
 * is idle, or the pool is stopping). They take no job until pool_return. */
size_t pool_borrow_idle(struct pool *p, size_t max);

/* Gives back n workers that pool_borrow_idle lent; queued jobs may start
 * on them at once. n = 0 is a no-op. */
void pool_return(struct pool *p, size_t n);

/* The workers neither in a job nor lent, at the moment of the call. */
size_t pool_idle(struct pool *p);

/* Drains every accepted job, joins the workers, frees the pool. */
void pool_free(struct pool *p);

#endif
