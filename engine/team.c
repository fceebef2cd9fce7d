/*
 * team.c: fork-join threads and a generation-counting barrier on one mutex.
 * The team lives on team_run's stack; workers wait for `go` so that the final
 * thread count is known before anyone uses the barrier.
 *
 * A thread that reaches the barrier early spins on the generation for up to
 * SPIN_ROUNDS pauses (some 50 us) before it sleeps on the condition variable:
 * the phases it separates are balanced, so the others are usually
 * microseconds away, and a futex sleep and wake-up costs tens of them. The
 * last thread publishes the new generation with release order after taking
 * the mutex every other thread released on arrival, so a thread that sees it
 * (acquire) sees everything written before the barrier.
 */
#include "team.h"

#include <pthread.h>
#include <stdatomic.h>

enum { SPIN_ROUNDS = 2000 };

struct team {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	size_t T;          /* threads taking part, fixed once go is set */
	int go;
	size_t waiting;    /* threads at the barrier in this generation */
	atomic_size_t generation;
	team_fn fn;
	void *arg;
};

struct team_member {
	struct team *team;
	size_t t;
	pthread_t thread;
};

static void cpu_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* Whether generation gen has ended, spinning up to SPIN_ROUNDS pauses. */
static int ended_while_spinning(struct team *team, size_t gen)
{
	for (int i = 0; i < SPIN_ROUNDS; i++) {
		if (atomic_load_explicit(&team->generation, memory_order_acquire) != gen)
			return 1;
		cpu_pause();
	}
	return 0;
}

void team_barrier(struct team *team)
{
	size_t gen;

	if (team->T <= 1)
		return;
	pthread_mutex_lock(&team->lock);
	gen = atomic_load_explicit(&team->generation, memory_order_relaxed);
	if (++team->waiting == team->T) {
		team->waiting = 0;
		atomic_store_explicit(&team->generation, gen + 1, memory_order_release);
		pthread_cond_broadcast(&team->cond);
		pthread_mutex_unlock(&team->lock);
		return;
	}
	pthread_mutex_unlock(&team->lock);
	if (ended_while_spinning(team, gen))
		return;
	pthread_mutex_lock(&team->lock);
	while (atomic_load_explicit(&team->generation, memory_order_acquire) == gen)
		pthread_cond_wait(&team->cond, &team->lock);
	pthread_mutex_unlock(&team->lock);
}

static void *member_main(void *p)
{
	struct team_member *me = p;
	struct team *team = me->team;

	pthread_mutex_lock(&team->lock);
	while (!team->go)
		pthread_cond_wait(&team->cond, &team->lock);
	pthread_mutex_unlock(&team->lock);
	if (me->t < team->T)
		team->fn(team->arg, me->t, team->T, team);
	return NULL;
}

void team_run(size_t threads, team_fn fn, void *arg)
{
	struct team team = { .fn = fn, .arg = arg };
	struct team_member members[TEAM_MAX];
	size_t want = threads < 1 ? 1 : threads > TEAM_MAX ? TEAM_MAX : threads, started = 1;

	if (want == 1) {
		team.T = 1;
		fn(arg, 0, 1, &team);
		return;
	}
	pthread_mutex_init(&team.lock, NULL);
	pthread_cond_init(&team.cond, NULL);
	for (; started < want; started++) {
		members[started].team = &team;
		members[started].t = started;
		if (pthread_create(&members[started].thread, NULL, member_main,
				   &members[started]) != 0)
			break;
	}
	pthread_mutex_lock(&team.lock);
	team.T = started;
	team.go = 1;
	pthread_cond_broadcast(&team.cond);
	pthread_mutex_unlock(&team.lock);
	fn(arg, 0, team.T, &team);
	for (size_t t = 1; t < started; t++)
		pthread_join(members[t].thread, NULL);
	pthread_cond_destroy(&team.cond);
	pthread_mutex_destroy(&team.lock);
}

void team_share(size_t n, size_t t, size_t T, size_t *r0, size_t *r1)
{
	size_t base = n / T, extra = n % T;

	*r0 = t * base + (t < extra ? t : extra);
	*r1 = *r0 + base + (t < extra ? 1 : 0);
}
