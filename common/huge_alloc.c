/* huge_alloc.c: large buffers on 2 MiB pages (see huge_alloc.h). */
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE */
#include "huge_alloc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { HUGE_PAGE = 2 << 20 };

void *huge_alloc(size_t bytes)
{
	void *p = NULL;

	if (bytes < HUGE_ALLOC_MIN)
		return malloc(bytes ? bytes : 1);
	if (posix_memalign(&p, HUGE_PAGE, bytes) != 0)
		return NULL;
#ifdef MADV_HUGEPAGE
	(void)madvise(p, bytes, MADV_HUGEPAGE); /* a hint: refused, the pages stay 4 KiB */
#endif
	return p;
}

int huge_pages_mode(const char *text)
{
	return strstr(text, "[always]") != NULL || strstr(text, "[madvise]") != NULL;
}
