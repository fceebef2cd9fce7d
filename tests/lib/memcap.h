/*
 * memcap.h: a test's cap on its own address space, so that an allocation
 * the code under test must not make fails (and the test sees what the code
 * then says) instead of succeeding, or swapping.
 *
 * Ownership: a struct memcap is the caller's value; memcap_end lifts what
 * memcap_begin set, and is safe when it set nothing.
 */
#ifndef ATTN_TESTS_MEMCAP_H
#define ATTN_TESTS_MEMCAP_H

#include <stddef.h>
#include <sys/resource.h>

struct memcap {
	int on;		     /* memcap_begin lowered the limit */
	struct rlimit saved; /* the limit before it */
};

/* Caps the address space at its current size + extra bytes. 1 when capped;
 * 0 where that cannot work (ASan and valgrind need the room, or the limit
 * is lower already), and nothing changed. */
int memcap_begin(struct memcap *c, size_t extra);

/* Lifts the cap memcap_begin set, if it set one. */
void memcap_end(struct memcap *c);

#endif
