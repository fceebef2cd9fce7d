/*
 * watch.c: the watcher of queued and running requests (see watch.h).
 *
 * One round, every WATCH_TICK_MS while anything is registered (with
 * nothing, every WATCH_IDLE_MS):
 *   1. under the lock: fire every entry past its deadline or its idle
 *      bound (the earlier of the two says why), and copy the
 *      sockets of the others (with their ids) into the poll set;
 *   2. unlocked: poll them, WATCH_TICK_MS at most (the tick itself);
 *   3. under the lock: fire the entries whose socket hung up, found again
 *      by id: an entry removed meanwhile is not in the list, and a new one
 *      at the same address has another id. A socket closed and reused in
 *      between belongs to no registered entry, so what poll said of it is
 *      dropped with it.
 */
#define _GNU_SOURCE /* POLLRDHUP */
#include "watch.h"

#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"

struct watch {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* an entry was added, or stop */
	struct watch_entry *head;
	unsigned long long next_id;
	int stop;
	pthread_t thread;
	/* the poll set, the watcher thread's alone */
	struct pollfd *fds;
	unsigned long long *ids;
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
	unsigned long long *ids;
	size_t cap = w->cap ? w->cap : 16;

	if (n <= w->cap)
		return 0;
	while (cap < n)
		cap *= 2;
	fds = realloc(w->fds, cap * sizeof(*fds));
	if (fds == NULL)
		return -1;
	w->fds = fds;
	ids = realloc(w->ids, cap * sizeof(*ids));
	if (ids == NULL)
		return -1;
	w->ids = ids;
	w->cap = cap;
	return 0;
}

/* Step 1: deadlines fired, the other sockets copied; returns how many. */
static size_t collect(struct watch *w)
{
	double now = clock_seconds();
	size_t n = 0, total = 0;

	for (struct watch_entry *e = w->head; e != NULL; e = e->next)
		total++;
	if (reserve(w, total) != 0)
		total = w->cap; /* poll what fits; deadlines are still all checked */
	for (struct watch_entry *e = w->head; e != NULL; e = e->next) {
		enum watch_reason why;

		if (e->fired)
			continue;
		why = due(e, now);
		if (why != WATCH_NONE) {
			fire(e, why);
			continue;
		}
		if (e->fd < 0 || n >= total)
			continue;
		w->fds[n] = (struct pollfd){ .fd = e->fd, .events = POLLRDHUP };
		w->ids[n] = e->id;
		n++;
	}
	return n;
}

/* Step 3: the entries whose sockets hung up. */
static void fire_hangups(struct watch *w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!(w->fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR)))
			continue;
		for (struct watch_entry *e = w->head; e != NULL; e = e->next) {
			if (e->id == w->ids[i]) {
				if (!e->fired)
					fire(e, WATCH_CLIENT_GONE);
				break;
			}
		}
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

static void *watch_main(void *arg)
{
	struct watch *w = arg;

	pthread_mutex_lock(&w->lock);
	while (!w->stop) {
		size_t n;

		if (w->head == NULL) {
			timed_wait(w, WATCH_IDLE_MS);
			continue;
		}
		n = collect(w);
		if (n == 0) { /* deadlines only, or every entry fired */
			timed_wait(w, WATCH_TICK_MS);
			continue;
		}
		pthread_mutex_unlock(&w->lock);
		if (poll(w->fds, (nfds_t)n, WATCH_TICK_MS) < 0)
			n = 0; /* EINTR or worse: nothing learnt this round */
		pthread_mutex_lock(&w->lock);
		fire_hangups(w, n);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

struct watch *watch_new(char *err, size_t errlen)
{
	struct watch *w = calloc(1, sizeof(*w));

	if (w == NULL) {
		snprintf(err, errlen, "out of memory for the request watcher");
		return NULL;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
	if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
		snprintf(err, errlen, "cannot start the request watcher thread");
		pthread_cond_destroy(&w->wake);
		pthread_mutex_destroy(&w->lock);
		free(w);
		return NULL;
	}
	return w;
}

void watch_add(struct watch *w, struct watch_entry *e, int fd, double deadline)
{
	atomic_init(&e->cancel, WATCH_NONE);
	e->fd = fd;
	e->deadline = deadline;
	e->fired = 0;
	e->prev = NULL;
	atomic_store_explicit(&e->touched_ms, now_ms(), memory_order_relaxed);
	pthread_mutex_lock(&w->lock);
	e->id = ++w->next_id;
	e->next = w->head;
	if (w->head != NULL)
		w->head->prev = e;
	w->head = e;
	if (fd >= 0) /* a deadline alone waits for the next idle wake-up (watch.h) */
		pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
}

void watch_touch(struct watch_entry *e)
{
	atomic_store_explicit(&e->touched_ms, now_ms(), memory_order_relaxed);
}

void watch_remove(struct watch *w, struct watch_entry *e)
{
	pthread_mutex_lock(&w->lock);
	if (e->prev != NULL)
		e->prev->next = e->next;
	else
		w->head = e->next;
	if (e->next != NULL)
		e->next->prev = e->prev;
	e->prev = e->next = NULL;
	pthread_mutex_unlock(&w->lock);
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
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
	free(w->fds);
	free(w->ids);
	free(w);
}
