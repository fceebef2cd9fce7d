/*
 * log_writer.c: see log_writer.h.
 *
 * Two buffers: producers append to `front` under the mutex; the writer swaps
 * it with `back` and writes `back` outside the mutex, so producers wait only
 * while the swap runs or when front is full. The writer sleeps on `more`
 * only with front empty, and producers signal it only then (writer_idle).
 * Woken, it lets lines gather for GATHER_NS before it takes them: a wake-up
 * and a write(2) per line would cost the I/O thread more than the write
 * alone did (measured: 35 us of CPU a small request against 29), so a busy
 * server pays one of each per GATHER_NS, and a line waits at most that long. While it stops, the writer still
 * takes lines until front is empty, so no line overtakes an earlier one.
 */
#include "log_writer.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GATHER_NS 10000000L /* 10 ms */

static struct {
	pthread_mutex_t lock;
	pthread_cond_t more; /* front has lines, or stop was asked */
	pthread_cond_t room; /* front was emptied, or the writer ended */
	char *front, *back;  /* [LOG_WRITER_BUFFER] each */
	size_t len;          /* bytes in front */
	int running, stopping, writer_idle;
	int ended;     /* the writer thread has returned */
	int abandoned; /* stop gave up on a writer blocked in write(2) */
	atomic_size_t written; /* bytes stderr has taken (outside the lock) */
	pthread_t thread;
} w = {.lock = PTHREAD_MUTEX_INITIALIZER, .more = PTHREAD_COND_INITIALIZER, .room = PTHREAD_COND_INITIALIZER};

/* The most one write(2) hands over: a pipe's buffer, so that a slow
 * reader's progress shows in w.written between writes (log_writer_stop). */
#define WRITE_CHUNK ((size_t)64 << 10)

/* write(2) until all of it is out; a failed write drops the rest. */
static void write_all(const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(STDERR_FILENO, p, len < WRITE_CHUNK ? len : WRITE_CHUNK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* nowhere left to report a failed log write */
		atomic_fetch_add(&w.written, (size_t)n);
		p += n;
		len -= (size_t)n;
	}
}

/* Called with the lock held: swaps front and back. Returns the bytes now in
 * back (0: nothing was there, which happens only when stopping). */
static size_t take_front(void)
{
	size_t n;
	char *t;

	n = w.len;
	t = w.front;
	w.front = w.back;
	w.back = t;
	w.len = 0;
	pthread_cond_broadcast(&w.room);
	return n;
}

/* Called with the lock held: waits until front has lines or stop was asked,
 * then, unless stopping, lets GATHER_NS of lines gather (lock released). */
static void wait_and_gather(void)
{
	const struct timespec gather = {0, GATHER_NS};

	while (w.len == 0 && !w.stopping) {
		w.writer_idle = 1;
		pthread_cond_wait(&w.more, &w.lock);
		w.writer_idle = 0;
	}
	if (w.stopping)
		return;
	pthread_mutex_unlock(&w.lock);
	nanosleep(&gather, NULL);
	pthread_mutex_lock(&w.lock);
}

static void *writer_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&w.lock);
	for (;;) {
		size_t n;

		wait_and_gather();
		n = take_front();
		if (n == 0)
			break;
		pthread_mutex_unlock(&w.lock);
		write_all(w.back, n);
		pthread_mutex_lock(&w.lock);
	}
	w.ended = 1;
	pthread_cond_broadcast(&w.room);
	pthread_mutex_unlock(&w.lock);
	return NULL;
}

int log_writer_start(void)
{
	char *a = malloc(LOG_WRITER_BUFFER), *b = malloc(LOG_WRITER_BUFFER);

	if (a == NULL || b == NULL)
		goto fail;
	pthread_mutex_lock(&w.lock);
	w.front = a;
	w.back = b;
	w.len = 0;
	w.stopping = 0;
	w.ended = 0;
	if (pthread_create(&w.thread, NULL, writer_main, NULL) != 0) {
		pthread_mutex_unlock(&w.lock);
		goto fail;
	}
	w.running = 1;
	pthread_mutex_unlock(&w.lock);
	return 0;
fail:
	free(a);
	free(b);
	w.front = w.back = NULL;
	return -1;
}

/* Called with the lock held: waits until the writer has returned, as long
 * as stderr takes something every LOG_WRITER_STOP_SECONDS (a slow reader
 * still gets every line); 1 when it has, 0 when stderr took nothing for
 * that long. */
static int wait_ended(void)
{
	while (!w.ended) {
		size_t before = atomic_load(&w.written);
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until); /* pthread_cond_timedwait's clock */
		until.tv_sec += LOG_WRITER_STOP_SECONDS;
		while (!w.ended && pthread_cond_timedwait(&w.room, &w.lock, &until) != ETIMEDOUT)
			;
		if (!w.ended && atomic_load(&w.written) == before)
			return 0;
	}
	return 1;
}

void log_writer_stop(void)
{
	pthread_mutex_lock(&w.lock);
	if (!w.running) {
		pthread_mutex_unlock(&w.lock);
		return;
	}
	w.stopping = 1;
	pthread_cond_signal(&w.more);
	if (!wait_ended()) { /* stderr takes nothing: lines put from now on are dropped */
		w.abandoned = 1;
		w.running = 0;
		pthread_cond_broadcast(&w.room); /* producers waiting for room drop theirs */
		pthread_mutex_unlock(&w.lock);
		return;
	}
	w.running = 0;
	pthread_mutex_unlock(&w.lock);
	pthread_join(w.thread, NULL);
	pthread_mutex_lock(&w.lock);
	free(w.front);
	free(w.back);
	w.front = w.back = NULL;
	pthread_mutex_unlock(&w.lock);
}

/* Called with the lock held: the writer runs, and front has no room for
 * len bytes that would fit in an empty one. */
static int no_room(size_t len)
{
	return w.running && len <= LOG_WRITER_BUFFER && w.len + len > LOG_WRITER_BUFFER;
}

/* log_writer_put, or with wait 0 log_writer_try_put. */
static int put(const char *lines, size_t len, int wait)
{
	pthread_mutex_lock(&w.lock);
	while (wait && no_room(len))
		pthread_cond_wait(&w.room, &w.lock);
	if (w.abandoned || no_room(len)) {
		pthread_mutex_unlock(&w.lock);
		return -1;
	}
	if (!w.running || len > LOG_WRITER_BUFFER) {
		/* no writer (before start, after stop): at once, under the lock */
		write_all(lines, len);
		pthread_mutex_unlock(&w.lock);
		return 0;
	}
	memcpy(w.front + w.len, lines, len);
	w.len += len;
	if (w.writer_idle)
		pthread_cond_signal(&w.more);
	pthread_mutex_unlock(&w.lock);
	return 0;
}

void log_writer_put(const char *lines, size_t len)
{
	(void)put(lines, len, 1);
}

int log_writer_try_put(const char *lines, size_t len)
{
	return put(lines, len, 0);
}
