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

/* Writes what is buffered, stops the thread; later lines are written at once. */
void log_writer_stop(void);

/* Hands over len bytes of whole lines (at most LOG_WRITER_BUFFER). */
void log_writer_put(const char *lines, size_t len);

#endif
