/*
 * calloc.c: the daemon's calloc, so that small zeroed blocks come from
 * glibc's per-thread cache as malloc's do.
 *
 * glibc before 2.41 (Debian 12 has 2.36) sends every calloc through the
 * arena: its lock, _int_malloc, and no tcache, while free puts the block in
 * the tcache, which calloc then never takes from; the tcache fills, later
 * frees fall through to the fastbins, and a large request consolidates them.
 * The four-word request makes about 13 small callocs (libmicrohttpd's for
 * each answer header, jansson's, ours), which made calloc and free together
 * about 8k of its 70k instructions (bench/README.md, "calloc through the
 * thread cache").
 *
 * A block of at most SMALL_CALLOC bytes is malloc'd and cleared here: the
 * tcache serves it in a few dozen instructions. A larger one goes to glibc's
 * own calloc, which skips clearing pages fresh from mmap (zero already), so
 * a large zeroed buffer still costs no page it does not touch.
 *
 * Defined in the executable, this calloc is the one every shared library the
 * daemon loads calls too. It is left out of sanitizer builds (the Makefile's
 * OWN_CALLOC), whose runtimes bring their own, and must be for an allocator
 * preloaded at run time (jemalloc, glibc's libc_malloc_debug.so): its blocks
 * come from glibc's heap, which that allocator's free does not know.
 *
 * __libc_malloc and __libc_calloc are glibc's exported entry points to its
 * allocator (valgrind replaces them, and this calloc, as it does malloc);
 * calling __libc_malloc rather than malloc also keeps the compiler from
 * fusing malloc and memset back into a call to calloc, that is, this one.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "engine/sizes.h"

/* tcache's largest block on 64-bit glibc is 1032 bytes; a little under it */
#define SMALL_CALLOC 1024

void *__libc_malloc(size_t bytes);
void *__libc_calloc(size_t count, size_t size);
void *calloc(size_t count, size_t size);

void *calloc(size_t count, size_t size)
{
	size_t bytes;
	void *p;

	if (size_mul(&bytes, count, size) != 0) {
		errno = ENOMEM;
		return NULL;
	}
	if (bytes > SMALL_CALLOC)
		return __libc_calloc(count, size);
	p = __libc_malloc(bytes);
	if (p != NULL)
		memset(p, 0, bytes);
	return p;
}
