/*
 * log.h: the access log and the error log, both on stderr, as text or JSON.
 *
 * One line per event, handed whole to log_writer.h (a thread that writes
 * batches of lines), so lines from different threads never interleave. The log keeps no state but the chosen format,
 * set once at start-up before any thread runs, and a per-thread cache of the
 * current second's timestamp text; nothing here allocates memory that
 * outlives a call. A line that cannot be formatted is dropped.
 */
#ifndef SERVER_LOG_H
#define SERVER_LOG_H

#include <stdarg.h>
#include <stddef.h>

enum log_format { LOG_TEXT = 0, LOG_JSON };

struct access_entry {
	const char *method;
	const char *path;
	int status; /* 0: no response was sent */
	size_t bytes_in, bytes_out;
	double ms;
	const char *request_id;
};

/* Chooses the format; call once before starting threads. */
void log_set_format(enum log_format format);

/* The calling thread's lines are dropped, not waited with, while the
 * writer's buffer is full (log_writer.h): for the thread that handles
 * signals, which a stalled stderr must not keep from draining. */
void log_never_wait(void);

/* One error line: "ts error message" or {"ts","level","msg"}. */
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_verror(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* One warn line: trouble the daemon handled (a limit refusing connections). */
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One info line (start-up, shutdown). */
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* log_warn and log_info for a line that must never wait for a stalled
 * stderr, on whatever thread writes it: a count written outside any
 * request, under a lock main takes too (refusals.h). 0, or -1 when the line
 * was dropped (the writer's buffer full, or the line not formatted). */
int log_warn_try(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int log_info_try(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One access line: "ts method path status bytes_in bytes_out ms request_id". */
void log_access(const struct access_entry *e);

#endif
