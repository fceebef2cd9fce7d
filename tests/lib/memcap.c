/* memcap.c: a test's cap on its own address space (see memcap.h). */
#include "tests/lib/memcap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if !defined(__SANITIZE_ADDRESS__)
/* The pages the process maps now, from /proc/self/statm; 0 when unknown. */
static unsigned long mapped_pages(void)
{
	unsigned long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f == NULL)
		return 0;
	if (fscanf(f, "%lu", &pages) != 1)
		pages = 0;
	fclose(f);
	return pages;
}

/* memcap_begin's work, where the process may be capped. */
static int cap_now(struct memcap *c, size_t extra)
{
	const char *preload = getenv("LD_PRELOAD");
	unsigned long pages;
	struct rlimit cap;

	if (preload != NULL && strstr(preload, "valgrind") != NULL)
		return 0;
	pages = mapped_pages();
	if (pages == 0 || getrlimit(RLIMIT_AS, &c->saved) != 0)
		return 0;
	cap = c->saved;
	cap.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (rlim_t)extra;
	if (c->saved.rlim_cur != RLIM_INFINITY && cap.rlim_cur > c->saved.rlim_cur)
		return 0;
	if (setrlimit(RLIMIT_AS, &cap) != 0)
		return 0;
	c->on = 1;
	return 1;
}
#endif

int memcap_begin(struct memcap *c, size_t extra)
{
	c->on = 0;
#if defined(__SANITIZE_ADDRESS__)
	(void)extra; /* ASan reserves terabytes of shadow: no cap fits it */
	return 0;
#else
	return cap_now(c, extra);
#endif
}

void memcap_end(struct memcap *c)
{
	if (c->on)
		setrlimit(RLIMIT_AS, &c->saved);
	c->on = 0;
}
