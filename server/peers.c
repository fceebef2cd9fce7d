/*
 * peers.c: a chained hash table of client addresses (up to 16 bytes: IPv4
 * or IPv6) and their open connections, under one mutex. An address's entry
 * lives while it has a connection open, so the table holds at most
 * --connection-limit entries.
 */
#include "peers.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { PEER_BUCKETS = 1024 }; /* a power of two */

struct peer_key {
	unsigned char addr[16];
	unsigned char len; /* 4 or 16 */
};

struct peer {
	struct peer_key key;
	size_t open;
	struct peer *next;
};

struct peer_conn {
	struct peer_key key;
	int over;
};

struct peers {
	pthread_mutex_t lock;
	size_t limit;
	struct peer *bucket[PEER_BUCKETS];
};

struct peers *peers_new(size_t limit)
{
	struct peers *p = calloc(1, sizeof *p);

	if (p == NULL)
		return NULL;
	if (pthread_mutex_init(&p->lock, NULL) != 0) {
		free(p);
		return NULL;
	}
	p->limit = limit;
	return p;
}

void peers_free(struct peers *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < PEER_BUCKETS; i++) {
		while (p->bucket[i] != NULL) {
			struct peer *next = p->bucket[i]->next;

			free(p->bucket[i]);
			p->bucket[i] = next;
		}
	}
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* addr's key (an IPv4-mapped IPv6 address as IPv4); -1 for other families. */
static int key_of(const struct sockaddr *addr, struct peer_key *k)
{
	static const unsigned char v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	memset(k, 0, sizeof *k);
	if (addr == NULL)
		return -1;
	if (addr->sa_family == AF_INET) {
		const struct sockaddr_in *in4 = (const struct sockaddr_in *)(const void *)addr;

		memcpy(k->addr, &in4->sin_addr, 4);
		k->len = 4;
		return 0;
	}
	if (addr->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)addr;
		const unsigned char *a = in6->sin6_addr.s6_addr;

		if (memcmp(a, v4_mapped, sizeof v4_mapped) == 0) {
			memcpy(k->addr, a + 12, 4);
			k->len = 4;
		} else {
			memcpy(k->addr, a, 16);
			k->len = 16;
		}
		return 0;
	}
	return -1;
}

/* FNV-1a over the key's bytes. */
static size_t bucket_of(const struct peer_key *k)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < k->len; i++)
		h = (h ^ k->addr[i]) * 16777619u;
	return h & (PEER_BUCKETS - 1);
}

/* The entry of k in its bucket (*link: the pointer to it), or NULL. Under the lock. */
static struct peer *find(struct peers *p, const struct peer_key *k, struct peer ***link)
{
	struct peer **at = &p->bucket[bucket_of(k)];

	for (; *at != NULL; at = &(*at)->next) {
		if ((*at)->key.len == k->len && memcmp((*at)->key.addr, k->addr, k->len) == 0)
			break;
	}
	*link = at;
	return *at;
}

struct peer_conn *peers_connect(struct peers *p, const struct sockaddr *addr)
{
	struct peer_conn *c = calloc(1, sizeof *c);
	struct peer **link;
	struct peer *e;

	if (c == NULL || key_of(addr, &c->key) != 0) {
		free(c);
		return NULL;
	}
	pthread_mutex_lock(&p->lock);
	e = find(p, &c->key, &link);
	if (e == NULL) {
		e = calloc(1, sizeof *e);
		if (e != NULL) {
			e->key = c->key;
			*link = e;
		}
	}
	if (e != NULL) {
		c->over = e->open >= p->limit;
		e->open++;
	}
	pthread_mutex_unlock(&p->lock);
	if (e == NULL) {
		free(c);
		return NULL;
	}
	return c;
}

int peer_conn_over(const struct peer_conn *c)
{
	return c != NULL && c->over;
}

void peers_disconnect(struct peers *p, struct peer_conn *c)
{
	struct peer **link;
	struct peer *e;

	if (c == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	e = find(p, &c->key, &link);
	if (e != NULL && --e->open == 0) {
		*link = e->next;
		free(e);
	}
	pthread_mutex_unlock(&p->lock);
	free(c);
}
