/*
 * check_pool.c: server/pool.c's lending of idle workers (pool.h), without a
 * daemon: a borrower gets the idle workers only, a lent worker takes no job
 * until it is returned, and under a storm of borrowing jobs the workers in a
 * job plus the workers lent never exceed the pool's size; pool_evict takes
 * jobs out of the queue and keeps the others' order.
 *
 * Jobs report through one struct probe (a mutex, a condition and counters),
 * and the test waits on those counters, each wait bounded by WAIT_S. Jobs
 * run on the pool's threads, so they only record; the test's own thread
 * asserts (Check's failures do not cross threads).
 */
#include <check.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "server/pool.h"

#include "tests/lib/suite_main.h"

enum { WAIT_S = 30 };

/* What the jobs of a test tell it. */
struct probe {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	int started, finished; /* jobs */
	int gate_open;         /* gated jobs may finish */
	size_t borrowed;       /* what the last borrower got */
	int late_started;      /* the queued job of test_lent_worker_takes_no_job ran */
	int late_early;        /* ... and had started while its worker was lent */
	int late_refused;      /* ... or could not be queued */
	struct pool *pool;
};

static void probe_init(struct probe *pr)
{
	pthread_mutex_init(&pr->lock, NULL);
	pthread_cond_init(&pr->changed, NULL);
	pr->started = pr->finished = pr->gate_open = 0;
	pr->late_started = pr->late_early = pr->late_refused = 0;
	pr->borrowed = 0;
	pr->pool = NULL;
}

static void probe_release(struct probe *pr)
{
	pthread_cond_destroy(&pr->changed);
	pthread_mutex_destroy(&pr->lock);
}

static struct timespec deadline_in(double seconds)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)seconds;
	ts.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

/* Waits, holding pr->lock, until *counter >= want or `seconds` pass; 1 when
 * it got there. */
static int wait_locked(struct probe *pr, const int *counter, int want, double seconds)
{
	struct timespec until = deadline_in(seconds);

	while (*counter < want) {
		if (pthread_cond_timedwait(&pr->changed, &pr->lock, &until) == ETIMEDOUT)
			return *counter >= want;
	}
	return 1;
}

static int wait_for(struct probe *pr, const int *counter, int want, double seconds)
{
	int got;

	pthread_mutex_lock(&pr->lock);
	got = wait_locked(pr, counter, want, seconds);
	pthread_mutex_unlock(&pr->lock);
	return got;
}

/* Waits until every worker of p is idle again: a job's worker counts
 * itself idle only after the job has returned, so a job's own report comes
 * a little before. */
static int wait_all_idle(struct pool *p, size_t workers)
{
	const struct timespec pause = {0, 100 * 1000};

	for (long i = 0; i < (long)WAIT_S * 10000; i++) {
		if (pool_idle(p) == workers)
			return 1;
		nanosleep(&pause, NULL);
	}
	return 0;
}

static void bump(struct probe *pr, int *counter)
{
	pthread_mutex_lock(&pr->lock);
	(*counter)++;
	pthread_cond_broadcast(&pr->changed);
	pthread_mutex_unlock(&pr->lock);
}

static void open_gate(struct probe *pr)
{
	bump(pr, &pr->gate_open);
}

/* A job that starts, waits for the gate, and finishes. */
static void gated_job(void *arg)
{
	struct probe *pr = arg;

	bump(pr, &pr->started);
	pthread_mutex_lock(&pr->lock);
	wait_locked(pr, &pr->gate_open, 1, WAIT_S); /* the test fails on its own wait */
	pthread_mutex_unlock(&pr->lock);
	bump(pr, &pr->finished);
}

/* A job that borrows all it can, notes how many, and gives them back. */
static void borrow_job(void *arg)
{
	struct probe *pr = arg;
	size_t n = pool_borrow_idle(pr->pool, 8);

	pthread_mutex_lock(&pr->lock);
	pr->borrowed = n;
	pthread_mutex_unlock(&pr->lock);
	pool_return(pr->pool, n);
	bump(pr, &pr->finished);
}

/* Three workers, one held in a gated job: a borrower, on the second, gets
 * the third and only it. */
START_TEST(test_borrow_takes_only_idle_workers)
{
	struct probe pr;

	probe_init(&pr);
	pr.pool = pool_new(3, 4);
	ck_assert_ptr_nonnull(pr.pool);
	ck_assert_int_eq(pool_submit(pr.pool, gated_job, &pr), 0);
	ck_assert(wait_for(&pr, &pr.started, 1, WAIT_S));
	ck_assert_int_eq(pool_submit(pr.pool, borrow_job, &pr), 0);
	ck_assert(wait_for(&pr, &pr.finished, 1, WAIT_S));
	ck_assert_uint_eq(pr.borrowed, 1);
	open_gate(&pr);
	ck_assert(wait_for(&pr, &pr.finished, 2, WAIT_S));
	/* with every worker idle again, a borrower gets the other two */
	ck_assert(wait_all_idle(pr.pool, 3));
	ck_assert_int_eq(pool_submit(pr.pool, borrow_job, &pr), 0);
	ck_assert(wait_for(&pr, &pr.finished, 3, WAIT_S));
	ck_assert_uint_eq(pr.borrowed, 2);
	pool_free(pr.pool);
	probe_release(&pr);
}
END_TEST

static void late_job(void *arg)
{
	struct probe *pr = arg;

	bump(pr, &pr->late_started);
}

/* A job that borrows the other worker, queues late_job, and looks whether
 * it starts before the worker is returned. */
static void lender_job(void *arg)
{
	struct probe *pr = arg;
	size_t n = pool_borrow_idle(pr->pool, 8);

	pthread_mutex_lock(&pr->lock);
	pr->borrowed = n;
	pthread_mutex_unlock(&pr->lock);
	if (pool_submit(pr->pool, late_job, pr) != 0) {
		bump(pr, &pr->late_refused);
	} else {
		/* a negative: with the worker lent, late_job must not start. A
		 * wrong pool starts it within microseconds; the bound only ends
		 * the look */
		pthread_mutex_lock(&pr->lock);
		pr->late_early = wait_locked(pr, &pr->late_started, 1, 0.2);
		pthread_mutex_unlock(&pr->lock);
	}
	pool_return(pr->pool, n);
	bump(pr, &pr->finished);
}

/* Two workers: the lender keeps the other one from taking a queued job,
 * which starts once the worker is back. */
START_TEST(test_lent_worker_takes_no_job)
{
	struct probe pr;

	probe_init(&pr);
	pr.pool = pool_new(2, 4);
	ck_assert_ptr_nonnull(pr.pool);
	ck_assert_int_eq(pool_submit(pr.pool, lender_job, &pr), 0);
	ck_assert(wait_for(&pr, &pr.finished, 1, WAIT_S));
	ck_assert_uint_eq(pr.borrowed, 1);
	ck_assert_int_eq(pr.late_refused, 0);
	ck_assert_msg(!pr.late_early, "a queued job started on a lent worker");
	ck_assert(wait_for(&pr, &pr.late_started, 1, WAIT_S));
	pool_free(pr.pool);
	probe_release(&pr);
}
END_TEST

/* ---- the storm -------------------------------------------------------------- */

enum { STORM_WORKERS = 4, STORM_JOBS = 3000 };

struct storm {
	struct pool *pool;
	atomic_int in_use;   /* workers in a job plus workers they borrowed */
	atomic_int peak;     /* the most in_use ever seen */
	atomic_int borrowed; /* jobs that got at least one worker */
	atomic_int done;
	atomic_uint seed;
};

static void note_use(struct storm *s, int delta)
{
	int now = atomic_fetch_add(&s->in_use, delta) + delta;
	int peak = atomic_load(&s->peak);

	while (now > peak && !atomic_compare_exchange_weak(&s->peak, &peak, now))
		;
}

/* Counts itself in, borrows 0 .. 3 workers (counted in before use and out
 * before they go back, so in_use never runs ahead of the pool's own count),
 * spins a little, and counts everything out. */
static void storm_job(void *arg)
{
	struct storm *s = arg;
	unsigned r = atomic_fetch_add(&s->seed, 2654435761u);
	size_t n;
	volatile unsigned sink = 0;

	note_use(s, 1);
	n = pool_borrow_idle(s->pool, (r >> 7) % 4);
	note_use(s, (int)n);
	if (n > 0)
		atomic_fetch_add(&s->borrowed, 1);
	for (unsigned i = 0; i < (r >> 11) % 2000; i++)
		sink += i;
	note_use(s, -(int)n);
	pool_return(s->pool, n);
	note_use(s, -1);
	atomic_fetch_add(&s->done, 1);
}

/* Many jobs, each borrowing what it can: the workers at work never exceed
 * the pool's size, and every job runs. (Run under SANITIZE=thread too.) */
START_TEST(test_storm_never_exceeds_workers)
{
	struct storm s;
	const struct timespec pause = {0, 100 * 1000};
	int done, in_use, peak, borrowed;

	atomic_init(&s.in_use, 0);
	atomic_init(&s.peak, 0);
	atomic_init(&s.borrowed, 0);
	atomic_init(&s.done, 0);
	atomic_init(&s.seed, 12345u);
	s.pool = pool_new(STORM_WORKERS, 8);
	ck_assert_ptr_nonnull(s.pool);
	for (int j = 0; j < STORM_JOBS; j++) {
		/* a full queue refuses: let the workers drain it, then retry */
		while (pool_submit(s.pool, storm_job, &s) != 0)
			sched_yield();
		/* every so often let the queue run dry, so that borrowers find
		 * idle workers and not only a queue (Check's timeout bounds it) */
		while (j % 16 == 15 && atomic_load(&s.done) < j + 1)
			nanosleep(&pause, NULL);
	}
	while (atomic_load(&s.done) < STORM_JOBS)
		nanosleep(&pause, NULL);
	/* nothing stays counted as running or lent */
	ck_assert(wait_all_idle(s.pool, STORM_WORKERS));
	pool_free(s.pool);
	done = atomic_load(&s.done);
	in_use = atomic_load(&s.in_use);
	peak = atomic_load(&s.peak);
	borrowed = atomic_load(&s.borrowed);
	ck_assert_int_eq(done, STORM_JOBS);
	ck_assert_int_eq(in_use, 0);
	ck_assert_msg(peak <= STORM_WORKERS, "%d workers at work in a pool of %d", peak,
		      STORM_WORKERS);
	ck_assert_int_gt(borrowed, 0);
}
END_TEST

/* Borrowing nothing, or returning nothing, changes nothing. */
static void zero_job(void *arg)
{
	struct probe *pr = arg;
	size_t n = pool_borrow_idle(pr->pool, 0);

	pool_return(pr->pool, 0);
	pthread_mutex_lock(&pr->lock);
	pr->borrowed = n;
	pthread_mutex_unlock(&pr->lock);
	bump(pr, &pr->finished);
}

START_TEST(test_zero_is_a_no_op)
{
	struct probe pr;

	probe_init(&pr);
	pr.pool = pool_new(2, 2);
	ck_assert_ptr_nonnull(pr.pool);
	ck_assert_int_eq(pool_submit(pr.pool, zero_job, &pr), 0);
	ck_assert(wait_for(&pr, &pr.finished, 1, WAIT_S));
	ck_assert_uint_eq(pr.borrowed, 0);
	ck_assert(wait_all_idle(pr.pool, 2));
	ck_assert_int_eq(pool_submit(pr.pool, borrow_job, &pr), 0);
	ck_assert(wait_for(&pr, &pr.finished, 2, WAIT_S));
	ck_assert_uint_eq(pr.borrowed, 1);
	pool_free(pr.pool);
	probe_release(&pr);
}
END_TEST

/* A queued job of test_evict_keeps_order: its tag, and the order it ran. */
struct tagged {
	struct probe *pr;
	int tag;
};

static int ran_order[8], n_ran;

static void tagged_job(void *arg)
{
	struct tagged *t = arg;

	pthread_mutex_lock(&t->pr->lock);
	ran_order[n_ran++] = t->tag;
	pthread_mutex_unlock(&t->pr->lock);
	bump(t->pr, &t->pr->finished);
}

static int odd_tag(void *arg)
{
	return ((const struct tagged *)arg)->tag % 2 != 0;
}

/* One worker held in a gated job, a full queue of tags 0..3: evicting the
 * odd ones hands back 1 and 3 (oldest first), never runs them, and makes
 * room; the rest run in the order they were queued. */
START_TEST(test_evict_keeps_order)
{
	struct probe pr;
	struct tagged t[5];
	void *gone[4];

	probe_init(&pr);
	n_ran = 0;
	pr.pool = pool_new(1, 4);
	ck_assert_ptr_nonnull(pr.pool);
	ck_assert_int_eq(pool_submit(pr.pool, gated_job, &pr), 0);
	ck_assert(wait_for(&pr, &pr.started, 1, WAIT_S));
	for (int i = 0; i < 5; i++)
		t[i] = (struct tagged){&pr, i};
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pool_submit(pr.pool, tagged_job, &t[i]), 0);
	ck_assert_int_ne(pool_submit(pr.pool, tagged_job, &t[4]), 0); /* full */
	ck_assert_uint_eq(pool_evict(pr.pool, odd_tag, gone, 4), 2);
	ck_assert_ptr_eq(gone[0], &t[1]);
	ck_assert_ptr_eq(gone[1], &t[3]);
	ck_assert_int_eq(pool_submit(pr.pool, tagged_job, &t[4]), 0);
	open_gate(&pr);
	ck_assert(wait_for(&pr, &pr.finished, 4, WAIT_S)); /* the gated job and three */
	ck_assert(wait_all_idle(pr.pool, 1));
	pthread_mutex_lock(&pr.lock);
	ck_assert_int_eq(n_ran, 3);
	ck_assert_int_eq(ran_order[0], 0);
	ck_assert_int_eq(ran_order[1], 2);
	ck_assert_int_eq(ran_order[2], 4);
	pthread_mutex_unlock(&pr.lock);
	pool_free(pr.pool);
	probe_release(&pr);
}
END_TEST

static Suite *pool_suite(void)
{
	Suite *s = suite_create("pool");
	TCase *tc = tcase_create("lending");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_borrow_takes_only_idle_workers);
	tcase_add_test(tc, test_lent_worker_takes_no_job);
	tcase_add_test(tc, test_storm_never_exceeds_workers);
	tcase_add_test(tc, test_zero_is_a_no_op);
	tcase_add_test(tc, test_evict_keeps_order);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, pool_suite, NULL);
}
