/* split.c: idle workers lent to a large engine call (see split.h). */
#include "split.h"

#include "engine/workers.h"
#include "metrics.h"
#include "pool.h"

/* A call with at least this much work (FLOPs, as --max-request-gflop counts
 * them: about 0.1 ms of one core) is large enough to borrow idle workers
 * for; below it, waking them costs more than they give. */
#define SPLIT_MIN_WORK 1e7

/* api_lender.lend: the cores of the idle workers, for a large call, when
 * nothing is queued (pool_borrow_idle). */
static size_t lend(void *ctx, double work, struct attn_workers **workers)
{
	struct split_lease *lease = ctx;
	const struct split_policy *p = lease->policy;
	size_t lent;

	if (p->threads < 2 || work < SPLIT_MIN_WORK || lease->lent > 0)
		return 0;
	lent = pool_borrow_idle(p->pool, p->threads - 1);
	if (lent == 0)
		return 0;
	lease->lent = lent;
	/* the kept threads serve a call of their whole width; a narrower one
	 * starts threads of its own rather than wake kept ones to sit out */
	if (p->workers != NULL && attn_workers_threads(p->workers) == 1 + lent)
		*workers = p->workers;
	metrics_split(p->metrics, lent);
	return 1 + lent;
}

/* api_lender.give_back: the lent workers go back to the pool at once, so a
 * queued job may start while this call encodes its answer. */
static void give_back(void *ctx)
{
	struct split_lease *lease = ctx;

	pool_return(lease->policy->pool, lease->lent);
	lease->lent = 0;
}

void split_lease_init(struct split_lease *lease, const struct split_policy *policy)
{
	lease->policy = policy;
	lease->lent = 0;
	lease->lender.lend = lend;
	lease->lender.give_back = give_back;
	lease->lender.ctx = lease;
}

void split_lease_end(struct split_lease *lease)
{
	if (lease->lent > 0)
		give_back(lease);
}
