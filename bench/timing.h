/*
 * timing.h: the clock and the median that the bench programs share.
 *
 * Header-only (static inline), since each bench program is one file (or
 * bench/engine/'s few) linked against the project's libraries and nothing
 * else. Ownership: nothing is allocated; bench_median sorts the caller's
 * array in place, and callers that read its minimum after it rely on that.
 */
#ifndef BENCH_TIMING_H
#define BENCH_TIMING_H

#include <stddef.h>
#include <stdlib.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double bench_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of t[0 .. n) (n >= 1; the mean of the middle two when n is
 * even), after sorting t ascending. */
static inline double bench_median(double *t, size_t n)
{
	qsort(t, n, sizeof *t, bench_cmp_double);
	return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

#endif
