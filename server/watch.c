/*
 * watch.c: the watcher of queued and running requests (see watch.h).
 *
 * The entries live in per-thread lists (shards, thread_slot.h), each under
 * its own lock: an I/O thread adds and removes an entry at every request
 * with a body, and with one list for all the two I/O threads' cores passed
 * its lock between them each time. An entry remembers its list, so a
 * worker can remove what an I/O thread added.
 *
 * One round, every WATCH_TICK_MS while anything is registered (with
 * nothing, every WATCH_IDLE_MS):
 *   1. under each list's lock in turn: fire every entry past its deadline
 *      or its idle bound (the earlier of the two says why), and copy the
 *      sockets of the others (with their list and id) into the poll set;
 *   2. unlocked: poll them, WATCH_TICK_MS at most (the tick itself);
 *   3. under the list's lock: fire the entries whose socket hung up, found
 *      again by id: an entry removed meanwhile is not in the list, and a new
 *      one at the same address has another id. A socket closed and reused in
 *      between belongs to no registered entry, so what poll said of it is
 *      dropped with it.
 * The watcher sleeps between rounds under the watcher's own lock, which an
 * entry with a socket takes to wake it; `added` tells it that one came
 * while it was collecting, so that wake-up is not lost.
 */
#define _GNU_SOURCE /* POLLRDHUP */
#include "watch.h"

#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "thread_slot.h"

enum { WATCH_SHARDS = 8 };

/* The entries added on the threads of one turn (thread_slot.h). */
struct watch_shard {
	alignas(SHARD_ALIGN) pthread_mutex_t lock;
	struct watch_entry *head;
	unsigned long long next_id;
};

struct watch {
	struct watch_shard shard[WATCH_SHARDS];
	pthread_mutex_t lock; /* stop, added, and the wait */
	pthread_cond_t wake;  /* an entry with a socket was added, or stop */
	unsigned long long added; /* entries with a socket added so far */
	int stop;
	pthread_t thread;
	pthread_mutex_t hook_lock; /* held while fired runs; watch_stop_fired */
	void (*fired)(void *ctx); /* watch_new's, under hook_lock; called after a round that fired */
	void *fired_ctx;
	int fired_now; /* the watcher thread's: entries fired this round */
	/* the poll set, the watcher thread's alone */
	struct pollfd *fds;
	struct polled {
		struct watch_shard *shard;
		unsigned long long id;
	} *polled;
	size_t cap;
};

/* A touch's time in whole milliseconds, rounded up: an idle bound counted
 * from it may fire up to 1 ms late, never early (rounded down, an entry
 * idle for 0.3 s fired after 0.299 s). */
static long long now_ms(void)
{
	return (long long)ceil(clock_seconds() * 1e3);
}

/* Why e fires at `now`, or WATCH_NONE: its deadline, or its idle bound
 * (idle seconds since its last touch), whichever comes first. */
static enum watch_reason due(struct watch_entry *e, double now)
{
	double idle_at = 0;

	if (e->idle > 0)
		idle_at = (double)atomic_load_explicit(&e->touched_ms, memory_order_relaxed) / 1e3 +
			  e->idle;
	if (idle_at > 0 && now >= idle_at && (e->deadline <= 0 || idle_at < e->deadline))
		return WATCH_IDLE;
	if (e->deadline > 0 && now >= e->deadline)
		return WATCH_DEADLINE;
	return WATCH_NONE;
}

/* Sets e's flag to why, unless it fired before; under the lock. */
static void fire(struct watch_entry *e, enum watch_reason why)
{
	int none = WATCH_NONE;

	e->fired = 1;
	if (atomic_compare_exchange_strong(&e->cancel, &none, (int)why) && e->on_fire != NULL)
		e->on_fire(e, why);
}

/* Room for n entries in the poll set; -1 when it cannot grow. */
static int reserve(struct watch *w, size_t n)
{
	struct pollfd *fds;
	struct polled *polled;
	size_t cap = w->cap ? w->cap : 16;

	if (n <= w->cap)
		return 0;
	while (cap < n)
		cap *= 2;
	fds = realloc(w->fds, cap * sizeof(*fds));
	if (fds == NULL)
		return -1;
	w->fds = fds;
	polled = realloc(w->polled, cap * sizeof(*polled));
	if (polled == NULL)
		return -1;
	w->polled = polled;
	w->cap = cap;
	return 0;
}

/* Step 1 for one list, under its lock: deadlines fired, the other sockets
 * added to the poll set after its first n; returns the poll set's size. */
static size_t collect_shard(struct watch *w, struct watch_shard *s, double now, size_t n)
{
	size_t total = n;

	for (struct watch_entry *e = s->head; e != NULL; e = e->next)
		total++;
	if (reserve(w, total) != 0)
		total = w->cap; /* poll what fits; deadlines are still all checked */
	for (struct watch_entry *e = s->head; e != NULL; e = e->next) {
		enum watch_reason why;

		if (e->fired)
			continue;
		why = due(e, now);
		if (why != WATCH_NONE) {
			fire(e, why);
			w->fired_now++;
			continue;
		}
		if (e->fd < 0 || n >= total)
			continue;
		w->fds[n] = (struct pollfd){ .fd = e->fd, .events = POLLRDHUP };
		w->polled[n] = (struct polled){ .shard = s, .id = e->id };
		n++;
	}
	return n;
}

/* Step 1: every list's; *registered says whether any entry was. Returns the
 * poll set's size. */
static size_t collect(struct watch *w, int *registered)
{
	double now = clock_seconds();
	size_t n = 0;

	*registered = 0;
	for (size_t i = 0; i < WATCH_SHARDS; i++) {
		struct watch_shard *s = &w->shard[i];

		pthread_mutex_lock(&s->lock);
		*registered |= s->head != NULL;
		n = collect_shard(w, s, now, n);
		pthread_mutex_unlock(&s->lock);
	}
	return n;
}

/* Step 3: the entries whose sockets hung up. */
static void fire_hangups(struct watch *w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct watch_shard *s = w->polled[i].shard;

		if (!(w->fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR)))
			continue;
		pthread_mutex_lock(&s->lock);
		for (struct watch_entry *e = s->head; e != NULL; e = e->next) {
			if (e->id == w->polled[i].id) {
				if (!e->fired) {
					fire(e, WATCH_CLIENT_GONE);
					w->fired_now++;
				}
				break;
			}
		}
		pthread_mutex_unlock(&s->lock);
	}
}

/* Sleeps ms at most on the condition (an added entry with a socket, or
 * stop, wakes it); the caller holds the lock. */
static void timed_wait(struct watch *w, long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&w->wake, &w->lock, &ts);
}

static void destroy_locks(struct watch *w)
{
	for (size_t i = 0; i < WATCH_SHARDS; i++)
		pthread_mutex_destroy(&w->shard[i].lock);
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
	pthread_mutex_destroy(&w->hook_lock);
}

static void *watch_main(void *arg)
{
	struct watch *w = arg;

	pthread_mutex_lock(&w->lock);
	while (!w->stop) {
		unsigned long long added = w->added;
		int registered;
		size_t n;

		pthread_mutex_unlock(&w->lock);
		n = collect(w, &registered);
		if (n > 0 && poll(w->fds, (nfds_t)n, WATCH_TICK_MS) >= 0)
			fire_hangups(w, n); /* else EINTR or worse: nothing learnt */
		if (w->fired_now > 0) {
			/* no lock of the lists or the wait held: it may remove
			 * entries; hook_lock, so watch_stop_fired waits for it */
			pthread_mutex_lock(&w->hook_lock);
			if (w->fired != NULL)
				w->fired(w->fired_ctx);
			pthread_mutex_unlock(&w->hook_lock);
		}
		w->fired_now = 0;
		pthread_mutex_lock(&w->lock);
		/* with sockets polled, the poll was the tick; else sleep, unless an
		 * entry with a socket came meanwhile */
		if (n == 0 && w->added == added && !w->stop)
			timed_wait(w, registered ? WATCH_TICK_MS : WATCH_IDLE_MS);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

struct watch *watch_new(void (*fired)(void *ctx), void *ctx, char *err, size_t errlen)
{
	struct watch *w = shard_calloc(sizeof(struct watch));

	if (w == NULL) {
		snprintf(err, errlen, "out of memory for the request watcher");
		return NULL;
	}
	for (size_t i = 0; i < WATCH_SHARDS; i++)
		pthread_mutex_init(&w->shard[i].lock, NULL);
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
	pthread_mutex_init(&w->hook_lock, NULL);
	w->fired = fired;
	w->fired_ctx = ctx;
	if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
		snprintf(err, errlen, "cannot start the request watcher thread");
		destroy_locks(w);
		free(w);
		return NULL;
	}
	return w;
}

void watch_add(struct watch *w, struct watch_entry *e, int fd, double deadline)
{
	struct watch_shard *s = &w->shard[thread_slot() % WATCH_SHARDS];

	atomic_init(&e->cancel, WATCH_NONE);
	e->fd = fd;
	e->deadline = deadline;
	e->fired = 0;
	e->prev = NULL;
	e->shard = s;
	atomic_store_explicit(&e->touched_ms, now_ms(), memory_order_relaxed);
	pthread_mutex_lock(&s->lock);
	e->id = ++s->next_id;
	e->next = s->head;
	if (s->head != NULL)
		s->head->prev = e;
	s->head = e;
	pthread_mutex_unlock(&s->lock);
	if (fd < 0) /* a deadline alone waits for the next idle wake-up (watch.h) */
		return;
	pthread_mutex_lock(&w->lock);
	w->added++;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
}

void watch_touch(struct watch_entry *e)
{
	atomic_store_explicit(&e->touched_ms, now_ms(), memory_order_relaxed);
}

void watch_remove(struct watch *w, struct watch_entry *e)
{
	struct watch_shard *s = e->shard;

	(void)w;
	pthread_mutex_lock(&s->lock);
	if (e->prev != NULL)
		e->prev->next = e->next;
	else
		s->head = e->next;
	if (e->next != NULL)
		e->next->prev = e->prev;
	e->prev = e->next = NULL;
	pthread_mutex_unlock(&s->lock);
}

void watch_stop_fired(struct watch *w)
{
	if (w == NULL)
		return;
	pthread_mutex_lock(&w->hook_lock);
	w->fired = NULL;
	pthread_mutex_unlock(&w->hook_lock);
}

void watch_free(struct watch *w)
{
	if (w == NULL)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = 1;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	destroy_locks(w);
	free(w->fds);
	free(w->polled);
	free(w);
}
