/*
 * pending.h: a budget of bytes held for clients, summed over every
 * connection: the answer bytes queued and not yet sent (--max-pending-mb),
 * and the request body bytes received and held (--max-receiving-mb: sixty
 * slow uploads of a 16 MiB body held 1.2 GB before any was admitted).
 *
 * A client that stops reading keeps its whole answer in memory until its
 * connection closes; without a bound, twenty such clients asking for 96 MB
 * answers held 1.9 GiB. An answer takes its size from the budget before it
 * is queued and gives it back when its request completes (sent, or the
 * connection closed); one that does not fit is refused with 503 and
 * Retry-After, and the connection's --write-timeout closes a reader that
 * makes no progress, which frees its share.
 *
 * Ownership: the struct is embedded in its owner (the HTTP server); every
 * function is safe from any thread (one atomic).
 */
#ifndef SERVER_PENDING_H
#define SERVER_PENDING_H

#include <stdatomic.h>
#include <stddef.h>

struct pending {
	atomic_size_t held; /* bytes taken and not yet given back */
	size_t max;
};

void pending_init(struct pending *p, size_t max);

/* Takes n bytes: 0, or -1 (nothing taken) when held + n would pass max. */
int pending_take(struct pending *p, size_t n);

/* Gives back n bytes that pending_take took. */
void pending_give(struct pending *p, size_t n);

size_t pending_held(struct pending *p);

#endif
