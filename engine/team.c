/*
 * team.c: fork-join teams, their barrier, and the workers that can serve them.
 *
 * Everything that waits here waits the same way (await_change): for a
 * counter to move on from a value it has seen, spinning (pauses, then
 * sched_yield) some 2 ms before it sleeps on a condition variable. The phases a
 * barrier separates are balanced, and a caller's next call is often as
 * close, so the other side is usually microseconds away. A sleep costs more
 * than its futex calls: the scheduler often wakes the sleeper on the waker's
 * own core, where the two then take turns until the load balancer moves one
 * (measured: B = 1, L = 128 at 2 threads, 4-5 ms a call instead of 2.2 with
 * 50 us of spinning, after OpenBLAS's threads had run; OpenBLAS's own
 * workers spin some 100 ms). Whoever moves a counter does so holding
 * the lock its sleepers wait under, with release order, so a thread that
 * sees the new value (acquire) sees everything written before it.
 *
 * A team lives on team_run's stack. Its threads 1 .. T - 1 are either the
 * caller's workers (struct attn_workers: a job counter they wait on and a
 * done counter the caller waits on) or threads started for the call, which
 * wait for `go` so that the final thread count is known before anyone uses
 * the barrier.
 */
#include "team.h"

#include "cancel.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

enum {
	SPIN_ROUNDS = 2000,  /* pauses: some 50 us */
	YIELD_ROUNDS = 4000, /* then sched_yield: some 2 ms in all, and a thread
			      * sharing this core (or valgrind's one running
			      * thread) gets it */
};

/* A counter, and the lock and condition its sleepers wait on. */
struct signal {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	atomic_size_t value;
};

struct team {
	struct signal gen; /* barrier generation */
	size_t T;          /* threads taking part, fixed once go is set */
	int go;            /* (threads of this call) T is set: start */
	size_t waiting;    /* threads at the barrier in this generation, under gen.lock */
	int cancelled;     /* team_barrier_cancel's answer, set by the last to arrive */
	team_fn fn;
	void *arg;
};

struct member {
	void *owner; /* struct team (a thread of this call) or struct attn_workers */
	size_t t;
	pthread_t thread;
};

struct attn_workers {
	struct signal job;       /* bumped once per call, and to stop */
	struct signal done;      /* set to the job's number when all workers finished it */
	pthread_mutex_t busy;    /* held by the call running on the workers */
	struct team *team;       /* the current job */
	atomic_size_t finished;  /* workers done with the current job */
	int stop;                /* set with the last job bump */
	size_t n;                /* workers started: threads 1 .. n */
	struct member members[TEAM_MAX];
};

static void cpu_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static void signal_init(struct signal *s)
{
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	atomic_init(&s->value, 0);
}

static void signal_destroy(struct signal *s)
{
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
}

/* Sets the counter and wakes its sleepers; the caller holds s->lock. */
static void signal_set_locked(struct signal *s, size_t value)
{
	atomic_store_explicit(&s->value, value, memory_order_release);
	pthread_cond_broadcast(&s->cond);
}

static void signal_set(struct signal *s, size_t value)
{
	pthread_mutex_lock(&s->lock);
	signal_set_locked(s, value);
	pthread_mutex_unlock(&s->lock);
}

/* Waits until the counter is no longer `seen`, and returns its new value. */
static size_t await_change(struct signal *s, size_t seen)
{
	size_t now;

	for (int i = 0; i < SPIN_ROUNDS + YIELD_ROUNDS; i++) {
		now = atomic_load_explicit(&s->value, memory_order_acquire);
		if (now != seen)
			return now;
		if (i < SPIN_ROUNDS)
			cpu_pause();
		else
			sched_yield();
	}
	pthread_mutex_lock(&s->lock);
	while ((now = atomic_load_explicit(&s->value, memory_order_acquire)) == seen)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	return now;
}

/* The barrier; the last thread to arrive reads flag for everyone before it
 * releases them (its store is ordered by the generation's release). A thread
 * reads team->cancelled before it can reach the next barrier, whose last
 * arrival is the only one that writes it again. */
static int barrier(struct team *team, const atomic_int *flag)
{
	size_t gen;

	if (team->T <= 1)
		return attn_cancelled(flag);
	pthread_mutex_lock(&team->gen.lock);
	gen = atomic_load_explicit(&team->gen.value, memory_order_relaxed);
	if (++team->waiting == team->T) {
		team->waiting = 0;
		team->cancelled = attn_cancelled(flag);
		signal_set_locked(&team->gen, gen + 1);
		pthread_mutex_unlock(&team->gen.lock);
		return team->cancelled;
	}
	pthread_mutex_unlock(&team->gen.lock);
	await_change(&team->gen, gen);
	return team->cancelled;
}

void team_barrier(struct team *team)
{
	(void)barrier(team, NULL);
}

int team_barrier_cancel(struct team *team, const atomic_int *flag)
{
	return barrier(team, flag);
}

/* ---- workers kept between calls ------------------------------------------- */

static void *worker_main(void *p)
{
	struct member *me = p;
	struct attn_workers *w = me->owner;
	size_t seen = 0;

	for (;;) {
		struct team *team;

		seen = await_change(&w->job, seen);
		if (w->stop)
			return NULL;
		team = w->team;
		if (me->t < team->T)
			team->fn(team->arg, me->t, team->T, team);
		if (atomic_fetch_add_explicit(&w->finished, 1, memory_order_acq_rel) + 1 == w->n) {
			atomic_store_explicit(&w->finished, 0, memory_order_relaxed);
			signal_set(&w->done, seen);
		}
	}
}

enum attn_status attn_workers_new(struct attn_workers **out, size_t threads,
				  struct attn_error *err)
{
	struct attn_workers *w;

	*out = NULL;
	if (threads < 1 || threads > TEAM_MAX)
		return attn_fail(err, ATTN_ERR_ARGUMENT, "threads", 0,
				 "threads must be 1 .. %d, not %zu", TEAM_MAX, threads);
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return attn_fail(err, ATTN_ERR_NOMEM, "workers", 0, "no memory for workers");
	signal_init(&w->job);
	signal_init(&w->done);
	pthread_mutex_init(&w->busy, NULL);
	atomic_init(&w->finished, 0);
	for (size_t t = 1; t < threads; t++) {
		struct member *m = &w->members[t];

		m->owner = w;
		m->t = t;
		if (pthread_create(&m->thread, NULL, worker_main, m) != 0)
			break;
		w->n = t;
	}
	*out = w;
	return ATTN_OK;
}

size_t attn_workers_threads(const struct attn_workers *w)
{
	return w ? w->n + 1 : 1;
}

void attn_workers_free(struct attn_workers *w)
{
	if (w == NULL)
		return;
	pthread_mutex_lock(&w->job.lock);
	w->stop = 1;
	signal_set_locked(&w->job, atomic_load_explicit(&w->job.value, memory_order_relaxed) + 1);
	pthread_mutex_unlock(&w->job.lock);
	for (size_t t = 1; t <= w->n; t++)
		pthread_join(w->members[t].thread, NULL);
	pthread_mutex_destroy(&w->busy);
	signal_destroy(&w->done);
	signal_destroy(&w->job);
	free(w);
}

/* team_run on w's workers (T at most w's threads); 0 when they are busy
 * with another call. */
static int run_on_workers(struct attn_workers *w, struct team *team)
{
	size_t job;

	if (pthread_mutex_trylock(&w->busy) != 0)
		return 0;
	team->T = team->T < w->n + 1 ? team->T : w->n + 1;
	if (team->T == 1) {
		team->fn(team->arg, 0, 1, team);
		pthread_mutex_unlock(&w->busy);
		return 1;
	}
	w->team = team;
	job = atomic_load_explicit(&w->job.value, memory_order_relaxed) + 1;
	signal_set(&w->job, job);
	team->fn(team->arg, 0, team->T, team);
	await_change(&w->done, job - 1);
	pthread_mutex_unlock(&w->busy);
	return 1;
}

/* ---- threads started for one call ------------------------------------------ */

static void *member_main(void *p)
{
	struct member *me = p;
	struct team *team = me->owner;

	pthread_mutex_lock(&team->gen.lock);
	while (!team->go)
		pthread_cond_wait(&team->gen.cond, &team->gen.lock);
	pthread_mutex_unlock(&team->gen.lock);
	if (me->t < team->T)
		team->fn(team->arg, me->t, team->T, team);
	return NULL;
}

static void run_on_own_threads(struct team *team)
{
	struct member members[TEAM_MAX];
	size_t started = 1;

	for (; started < team->T; started++) {
		members[started].owner = team;
		members[started].t = started;
		if (pthread_create(&members[started].thread, NULL, member_main,
				   &members[started]) != 0)
			break;
	}
	pthread_mutex_lock(&team->gen.lock);
	team->T = started;
	team->go = 1;
	pthread_cond_broadcast(&team->gen.cond);
	pthread_mutex_unlock(&team->gen.lock);
	team->fn(team->arg, 0, team->T, team);
	for (size_t t = 1; t < started; t++)
		pthread_join(members[t].thread, NULL);
}

void team_run(struct attn_workers *workers, size_t threads, team_fn fn, void *arg)
{
	struct team team = { .fn = fn, .arg = arg };

	team.T = threads < 1 ? 1 : threads > TEAM_MAX ? TEAM_MAX : threads;
	if (team.T == 1) {
		fn(arg, 0, 1, &team);
		return;
	}
	signal_init(&team.gen);
	if (workers == NULL || !run_on_workers(workers, &team))
		run_on_own_threads(&team);
	signal_destroy(&team.gen);
}

void team_share(size_t n, size_t t, size_t T, size_t *r0, size_t *r1)
{
	size_t base = n / T, extra = n % T;

	*r0 = t * base + (t < extra ? t : extra);
	*r1 = *r0 + base + (t < extra ? 1 : 0);
}

void team_share_blocks(size_t n, size_t block, size_t t, size_t T, size_t *r0, size_t *r1)
{
	size_t b0, b1;

	team_share((n + block - 1) / block, t, T, &b0, &b1);
	*r0 = b0 * block < n ? b0 * block : n;
	*r1 = b1 * block < n ? b1 * block : n;
}
