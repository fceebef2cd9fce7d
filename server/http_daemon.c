/*
 * http_daemon.c: the libmicrohttpd daemon around the request lifecycle
 * (http.c): started on --host and --port with its limits and its I/O
 * threads, its messages logged or counted, each connection counted (and per
 * address, for --per-ip-limit), drained and stopped. The http.h functions
 * main.c calls, but for the requests themselves.
 */
#include "http_request.h"

#include <microhttpd.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "framing.h"
#include "linger.h"
#include "log.h"
#include "refusals.h"

/* The message libmicrohttpd logs when the application's callback returns
 * MHD_NO, as cut_off does on purpose (the answer was sent, and the access
 * log has it): 1 when fmt with ap is that one. */
__attribute__((format(printf, 1, 0))) static int after_cut_off(const char *fmt, va_list ap)
{
	static const char message[] = "Application reported internal error";
	char head[sizeof message];
	va_list copy;

	va_copy(copy, ap);
	vsnprintf(head, sizeof head, fmt, copy);
	va_end(copy);
	return strcmp(head, message) == 0;
}

/* libmicrohttpd's messages: a refusal by one of its limits is counted and
 * logged once a second (refusals.h), the close after a cut_off dropped,
 * any other logged as an error. */
__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct http_server *srv = cls;
	va_list copy;
	int refusal = 0;

	if (srv->refusals != NULL) {
		va_copy(copy, ap);
		refusal = refusals_from_mhd(srv->refusals, fmt, copy);
		va_end(copy);
	}
	if (!refusal && !(after_cut_off(fmt, ap) && cut_off_closed()))
		log_verror(fmt, ap);
}

/* Each connection from its start to its close: counted per address for
 * --per-ip-limit (peers.h); its handle is the socket context. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct http_server *srv = cls;
	const union MHD_ConnectionInfo *ci;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) { /* libmicrohttpd close()s it next */
		ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (ci != NULL)
			lingerer_on_close(srv->linger, ci->connect_fd);
		atomic_fetch_sub(&srv->connections, 1);
	} else {
		atomic_fetch_add(&srv->connections, 1);
	}
	if (srv->peers == NULL)
		return;
	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		peers_disconnect(srv->peers, *socket_context);
		*socket_context = NULL;
		return;
	}
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	*socket_context = peers_connect(srv->peers, ci != NULL ? ci->client_addr : NULL);
}

union sockaddr_any {
	struct sockaddr sa;
	struct sockaddr_in in4;
	struct sockaddr_in6 in6;
};

/* Fills addr from the numeric --host; returns the MHD flag it needs, or -1.
 * `::` takes IPv4 too (IPV6_V6ONLY off), as "every interface" means: a
 * probe of 127.0.0.1 (the image's HEALTHCHECK) reaches it. */
static int bind_address(const struct attnd_config *cfg, union sockaddr_any *addr)
{
	memset(addr, 0, sizeof *addr);
	if (inet_pton(AF_INET, cfg->host, &addr->in4.sin_addr) == 1) {
		addr->in4.sin_family = AF_INET;
		addr->in4.sin_port = htons((uint16_t)cfg->port);
		return 0;
	}
	if (inet_pton(AF_INET6, cfg->host, &addr->in6.sin6_addr) == 1) {
		addr->in6.sin6_family = AF_INET6;
		addr->in6.sin6_port = htons((uint16_t)cfg->port);
		return IN6_IS_ADDR_UNSPECIFIED(&addr->in6.sin6_addr) ? MHD_USE_DUAL_STACK
								      : MHD_USE_IPv6;
	}
	return -1;
}

static struct MHD_Daemon *start_daemon(struct http_server *srv, const union sockaddr_any *addr,
				       unsigned extra_flags)
{
	const struct attnd_config *cfg = srv->cfg;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
			 MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC | MHD_USE_ERROR_LOG | extra_flags;
	unsigned io_threads = (unsigned)config_io_thread_count(cfg);
	struct MHD_OptionItem pool[] = {
	    {io_threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, io_threads, NULL},
	    {MHD_OPTION_END, 0, NULL}};

	/* the logger comes first so that every message of the set-up reaches it;
	 * a pool of one is the single polling thread, the option left out (it
	 * logs a size below 2 as an error; MHD_quiesce_daemon needs MHD_USE_ITC
	 * with a pool). poll(), not epoll: libmicrohttpd 0.9.75's
	 * epoll is edge-triggered, and a client's close that arrives in the same
	 * edge as its last bytes (a partial request, then FIN) was never seen:
	 * the socket sat in CLOSE-WAIT, holding its connection slot, until
	 * --timeout (issue 17, item 1; docs/security.md). poll() is level-
	 * triggered, so the end of the stream is read as soon as it is there. */
	return MHD_start_daemon(
	    flags, (uint16_t)cfg->port, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER,
	    mhd_log, srv, MHD_OPTION_ARRAY, pool, MHD_OPTION_SOCK_ADDR, &addr->sa,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->connection_limit,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)cfg->connection_memory,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->timeout, MHD_OPTION_NOTIFY_COMPLETED,
	    on_completed, srv, MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
	    MHD_OPTION_UNESCAPE_CALLBACK, framing_unescape, NULL, MHD_OPTION_URI_LOG_CALLBACK, on_uri,
	    NULL, MHD_OPTION_END);
}

/* The per-address table (with a --per-ip-limit) and the refusals' log. */
static int start_limits(struct http_server *srv, char *err, size_t errlen)
{
	const struct attnd_config *cfg = srv->cfg;

	srv->refusals = refusals_new(srv->metrics, cfg->connection_limit, cfg->per_ip_limit,
				     cfg->connection_memory);
	if (cfg->per_ip_limit > 0)
		srv->peers = peers_new((size_t)cfg->per_ip_limit);
	if (srv->refusals == NULL || (cfg->per_ip_limit > 0 && srv->peers == NULL)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

struct http_server *http_start(const struct http_deps *deps, char *err, size_t errlen)
{
	struct http_server *srv = shard_calloc(sizeof *srv);
	union sockaddr_any addr;
	const union MHD_DaemonInfo *info;
	int family_flag;

	if (srv == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	srv->cfg = deps->cfg;
	srv->listener = -1;
	srv->svc = deps->svc;
	srv->metrics = deps->metrics;
	srv->pool = deps->pool;
	srv->max_response_bytes = deps->max_response_bytes;
	pending_init(&srv->pending, (size_t)deps->cfg->max_pending_mb * ((size_t)1 << 20));
	pending_init(&srv->receiving, (size_t)deps->cfg->max_receiving_mb * ((size_t)1 << 20));
	srv->split.pool = deps->pool;
	srv->split.metrics = deps->metrics;
	srv->split.threads = deps->split_threads;
	srv->split.workers = deps->engine_workers;
	srv->id_seed = request_id_seed();
	srv->watch = watch_new(compute_end_cancelled, srv, err, errlen);
	if (srv->watch == NULL)
		goto fail;
	srv->linger = lingerer_new(deps->metrics, err, errlen);
	if (srv->linger == NULL)
		goto fail;
	if (start_limits(srv, err, errlen) != 0)
		goto fail;
	family_flag = bind_address(deps->cfg, &addr);
	if (family_flag < 0) {
		snprintf(err, errlen,
			 "--host (or ATTND_HOST) '%s' is not a numeric IPv4 or IPv6 address",
			 deps->cfg->host);
		goto fail;
	}
	srv->daemon = start_daemon(srv, &addr, (unsigned)family_flag);
	if (srv->daemon == NULL) {
		snprintf(err, errlen, "cannot listen on %s:%llu (in use, or not allowed?)",
			 deps->cfg->host, deps->cfg->port);
		goto fail;
	}
	info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
	srv->port = info != NULL ? info->port : (unsigned)deps->cfg->port;
	return srv;
fail:
	watch_free(srv->watch);
	lingerer_free(srv->linger);
	peers_free(srv->peers);
	refusals_free(srv->refusals);
	free(srv);
	return NULL;
}

unsigned http_port(const struct http_server *srv)
{
	return srv->port;
}

/* The listener is shut, not closed: libmicrohttpd's I/O threads may still
 * poll it until they wake to the quiesce (its documentation: close it only
 * after MHD_stop_daemon), and each poll holds the socket open, listening,
 * so a close() left it taking connections that were reset once the last
 * poll let go. shutdown(2) stops the listening at once, whoever holds it:
 * a connect after this is refused. Draining, which makes every answer close
 * its connection, begins only then, so a client told to close and
 * reconnecting is refused, never reset after sending its request. */
void http_begin_drain(struct http_server *srv)
{
	MHD_socket listener = MHD_quiesce_daemon(srv->daemon);

	if (listener != MHD_INVALID_SOCKET) {
		srv->listener = listener;
		if (shutdown(listener, SHUT_RDWR) != 0)
			log_error("drain: could not stop listening: %s", strerror(errno));
	} else {
		log_error("drain: could not stop listening");
	}
	atomic_store(&srv->draining, 1);
}

long http_active(const struct http_server *srv)
{
	return atomic_load(&srv->active);
}

long http_connections(const struct http_server *srv)
{
	return atomic_load(&srv->connections);
}

size_t http_lingering(const struct http_server *srv)
{
	return lingerer_count(srv->linger);
}

unsigned long http_completed(const struct http_server *srv)
{
	return atomic_load(&srv->completed);
}

void http_tick(struct http_server *srv)
{
	refusals_flush(srv->refusals);
}

void http_log_waiting(struct http_server *srv)
{
	refusals_flush_final(srv->refusals);
}

void http_stop_evicting(struct http_server *srv)
{
	if (srv != NULL)
		watch_stop_fired(srv->watch);
}

void http_stop(struct http_server *srv)
{
	if (srv == NULL)
		return;
	if (srv->daemon != NULL)
		MHD_stop_daemon(srv->daemon);
	if (srv->listener >= 0)
		close(srv->listener);
	watch_free(srv->watch); /* after the daemon: no request is registered now */
	lingerer_free(srv->linger); /* after the daemon: no socket is added now */
	peers_free(srv->peers); /* every connection closed with the daemon */
	refusals_free(srv->refusals);
	free(srv);
}
