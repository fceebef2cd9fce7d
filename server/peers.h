/*
 * peers.h: the open connections of each client address, for --per-ip-limit.
 *
 * libmicrohttpd's own per-IP limit closes a connection on accept, which a
 * load tester sees as a reset; attnd counts instead (libmicrohttpd's
 * connection notifications call peers_connect and peers_disconnect), and
 * answers a connection over the limit 503 with Retry-After (server/http.c),
 * as it answers any other overload. IPv4 and IPv6 addresses are counted
 * apart, an IPv4-mapped IPv6 address as its IPv4 one.
 *
 * Ownership: peers_new returns a table the caller frees with peers_free
 * (NULL accepted) once no connection is open. peers_connect returns a handle
 * (or NULL) that peers_disconnect frees (NULL accepted). Thread-safe: one
 * mutex guards the table.
 */
#ifndef SERVER_PEERS_H
#define SERVER_PEERS_H

#include <stddef.h>
#include <sys/socket.h>

struct peers;
struct peer_conn;

/* limit: the connections one address may have open (>= 1). NULL when out
 * of memory. */
struct peers *peers_new(size_t limit);
void peers_free(struct peers *p);

/* A new connection from addr: counted, and marked over the limit when its
 * address had `limit` open already. NULL (nothing counted) for an address
 * that is neither IPv4 nor IPv6 or when out of memory: such a connection is
 * never refused. */
struct peer_conn *peers_connect(struct peers *p, const struct sockaddr *addr);

/* 1 when c's address was over the limit as c opened (NULL: 0). */
int peer_conn_over(const struct peer_conn *c);

/* The connection closed: uncounted and c freed. */
void peers_disconnect(struct peers *p, struct peer_conn *c);

#endif
