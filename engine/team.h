/*
 * team.h: a fork-join team of threads with a barrier, for one engine call.
 *
 * team_run calls fn(arg, t, T, team) on T threads (t = 0 is the caller's own
 * thread) and returns when all have returned. Threads 1 .. T - 1 are the
 * caller's attn_workers when it gave some and they are free, else started
 * for this call and joined before it returns. If fewer threads can be had
 * than asked for, T is whatever could be had (at least 1): callers split
 * work by t and T, so the result does not depend on T.
 *
 * Ownership: workers and arg are borrowed for the call (workers stay the
 * caller's; threads started here are joined before team_run returns). The
 * struct team is team_run's, valid only inside fn; nothing outlives the call.
 */
#ifndef ATTN_TEAM_H
#define ATTN_TEAM_H

#include <stdatomic.h>
#include <stddef.h>

#include "workers.h"

struct team;

typedef void (*team_fn)(void *arg, size_t t, size_t T, struct team *team);

/* Runs fn on up to `threads` threads (0 counts as 1, at most TEAM_MAX), on
 * workers when not NULL and not busy. */
void team_run(struct attn_workers *workers, size_t threads, team_fn fn, void *arg);

/* Blocks until all T threads of the team have reached it. */
void team_barrier(struct team *team);

/* team_barrier, returning whether *flag (cancel.h; NULL: never) was set when
 * the last thread arrived: every thread gets the same answer, so a team can
 * leave a loop of barriers together without one thread waiting at a barrier
 * the others skipped. */
int team_barrier_cancel(struct team *team, const atomic_int *flag);

/* Rows [*r0, *r1) of n that thread t of T takes (contiguous, balanced). */
void team_share(size_t n, size_t t, size_t T, size_t *r0, size_t *r1);

/* The same in whole blocks: [*r0, *r1) starts on a multiple of block (and
 * ends on one, or at n), so a block is never split between threads. */
void team_share_blocks(size_t n, size_t block, size_t t, size_t T, size_t *r0, size_t *r1);

enum { TEAM_MAX = 64 };

#endif
