/*
 * clock.h: the server's one clock, CLOCK_MONOTONIC in seconds, for
 * deadlines, timeouts and durations (never wall time: the access log's
 * timestamps are log.c's). Nothing is kept.
 */
#ifndef SERVER_CLOCK_H
#define SERVER_CLOCK_H

#include <time.h>

static inline double clock_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
