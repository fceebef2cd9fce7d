/*
 * refusals.c: per limit, under one mutex, the refusals not yet logged and
 * when that limit's last line was written. A refusal more than a second
 * after the last line is logged at once (with any count waiting); the others
 * wait for the next refusal or refusals_flush.
 */
#include "refusals.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"

struct limit_log {
	unsigned long long pending; /* refusals not yet in a line */
	double since;		    /* when the first of them came */
	double last_line;	    /* when the last line was written (0: never) */
};

/* What is logged a line a second: the limits, then clients that closed
 * with half a request, and requests libmicrohttpd answered itself as
 * malformed (neither is a refusal by a limit, nor counted as one: a flood
 * of them, a scanner's, must not be a flood of lines, nor error lines). */
enum { CLOSED_INCOMPLETE = LIMIT_COUNT, MALFORMED, LOG_KINDS };

/* A message that only details the one libmicrohttpd writes next for the
 * same request (MALFORMED, or its 431): dropped, so that request counts
 * once. */
enum { DETAIL = -1 };

struct refusals {
	pthread_mutex_t lock;
	struct metrics *metrics;
	unsigned long long value[LIMIT_COUNT];
	struct limit_log log[LOG_KINDS];
};

/* What each limit is, in its log line. */
static const struct {
	const char *what, *name, *flag;
} limit_text[LIMIT_COUNT] = {
    [LIMIT_CONNECTION] = {"connections", "connection limit", "--connection-limit"},
    [LIMIT_PER_IP] = {"connections", "per-IP limit", "--per-ip-limit"},
    [LIMIT_MEMORY] = {"requests", "connection memory limit", "--connection-memory"},
    [LIMIT_DRAINING] = {"requests", NULL, NULL},
};

/* libmicrohttpd 0.9's messages for its limits, as formatted: the start of
 * each. A request line or headers past --connection-memory get its own 414
 * or 431 page. */
static const struct {
	const char *prefix;
	int kind; /* an enum refuse_limit, CLOSED_INCOMPLETE, MALFORMED or DETAIL */
} mhd_message[] = {
    {"Server reached connection limit", LIMIT_CONNECTION},
    {"Error processing request (HTTP response code is 431", LIMIT_MEMORY},
    {"Error processing request (HTTP response code is 414", LIMIT_MEMORY},
    /* a request line or header it cannot parse (400), a Content-Length or a
     * chunk size past what it counts (413), an HTTP version it does not speak
     * (505). Most never reach attnd and have no access line; a bad chunk in
     * a routed body does, with status 0 (the answer was libmicrohttpd's). Any
     * other status of its own (a 500) stays an error. */
    {"Error processing request (HTTP response code is 400", MALFORMED},
    {"Error processing request (HTTP response code is 413", MALFORMED},
    {"Error processing request (HTTP response code is 505", MALFORMED},
    {"Failed to parse `Content-Length' header", DETAIL},
    {"Too large value of 'Content-Length' header", DETAIL},
    /* connection_add_header: its 431 ("Error processing request", above)
     * follows at once */
    {"Not enough memory in pool to allocate header record", DETAIL},
    {"Connection was closed by remote side with incomplete request", CLOSED_INCOMPLETE},
    /* its words when poll() saw the close first: a client that read a 408
     * written mid-body (http_respond.c: cut_off_at_deadline) and closed */
    {"Connection socket is closed when reading request due to the error", CLOSED_INCOMPLETE},
    /* its words when the close was a reset (ECONNRESET): a client that closed
     * with SO_LINGER 0, or with unread data (after that 408, say), or died */
    {"Socket has been disconnected when reading request", CLOSED_INCOMPLETE},
};

struct refusals *refusals_new(struct metrics *metrics, unsigned long long connection_limit,
			      unsigned long long per_ip_limit,
			      unsigned long long connection_memory)
{
	struct refusals *rf = calloc(1, sizeof *rf);

	if (rf == NULL)
		return NULL;
	if (pthread_mutex_init(&rf->lock, NULL) != 0) {
		free(rf);
		return NULL;
	}
	rf->metrics = metrics;
	rf->value[LIMIT_CONNECTION] = connection_limit;
	rf->value[LIMIT_PER_IP] = per_ip_limit;
	rf->value[LIMIT_MEMORY] = connection_memory;
	return rf;
}

/* Writes kind's line if it has a count waiting and its last line is a
 * second old (or at once, when final); under the lock (the log writer
 * takes the line whole). The line never waits for the log: an I/O thread
 * writes it outside any request, so a drain would not wait for that thread,
 * and main takes this lock every second and at exit. A line dropped (the
 * log's buffer full) keeps its count for the next. */
static void maybe_log(struct refusals *rf, int kind, double now, int final)
{
	struct limit_log *l = &rf->log[kind];
	double span = now - (l->last_line > 0 ? l->last_line : l->since);
	int limit = kind;
	int rc;

	if (l->pending == 0 || (!final && l->last_line > 0 && now - l->last_line < 1.0))
		return;
	if (kind == CLOSED_INCOMPLETE)
		rc = log_info_try("clients closed their connection with a request half sent: %llu "
				  "in the last %.0f s",
				  l->pending, span > 1.0 ? span : 1.0);
	else if (kind == MALFORMED)
		rc = log_info_try("malformed requests answered 400, 413 or 505 by libmicrohttpd: "
				  "%llu in the last %.0f s",
				  l->pending, span > 1.0 ? span : 1.0);
	else if (limit_text[limit].flag != NULL)
		rc = log_warn_try("%s refused by the %s (%s %llu): %llu in the last %.0f s",
				  limit_text[limit].what, limit_text[limit].name,
				  limit_text[limit].flag, rf->value[limit], l->pending,
				  span > 1.0 ? span : 1.0);
	else
		rc = log_warn_try("%s refused while draining: %llu in the last %.0f s",
				  limit_text[limit].what, l->pending, span > 1.0 ? span : 1.0);
	if (rc != 0)
		return;
	l->pending = 0;
	l->last_line = now;
}

void refusals_free(struct refusals *rf)
{
	if (rf == NULL)
		return;
	refusals_flush_final(rf); /* no count is lost at exit */
	pthread_mutex_destroy(&rf->lock);
	free(rf);
}

/* Counts one of kind for its line, written now if the last is a second old. */
static void note_line(struct refusals *rf, int kind)
{
	double now = clock_seconds();

	pthread_mutex_lock(&rf->lock);
	if (rf->log[kind].pending++ == 0)
		rf->log[kind].since = now;
	maybe_log(rf, kind, now, 0);
	pthread_mutex_unlock(&rf->lock);
}

void refusals_note(struct refusals *rf, enum refuse_limit limit)
{
	metrics_refused(rf->metrics, limit);
	note_line(rf, limit);
}

int refusals_from_mhd(struct refusals *rf, const char *fmt, va_list ap)
{
	char msg[128];

	vsnprintf(msg, sizeof msg, fmt, ap);
	for (size_t i = 0; i < sizeof mhd_message / sizeof mhd_message[0]; i++) {
		if (strncmp(msg, mhd_message[i].prefix, strlen(mhd_message[i].prefix)) != 0)
			continue;
		if (mhd_message[i].kind == DETAIL)
			return 1;
		if (mhd_message[i].kind == CLOSED_INCOMPLETE || mhd_message[i].kind == MALFORMED)
			note_line(rf, mhd_message[i].kind);
		else
			refusals_note(rf, (enum refuse_limit)mhd_message[i].kind);
		return 1;
	}
	return 0;
}

static void flush(struct refusals *rf, int final)
{
	double now = clock_seconds();

	pthread_mutex_lock(&rf->lock);
	for (int kind = 0; kind < LOG_KINDS; kind++)
		maybe_log(rf, kind, now, final);
	pthread_mutex_unlock(&rf->lock);
}

void refusals_flush(struct refusals *rf)
{
	flush(rf, 0);
}

void refusals_flush_final(struct refusals *rf)
{
	flush(rf, 1);
}
