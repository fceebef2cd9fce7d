/*
 * http.h: the HTTP transport: libmicrohttpd's daemon, routing, limits, CORS,
 * auth, the compute hand-off to the worker pool, and the access log.
 *
 * Ownership: http_start borrows cfg, svc, metrics, pool and engine_workers
 * for the server's whole life (they must outlive http_stop); http_stop stops
 * the daemon and frees the server (NULL accepted). Per-request state is
 * created on a request's first callback and freed in libmicrohttpd's
 * completion callback.
 */
#ifndef SERVER_HTTP_H
#define SERVER_HTTP_H

#include <stddef.h>

#include "config.h"
#include "metrics.h"
#include "pool.h"

struct api_service;
struct attn_workers;
struct http_server;

struct http_deps {
	const struct attnd_config *cfg;
	const struct api_service *svc;
	struct metrics *metrics;
	struct pool *pool;
	size_t max_response_bytes;
	/* a large request may run its engine call on up to this many threads,
	 * borrowing idle workers (main.c: the thread model); 1: never */
	size_t split_threads;
	struct attn_workers *engine_workers; /* kept for such calls, or NULL */
};

/* Binds and starts serving. Returns NULL with a message in err on failure. */
struct http_server *http_start(const struct http_deps *deps, char *err, size_t errlen);

/* The bound TCP port (useful with --port 0). */
unsigned http_port(const struct http_server *srv);

/* Starts draining: the listening socket stops listening (a connect is
 * refused; http_stop closes it), then /readyz answers 503, new compute
 * requests get 503 `draining`, and responses carry `Connection: close`.
 * Requests already received run to completion. */
void http_begin_drain(struct http_server *srv);

/* Requests received (headers read) and not yet completed. */
long http_active(const struct http_server *srv);

/* Connections open: idle keep-alive ones too. */
long http_connections(const struct http_server *srv);

/* Connections in a lingering close (linger.h): closed, still read a while. */
size_t http_lingering(const struct http_server *srv);

/* Requests completed (their state freed) since http_start. */
unsigned long http_completed(const struct http_server *srv);

/* Once a second or so: logs the limits' refusals still waiting (refusals.h). */
void http_tick(struct http_server *srv);

/* Logs every refusal count still waiting, for an exit without http_stop. */
void http_log_waiting(struct http_server *srv);

/* From now on the watcher ends no cancelled request in the pool's queue
 * (watch_new's fired hook, http_compute.c: compute_end_cancelled), and one
 * it was ending has ended: call before freeing the pool, as server/main.c's
 * stop_all does before http_stop (pool_free then ends what is queued, as
 * the workers take it). NULL accepted. */
void http_stop_evicting(struct http_server *srv);

/* Stops the daemon and frees srv. Call only when http_active() is 0:
 * libmicrohttpd cannot stop with suspended connections. */
void http_stop(struct http_server *srv);

#endif
