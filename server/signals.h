/*
 * signals.h: how attnd's main thread hears SIGTERM, SIGINT and SIGHUP.
 *
 * signals_start blocks the three in the calling thread (main, before it
 * starts any other), so every thread attnd starts inherits the block and
 * none of them runs a handler; the kernel keeps a signal pending for the
 * process and main reads it from a signalfd. No work, and no other state,
 * depends on an asynchronous handler.
 *
 * A thread started before main (OpenBLAS's pthreads build starts its own
 * from a library constructor) does not block them, and the kernel hands it
 * a signal main blocks. So a handler is installed too; it only writes the
 * signal's number into a self-pipe that main waits on beside the signalfd.
 *
 * Why not a handler alone, as before: under ThreadSanitizer, whose runtime
 * takes every asynchronous signal first, a SIGTERM delivered to main while
 * it waited in poll(2) was sometimes dropped: the kernel delivered it (its
 * signal_deliver trace event), but our handler never ran, nothing was left
 * pending, and the daemon served on (now and then in check_server under
 * load; a second SIGTERM stopped it). A blocked signal read from a
 * signalfd never passes through a handler.
 *
 * SIGPIPE is ignored (a client gone mid-answer is an error return).
 *
 * State: one per process, file-scope (a handler can reach no other state).
 * signals_start once, from main, before any thread of attnd's starts.
 */
#ifndef SERVER_SIGNALS_H
#define SERVER_SIGNALS_H

/* 0, or -1 (errno set) when the pipe, the handlers or the signalfd fail;
 * what was set up by then stays (the caller exits). */
int signals_start(void);

/* The next of the three signals within timeout_ms: its number, 0 when none
 * came (or the wait was interrupted), -1 when the wait fails. */
int signals_next(int timeout_ms);

#endif
