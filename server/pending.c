/* pending.c: the budget of queued answer bytes; see pending.h. */
#include "pending.h"

void pending_init(struct pending *p, size_t max)
{
	atomic_init(&p->held, 0);
	p->max = max;
}

int pending_take(struct pending *p, size_t n)
{
	size_t held = atomic_load(&p->held);

	do {
		if (n > p->max || held > p->max - n)
			return -1;
	} while (!atomic_compare_exchange_weak(&p->held, &held, held + n));
	return 0;
}

void pending_give(struct pending *p, size_t n)
{
	atomic_fetch_sub(&p->held, n);
}

size_t pending_held(struct pending *p)
{
	return atomic_load(&p->held);
}
