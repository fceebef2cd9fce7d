/*
 * cutoff.h: an answer written straight to a connection's socket in the
 * middle of a request body, then the connection closed.
 *
 * libmicrohttpd 0.9.75 takes a response only before the body (the first
 * callback) or after all of it (MHD_queue_response refuses one in between),
 * so a body that never ends, or one trickled past --request-deadline, could
 * only be cut with no answer at all. cutoff_send writes a small, complete
 * HTTP/1.1 answer with `Connection: close` itself; the caller then returns
 * MHD_NO, and libmicrohttpd closes the connection. The answer is written
 * without blocking: on a socket whose send buffer is full (a client that
 * neither reads nor stops sending) what does not fit is dropped and the
 * connection closes all the same. A client still sending when the socket
 * closes is not reset (a reset can destroy the answer): libmicrohttpd's
 * close is a lingering one (linger.h).
 *
 * Ownership: nothing is kept; fd stays libmicrohttpd's.
 */
#ifndef SERVER_CUTOFF_H
#define SERVER_CUTOFF_H

#include <stddef.h>

/* A header of an answer: name and value, both printable ASCII (also the
 * list http_respond.c builds for the answers libmicrohttpd sends). */
struct answer_header {
	const char *name;
	const char *value;
};

/* Writes `HTTP/1.1 status reason`, Date, the n headers, Content-Type,
 * Content-Length and `Connection: close`, then len bytes of body, to fd;
 * body NULL writes the head alone, still with Content-Length len (the
 * answer to a HEAD, RFC 9110 section 9.3.2). Returns 0 when every byte was
 * written, -1 otherwise (the head is too long for its buffer, or the
 * socket took less). */
int cutoff_send(int fd, int status, const struct answer_header *h, size_t n,
		const char *content_type, const char *body, size_t len);

#endif
