/*
 * pool.c: a ring buffer of jobs under one mutex; workers wait on `nonempty`.
 *
 * Under the lock, `running` counts the workers inside a job and `lent` the
 * workers borrowed (pool.h). A worker starts a job only while
 * running + lent < size, and a borrower takes only what is left, so
 * running + lent <= size always holds.
 */
#include "pool.h"

#include <pthread.h>
#include <stdlib.h>

struct pool_job {
	pool_fn run;
	void *arg;
};

struct pool {
	pthread_mutex_t lock;
	pthread_cond_t nonempty; /* a job was queued or workers returned */
	struct pool_job *ring;   /* [capacity] */
	size_t capacity, head, count;
	size_t size;    /* workers asked for (all started once pool_new returns) */
	size_t running; /* workers inside a job */
	size_t lent;    /* workers borrowed, taking no job */
	int stopping;
	int sync_ready;	    /* lock and nonempty initialised */
	pthread_t *threads; /* [started] */
	size_t started;
};

/* A queued job can start now: one is queued and a worker is neither in a
 * job nor lent. Under the lock. */
static int can_start(const struct pool *p)
{
	return p->count > 0 && p->running + p->lent < p->size;
}

/* Ends the caller's last job (finished), then takes the next one, waiting
 * for one; returns 0 when stopping and empty. */
static int take(struct pool *p, struct pool_job *job, int finished)
{
	int got = 0;

	pthread_mutex_lock(&p->lock);
	if (finished)
		p->running--;
	while (!can_start(p) && !(p->stopping && p->count == 0))
		pthread_cond_wait(&p->nonempty, &p->lock);
	if (can_start(p)) {
		*job = p->ring[p->head];
		p->head = (p->head + 1) % p->capacity;
		p->count--;
		p->running++;
		got = 1;
	}
	pthread_mutex_unlock(&p->lock);
	return got;
}

static void *worker_main(void *arg)
{
	struct pool *p = arg;
	struct pool_job job;
	int finished = 0;

	while (take(p, &job, finished)) {
		job.run(job.arg);
		finished = 1;
	}
	return NULL;
}

/* Sets stopping, wakes and joins every started worker. */
static void stop_workers(struct pool *p)
{
	pthread_mutex_lock(&p->lock);
	p->stopping = 1;
	pthread_cond_broadcast(&p->nonempty);
	pthread_mutex_unlock(&p->lock);
	for (size_t i = 0; i < p->started; i++)
		pthread_join(p->threads[i], NULL);
	p->started = 0;
}

/* Frees p and whatever of it was set up (the workers must be joined). */
static void destroy(struct pool *p)
{
	if (p->sync_ready) {
		pthread_cond_destroy(&p->nonempty);
		pthread_mutex_destroy(&p->lock);
	}
	free(p->threads);
	free(p->ring);
	free(p);
}

struct pool *pool_new(size_t workers, size_t capacity)
{
	struct pool *p = calloc(1, sizeof *p);

	if (p == NULL)
		return NULL;
	if (workers == 0 || capacity == 0)
		goto fail;
	p->ring = calloc(capacity, sizeof *p->ring);
	p->threads = calloc(workers, sizeof *p->threads);
	p->capacity = capacity;
	p->size = workers;
	if (p->ring == NULL || p->threads == NULL)
		goto fail;
	if (pthread_mutex_init(&p->lock, NULL) != 0)
		goto fail;
	if (pthread_cond_init(&p->nonempty, NULL) != 0) {
		pthread_mutex_destroy(&p->lock);
		goto fail;
	}
	p->sync_ready = 1;
	for (; p->started < workers; p->started++) {
		if (pthread_create(&p->threads[p->started], NULL, worker_main, p) != 0)
			goto fail;
	}
	return p;
fail:
	if (p->sync_ready)
		stop_workers(p);
	destroy(p);
	return NULL;
}

int pool_submit(struct pool *p, pool_fn run, void *arg)
{
	int rc = -1;

	pthread_mutex_lock(&p->lock);
	if (!p->stopping && p->count < p->capacity) {
		p->ring[(p->head + p->count) % p->capacity] = (struct pool_job){run, arg};
		p->count++;
		rc = 0;
	}
	pthread_mutex_unlock(&p->lock);
	/* signalled after unlocking, so the woken worker does not block at once
	 * on the lock we still hold; safe: the job is in the ring, and a worker
	 * rechecks can_start under the lock before it waits. A woken worker
	 * that finds every other worker running or lent waits again: then no
	 * worker could start the job, and the first to end a job, or
	 * pool_return, starts it. */
	if (rc == 0)
		pthread_cond_signal(&p->nonempty);
	return rc;
}

size_t pool_evict(struct pool *p, int (*dead)(void *arg), void **out, size_t max)
{
	size_t n = 0, kept = 0;

	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->count; i++) {
		struct pool_job job = p->ring[(p->head + i) % p->capacity];

		if (n < max && dead(job.arg))
			out[n++] = job.arg;
		else
			p->ring[(p->head + kept++) % p->capacity] = job;
	}
	p->count = kept;
	if (n > 0) /* a stopping pool's workers wait for an empty queue */
		pthread_cond_broadcast(&p->nonempty);
	pthread_mutex_unlock(&p->lock);
	return n;
}

size_t pool_borrow_idle(struct pool *p, size_t max)
{
	size_t idle, n = 0;

	pthread_mutex_lock(&p->lock);
	if (!p->stopping && p->count == 0) {
		idle = p->size - p->running - p->lent;
		n = max < idle ? max : idle;
		p->lent += n;
	}
	pthread_mutex_unlock(&p->lock);
	return n;
}

void pool_return(struct pool *p, size_t n)
{
	if (n == 0)
		return;
	pthread_mutex_lock(&p->lock);
	p->lent -= n;
	pthread_mutex_unlock(&p->lock);
	/* every waiter: up to n of them may now start queued jobs */
	pthread_cond_broadcast(&p->nonempty);
}

size_t pool_idle(struct pool *p)
{
	size_t idle;

	pthread_mutex_lock(&p->lock);
	idle = p->size - p->running - p->lent;
	pthread_mutex_unlock(&p->lock);
	return idle;
}

void pool_free(struct pool *p)
{
	if (p == NULL)
		return;
	stop_workers(p);
	destroy(p);
}
