/*
 * proc_metrics.h: the process_* metrics of Prometheus' client libraries
 * (CPU time, resident and virtual memory, open and maximum file descriptors,
 * start time), read from /proc/self on each scrape. Linux only.
 *
 * Ownership: appends to a buf the caller owns; keeps no state.
 */
#ifndef SERVER_PROC_METRICS_H
#define SERVER_PROC_METRICS_H

#include "common/buf.h"

/* Appends the process_* series; a value /proc does not give is left out
 * (its HELP and TYPE too). */
void proc_metrics_render(struct buf *out);

#endif
