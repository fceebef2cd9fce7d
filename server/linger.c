/*
 * linger.c: the lingering close (see linger.h).
 *
 * The sockets are kept in a fixed array of LINGER_MAX entries. Entries are
 * added at its end under the lock (lingerer_on_close, any thread) and only
 * the lingering thread removes them, so while it polls entries [0, n)
 * unlocked, their indices stay put. One round, every LINGER_TICK_MS at
 * most (with nothing lingering it sleeps on a condition variable):
 *   1. under the lock: copy the n sockets into the poll set;
 *   2. unlocked: poll them, LINGER_TICK_MS at most;
 *   3. under the lock: read and discard what each readable one holds (at
 *      most LINGER_ROUND_BYTES a round, so one fast sender does not starve
 *      the others), and close those that ended (the client's close, an
 *      error, LINGER_BYTES, or LINGER_SECONDS), compacting the array.
 */
#define _GNU_SOURCE /* struct tcp_info and the TCP states of netinet/tcp.h */
#include "linger.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

enum { LINGER_TICK_MS = 50, LINGER_ROUND_BYTES = 256 << 10, DISCARD_BYTES = 64 << 10 };

struct lingering {
	int fd;	      /* the duplicate: the lingerer's own */
	double until; /* CLOCK_MONOTONIC seconds: closed then at the latest */
	size_t read;  /* bytes discarded so far */
};

struct lingerer {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* a socket was added, or stop */
	struct lingering at[LINGER_MAX];
	size_t n;
	int stop;
	struct metrics *metrics;
	pthread_t thread;
	/* the lingering thread's alone */
	struct pollfd fds[LINGER_MAX];
	char discard[DISCARD_BYTES];
};

/* The rule of linger.h: the server's side shut first (FIN-WAIT) and the
 * client may still be sending. */
static int may_still_send(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof ti;
	int unread = 0;

	memset(&ti, 0, sizeof ti);
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
		return 0;
	if (ti.tcpi_state != TCP_FIN_WAIT1 && ti.tcpi_state != TCP_FIN_WAIT2)
		return 0;
	if (ioctl(fd, FIONREAD, &unread) == 0 && unread > 0)
		return 1;
	return ti.tcpi_last_data_recv < LINGER_RECENT_MS;
}

/* Closes entry i and moves the last entry into its place; under the lock. */
static void end_one(struct lingerer *l, size_t i, enum linger_end why)
{
	close(l->at[i].fd);
	l->at[i] = l->at[l->n - 1];
	l->n--;
	metrics_linger(l->metrics, -1);
	metrics_lingered(l->metrics, why);
}

/* Reads and discards what entry e holds now: LINGER_END_COUNT while it
 * should linger on, else how it ended. */
static enum linger_end drain_one(struct lingerer *l, struct lingering *e)
{
	size_t round = 0;

	while (round < LINGER_ROUND_BYTES) {
		ssize_t got = recv(e->fd, l->discard, sizeof l->discard, MSG_DONTWAIT);

		if (got == 0)
			return LINGER_END_EOF;
		if (got < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return LINGER_END_ERROR;
		}
		round += (size_t)got;
		e->read += (size_t)got;
		if (e->read >= LINGER_BYTES)
			return LINGER_END_BYTES;
	}
	return LINGER_END_COUNT;
}

/* Step 3: the n entries polled, from the last down, so that end_one's move
 * of the last entry never skips one not yet seen. */
static void serve_round(struct lingerer *l, size_t n)
{
	double now = clock_seconds();

	for (size_t k = n; k-- > 0;) {
		struct lingering *e = &l->at[k];
		enum linger_end end = LINGER_END_COUNT;

		if (l->fds[k].revents != 0)
			end = drain_one(l, e);
		if (end == LINGER_END_COUNT && now >= e->until)
			end = LINGER_END_TIME;
		if (end != LINGER_END_COUNT)
			end_one(l, k, end);
	}
}

static void *lingerer_main(void *arg)
{
	struct lingerer *l = arg;

	pthread_mutex_lock(&l->lock);
	while (!l->stop) {
		size_t n = l->n;

		if (n == 0) {
			pthread_cond_wait(&l->wake, &l->lock);
			continue;
		}
		for (size_t i = 0; i < n; i++)
			l->fds[i] = (struct pollfd){.fd = l->at[i].fd, .events = POLLIN};
		pthread_mutex_unlock(&l->lock);
		if (poll(l->fds, (nfds_t)n, LINGER_TICK_MS) < 0)
			for (size_t i = 0; i < n; i++) /* EINTR: read nothing this round */
				l->fds[i].revents = 0;
		pthread_mutex_lock(&l->lock);
		serve_round(l, n);
	}
	while (l->n > 0)
		end_one(l, l->n - 1, LINGER_END_STOP);
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

struct lingerer *lingerer_new(struct metrics *metrics, char *err, size_t errlen)
{
	struct lingerer *l = calloc(1, sizeof *l);

	if (l == NULL) {
		snprintf(err, errlen, "out of memory for the lingering close");
		return NULL;
	}
	l->metrics = metrics;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->wake, NULL);
	if (pthread_create(&l->thread, NULL, lingerer_main, l) != 0) {
		snprintf(err, errlen, "cannot start the lingering-close thread");
		pthread_cond_destroy(&l->wake);
		pthread_mutex_destroy(&l->lock);
		free(l);
		return NULL;
	}
	return l;
}

int lingerer_on_close(struct lingerer *l, int fd)
{
	int dup_fd;

	if (l == NULL || fd < 0 || !may_still_send(fd))
		return 0;
	pthread_mutex_lock(&l->lock);
	if (l->stop || l->n == LINGER_MAX) {
		pthread_mutex_unlock(&l->lock);
		metrics_lingered(l->metrics, LINGER_END_FULL);
		return 0;
	}
	dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dup_fd < 0) { /* out of descriptors: close at once, as without lingering */
		pthread_mutex_unlock(&l->lock);
		metrics_lingered(l->metrics, LINGER_END_FULL);
		return 0;
	}
	/* the owner shut it already; shut here too, so that the FIN follows the
	 * answer whatever the owner does */
	shutdown(dup_fd, SHUT_WR);
	l->at[l->n++] = (struct lingering){dup_fd, clock_seconds() + LINGER_SECONDS, 0};
	metrics_linger(l->metrics, +1);
	if (l->n == 1)
		pthread_cond_signal(&l->wake);
	pthread_mutex_unlock(&l->lock);
	return 1;
}

size_t lingerer_count(struct lingerer *l)
{
	size_t n;

	if (l == NULL)
		return 0;
	pthread_mutex_lock(&l->lock);
	n = l->n;
	pthread_mutex_unlock(&l->lock);
	return n;
}

void lingerer_free(struct lingerer *l)
{
	if (l == NULL)
		return;
	pthread_mutex_lock(&l->lock);
	l->stop = 1;
	pthread_cond_signal(&l->wake);
	pthread_mutex_unlock(&l->lock);
	pthread_join(l->thread, NULL);
	pthread_cond_destroy(&l->wake);
	pthread_mutex_destroy(&l->lock);
	free(l);
}
