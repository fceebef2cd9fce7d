/*
 * watch.h: one thread that watches the compute requests waiting in the
 * queue or running on a worker, and sets a request's cancel flag when its
 * client has gone or its --compute-deadline has passed.
 *
 * libmicrohttpd does not watch a suspended connection (main.c: a queued or
 * computing request's connection is suspended), so a client that closes
 * its socket goes unseen until the worker resumes the connection. The
 * watcher polls the sockets of the registered requests for POLLRDHUP,
 * POLLHUP and POLLERR every WATCH_TICK_MS, and compares each deadline with
 * the clock as often; the flag it sets is the one the engine reads
 * (engine/cancel.h), so a running call stops within milliseconds and a
 * queued request is ended right after the round that cancelled it (watch_new's
 * fired). A client that only
 * shuts down its sending side (a half-close) reads as gone too, as nginx
 * takes it: HTTP/1.1 clients do not half-close while they wait for an
 * answer. With nothing registered the thread sleeps on a condition variable
 * for WATCH_IDLE_MS at most: an entry with a socket wakes it at once (a
 * client gone must be seen within milliseconds), an entry with only a
 * deadline (seconds away) does not, so the many short requests whose
 * --request-deadline is held while their body arrives cost no wake-up and
 * no context switch each.
 *
 * Thread-safety: watch_add and watch_remove may be called from any thread
 * (libmicrohttpd's I/O threads add, workers remove); the entries are kept in
 * per-thread lists, each under its own lock (watch.c), and the watcher polls
 * a copy of the sockets taken under them, so no call waits for a poll. An
 * entry fires once; its flag keeps the first reason.
 *
 * An entry may also carry its own action (on_fire), as the transport's
 * request deadline does: its 408 is written when the deadline passes, even
 * if the client sends nothing more (http_respond.c: cut_off_at_deadline).
 * And an idle bound: an entry with idle > 0 fires (WATCH_IDLE) once idle
 * seconds pass without a watch_touch, as a request body that stops coming
 * does at --timeout (http.c: watch_receiving).
 *
 * Ownership: watch_new returns a watcher the caller frees with watch_free
 * (NULL accepted) once no entry is registered. A struct watch_entry is the
 * caller's (it lives in its request); from watch_add to watch_remove the
 * watcher links it and may set its flag, never after watch_remove returns.
 */
#ifndef SERVER_WATCH_H
#define SERVER_WATCH_H

#include <stdatomic.h>
#include <stddef.h>

enum { WATCH_TICK_MS = 10, WATCH_IDLE_MS = 250 };

/* The value of a fired entry's flag: why its request was cancelled. */
enum watch_reason {
	WATCH_NONE = 0,
	WATCH_CLIENT_GONE = 1, /* the client closed its connection */
	WATCH_DEADLINE = 2,    /* its deadline passed (--compute-deadline, --request-deadline) */
	WATCH_IDLE = 3,	       /* idle seconds passed without a watch_touch */
};

struct watch;
struct watch_shard;

struct watch_entry {
	atomic_int cancel;  /* WATCH_NONE, or the reason: the engine's cancel flag */
	/* the watcher's, under its list's lock */
	struct watch_shard *shard; /* the list it is on */
	int fd;             /* the client's socket, or -1 */
	double deadline;    /* CLOCK_MONOTONIC seconds; 0: none */
	unsigned long long id; /* tells a polled entry from a later one at the same address */
	int fired;
	struct watch_entry *prev, *next;
	/* the caller's, set before watch_add (NULL: none): called once when the
	 * entry fires, on the watcher's thread under its list's lock, so it must be
	 * short and must not call watch_add or watch_remove */
	void (*on_fire)(struct watch_entry *e, enum watch_reason why);
	double idle; /* the caller's, set before watch_add: seconds, or 0: no idle bound */
	atomic_llong touched_ms; /* CLOCK_MONOTONIC ms of watch_add or the last watch_touch */
};

/* Starts the watcher thread; NULL (with a message in err) if it cannot.
 * fired (NULL: none) is called with ctx on the watcher's thread after a
 * round in which an entry fired, with no lock of the watcher's held, so it
 * may call watch_remove: the transport ends the queued requests just
 * cancelled there (http_compute.c: compute_end_cancelled), so a deadline
 * passed in the queue is answered at once, not when a worker takes it.
 * ctx must outlive every entry registered, and what fired uses must live
 * until watch_stop_fired (or watch_free) returns. */
struct watch *watch_new(void (*fired)(void *ctx), void *ctx, char *err, size_t errlen);

/* From now on watch_new's fired is not called; returns once a call of it in
 * progress has returned. So what it uses may be freed before the watcher is
 * (server/main.c stop_all frees the worker pool, which the transport's hook
 * empties of cancelled requests, before http_stop frees the watcher).
 * Not on the watcher's thread (not from fired itself). NULL accepted. */
void watch_stop_fired(struct watch *w);

/* Registers e: its socket fd (-1: none) and its deadline (CLOCK_MONOTONIC
 * seconds, 0: none). Clears e->cancel first. */
void watch_add(struct watch *w, struct watch_entry *e, int fd, double deadline);

/* Notes activity on e (any thread, no lock): its idle bound starts again. */
void watch_touch(struct watch_entry *e);

/* Unregisters e; once it returns the watcher never touches e again, and
 * e->cancel holds its final value. */
void watch_remove(struct watch *w, struct watch_entry *e);

/* Stops and joins the thread; NULL is a no-op. */
void watch_free(struct watch *w);

#endif
