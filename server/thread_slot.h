/*
 * thread_slot.h: a small number for the calling thread, to pick its shard of
 * something every request updates (metrics.c's counters, watch.c's lists).
 *
 * Kept once for the process, such a counter or lock moves its cache line
 * between the I/O threads' cores at every request; split into shards, each
 * thread's line stays in its own core. A thread takes the next number on its
 * first call (0, 1, 2, ...), so the first N threads to call get N different
 * shards of N; callers take the number modulo their shard count, and threads
 * past it share a shard (which must still be safe for them: atomics or a
 * lock). Each file that includes this numbers the threads on its own (the
 * counter and the thread's number are static to the file), which is all a
 * shard index needs. shard_calloc allocates the struct that holds the
 * shards, so their boundaries fall where the struct's alignment says.
 */
#ifndef SERVER_THREAD_SLOT_H
#define SERVER_THREAD_SLOT_H

#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Two 64-byte lines: AMD's and Intel's prefetchers fetch lines in pairs, so
 * a shard starting on this boundary shares no fetched line with another. */
enum { SHARD_ALIGN = 128 };

/* size zeroed bytes on a SHARD_ALIGN boundary, for a struct holding shards
 * (or fields kept off others' lines), freed with free(); NULL when out of
 * memory. size is the struct's sizeof, which its alignas member makes a
 * multiple of the alignment, as aligned_alloc asks. */
static inline void *shard_calloc(size_t size)
{
	void *p = aligned_alloc(SHARD_ALIGN, size);

	if (p != NULL)
		memset(p, 0, size);
	return p;
}

static inline unsigned thread_slot(void)
{
	static atomic_uint next;
	static _Thread_local unsigned mine = UINT_MAX;

	if (mine == UINT_MAX)
		mine = atomic_fetch_add_explicit(&next, 1, memory_order_relaxed);
	return mine;
}

#endif
