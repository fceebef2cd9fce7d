/*
 * pool.c: a ring buffer of jobs under one mutex; workers wait on `nonempty`.
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
	pthread_cond_t nonempty;
	struct pool_job *ring; /* [capacity] */
	size_t capacity, head, count;
	int stopping;
	int sync_ready;	    /* lock and nonempty initialised */
	pthread_t *threads; /* [started] */
	size_t started;
};

/* Takes the next job, waiting for one; returns 0 when stopping and empty. */
static int take(struct pool *p, struct pool_job *job)
{
	int got = 0;

	pthread_mutex_lock(&p->lock);
	while (p->count == 0 && !p->stopping)
		pthread_cond_wait(&p->nonempty, &p->lock);
	if (p->count > 0) {
		*job = p->ring[p->head];
		p->head = (p->head + 1) % p->capacity;
		p->count--;
		got = 1;
	}
	pthread_mutex_unlock(&p->lock);
	return got;
}

static void *worker_main(void *arg)
{
	struct pool *p = arg;
	struct pool_job job;

	while (take(p, &job))
		job.run(job.arg);
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
	 * rechecks count under the lock before it waits */
	if (rc == 0)
		pthread_cond_signal(&p->nonempty);
	return rc;
}

void pool_free(struct pool *p)
{
	if (p == NULL)
		return;
	stop_workers(p);
	destroy(p);
}
