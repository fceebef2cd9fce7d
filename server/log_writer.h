/*
 * log_writer.h: finished log lines to stderr, written by a thread of their
 * own so that the I/O thread never waits on write(2) (a slow pipe to a log
 * collector would otherwise stall every connection).
 *
 * Lines go into a buffer of LOG_WRITER_BUFFER bytes; the writer thread
 * takes all that has gathered in about 10 ms and writes it with one
 * write(2), whole lines only, in the order they were put. A producer waits only when the buffer is
 * full. Before log_writer_start and after log_writer_stop, log_writer_put
 * writes at once (start-up errors, tests, tools). Lines still in the buffer
 * when the process is killed are lost: at most one buffer, usually
 * microseconds of lines.
 *
 * A stderr that takes nothing (a log collector that stopped reading a
 * pipe) fills the buffer; then the requests that log wait, and no access
 * line is lost. The thread that handles signals must not wait with them:
 * it puts with log_writer_try_put (its line dropped while the buffer is
 * full), and log_writer_stop waits for the writer a bounded time, so a
 * SIGTERM still drains and the daemon still exits.
 *
 * State: one writer per process (start once, stop once). Thread-safe.
 * Ownership: log_writer_put copies the lines (or writes them before it
 * returns); the caller keeps its buffer. The writer's buffers are its own.
 */
#ifndef SERVER_LOG_WRITER_H
#define SERVER_LOG_WRITER_H

#include <stddef.h>

#define LOG_WRITER_BUFFER ((size_t)1 << 20)

/* Starts the writer thread; 0, or -1 (writes stay synchronous). */
int log_writer_start(void);

/* How long log_writer_stop waits for stderr to take something. */
#define LOG_WRITER_STOP_SECONDS 1

/* Writes what is buffered, stops the thread; later lines are written at
 * once. It waits as long as stderr takes some of it every
 * LOG_WRITER_STOP_SECONDS (a slow reader gets all of it); when stderr has
 * taken nothing for that long it returns without the writer (left blocked
 * in write(2), its buffers kept: the process is exiting) and later lines
 * are dropped. */
void log_writer_stop(void);

/* Hands over len bytes of whole lines (at most LOG_WRITER_BUFFER). */
void log_writer_put(const char *lines, size_t len);

/* log_writer_put that never waits: -1 (the lines dropped) when the buffer
 * has no room for them, or the writer was abandoned; else 0. */
int log_writer_try_put(const char *lines, size_t len);

#endif
