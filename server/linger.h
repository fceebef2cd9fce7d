/*
 * linger.h: a bounded lingering close (RFC 9112 section 9.6).
 *
 * When the server closes a connection whose client is still sending (a 413
 * cut off mid-body, a 408, a refusal queued before the body was read, a 400
 * for bad framing), the kernel answers the unread bytes, and any that come
 * after the close, with a reset, and a reset can destroy the answer: the
 * server's kernel drops what it had not yet sent (a client slow to read, a
 * segment to retransmit), and some clients' kernels drop what they had
 * received but not yet read. So the close is made in two steps, as nginx's
 * lingering_close does: the sending side is shut (FIN after the answer),
 * and the socket is read, its bytes discarded, until the client closes its
 * side, or LINGER_SECONDS pass, or LINGER_BYTES were read; then closed.
 *
 * lingerer_on_close is called with libmicrohttpd's socket just before
 * libmicrohttpd closes it (the connection's MHD_CONNECTION_NOTIFY_CLOSED).
 * It lingers only a connection the server is closing first (its side shut,
 * TCP_INFO says FIN-WAIT) whose client may still be sending: bytes unread
 * on the socket, or a byte received within LINGER_RECENT_MS. A keep-alive
 * connection closed at --timeout (its client silent that long) or one the
 * client closed is not lingered. It takes a duplicate of the descriptor, so
 * libmicrohttpd's close leaves the socket open and its connection slot is
 * freed as before; at most LINGER_MAX sockets linger at once, past that the
 * close is immediate (as without this module). One thread polls them.
 *
 * Counted in /metrics: attnd_connections_lingering (gauge) and
 * attnd_lingering_closes_total{end} (metrics.h: enum linger_end).
 *
 * Ownership: lingerer_new borrows metrics (it must outlive the lingerer) and
 * returns a lingerer freed with lingerer_free (NULL accepted), which closes
 * every socket still lingering. The descriptors it takes are its own.
 * Thread-safe: lingerer_on_close and lingerer_count may be called from any
 * thread.
 */
#ifndef SERVER_LINGER_H
#define SERVER_LINGER_H

#include <stddef.h>

#include "metrics.h"

enum {
	LINGER_MAX = 64,	 /* sockets lingering at once */
	LINGER_SECONDS = 2,	 /* the longest one lingers */
	LINGER_BYTES = 8 << 20,	 /* the most read (and discarded) from one */
	LINGER_RECENT_MS = 1000, /* "may still be sending": a byte this recent */
};

struct lingerer;

/* Starts the lingering thread; NULL (with a message in err) if it cannot. */
struct lingerer *lingerer_new(struct metrics *metrics, char *err, size_t errlen);

/* fd is a connection's socket that its owner closes right after: lingers a
 * duplicate of it when the rule above says so. Returns 1 when it lingers,
 * 0 when not (the owner's close then ends the connection at once). */
int lingerer_on_close(struct lingerer *l, int fd);

/* Sockets lingering now. */
size_t lingerer_count(struct lingerer *l);

/* Closes every lingering socket, stops and joins the thread; NULL is a
 * no-op. */
void lingerer_free(struct lingerer *l);

#endif
