/*
 * workers.h: engine threads kept from one call to the next.
 *
 * A call with threads = T (struct attn_sdpa, struct attn_mha) otherwise starts
 * T - 1 threads and joins them before it returns; on a busy machine a new
 * thread can wait a scheduler tick for a core, which is most of a short call.
 * A caller that makes many calls (a benchmark, a batch job) can keep them:
 * attn_workers_new starts threads - 1 workers once, and every request whose
 * `workers` points at them runs its threads 1 .. T - 1 there (T at most
 * threads). Results do not depend on which threads ran a call.
 *
 * An idle worker spins some 2 ms after a call (a next call is often that
 * close), then sleeps on a condition variable: it costs no CPU between calls
 * that are further apart. The workers run one call at a time; a call that
 * finds them busy (another thread's call) starts threads of its own, as if
 * `workers` were NULL.
 *
 * Ownership: the caller owns the workers; attn_workers_free stops and joins
 * them, and must not run while a call uses them.
 */
#ifndef ATTN_WORKERS_H
#define ATTN_WORKERS_H

#include <stddef.h>

#include "status.h"

struct attn_workers;

/* Starts threads - 1 workers (threads in 1 .. 64; fewer if the system
 * refuses threads, which attn_workers_threads reports). */
enum attn_status attn_workers_new(struct attn_workers **out, size_t threads,
				  struct attn_error *err);

/* Threads a call can run on: the workers plus the caller. */
size_t attn_workers_threads(const struct attn_workers *w);

/* Stops and joins the workers; NULL is a no-op. */
void attn_workers_free(struct attn_workers *w);

#endif
