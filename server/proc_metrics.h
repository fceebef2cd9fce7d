/*
 * proc_metrics.h: the process_* metrics of Prometheus' client libraries
 * (CPU time, resident and virtual memory, open and maximum file descriptors,
 * start time), read from /proc/self on each scrape. Linux only.
 *
 * Ownership: appends to a buf the caller owns; keeps no state.
 */
#ifndef SERVER_PROC_METRICS_H
#define SERVER_PROC_METRICS_H

#include <stdio.h>

#include "common/buf.h"

/* Appends the process_* series; a value /proc does not give is left out
 * (its HELP and TYPE too). */
void proc_metrics_render(struct buf *out);

/* The boot time in seconds since the epoch, from /proc/stat's text at f:
 * its btime line, wherever it lies (the lines before it, one a CPU and the
 * interrupt counts, run to tens of KiB on a large machine); -1 when there
 * is none. Reads f up to that line; the caller opened f and closes it. */
long long proc_boot_time(FILE *f);

#endif
