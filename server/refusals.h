/*
 * refusals.h: connections the transport's limits turned away, counted
 * (attnd_connections_refused_total{limit}) and logged at warn level at most
 * once a second per limit, with a count:
 *
 *   connections refused by the per-IP limit (--per-ip-limit 4): 37 in the last 1 s
 *
 * instead of one line per connection. libmicrohttpd's own messages for its
 * limits (the connection limit closes on accept; a request's headers that
 * do not fit --connection-memory) come through its logger, which
 * refusals_from_mhd recognises; so are its lines for a client that closed
 * with half a request sent and for a request it answered itself as
 * malformed (400, 505), each logged the same way at info level (a flood of
 * them, a scanner's, is not a flood of lines, nor of error lines) but not
 * counted as a refusal. refusals_free writes every count still waiting.
 * A line never waits for a stalled stderr (log.h: log_warn_try): while the
 * log's buffer is full it is dropped and its count waits for the next line.
 *
 * Ownership: refusals_new borrows metrics and keeps copies of the numbers;
 * refusals_free frees (NULL accepted). Thread-safe.
 */
#ifndef SERVER_REFUSALS_H
#define SERVER_REFUSALS_H

#include <stdarg.h>

#include "metrics.h"

struct refusals;

/* The limits' values, for the log lines. NULL when out of memory. */
struct refusals *refusals_new(struct metrics *metrics, unsigned long long connection_limit,
			      unsigned long long per_ip_limit,
			      unsigned long long connection_memory);
void refusals_free(struct refusals *rf);

/* One connection (or its request) refused by limit: counted, and logged
 * now if that limit's last line is a second old, else with the next line. */
void refusals_note(struct refusals *rf, enum refuse_limit limit);

/* libmicrohttpd's log message (fmt with ap, which is consumed: pass a
 * va_copy) names a refusal by a limit, or a client that closed mid-request:
 * noted, and 1 returned; 0 for any other message (which the caller logs). */
int refusals_from_mhd(struct refusals *rf, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* Logs the counts still waiting once their second has passed; call about
 * once a second (server/main.c's quiet tick does, through http_tick). */
void refusals_flush(struct refusals *rf);

/* Logs every count still waiting now, its second passed or not: at exit
 * (refusals_free does it too). */
void refusals_flush_final(struct refusals *rf);

#endif
