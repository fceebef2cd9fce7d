/*
 * check_watch.c: server/watch.c's deadlines, idle bounds and sockets
 * (watch.h), without a daemon: an entry fires WATCH_IDLE once its idle
 * seconds pass without a watch_touch, each touch starts that again, the
 * earlier of deadline and idle bound says why it fires, and an entry without
 * an idle bound (the compute requests') fires at its deadline only. Of
 * entries added on other threads (each on a list of its own), the one whose
 * socket's peer closes fires WATCH_CLIENT_GONE, the others never.
 *
 * The entries' on_fire records on the watcher's thread (atomics); the test's
 * thread asserts. Times are short (tenths of a second) with margins for the
 * watcher's tick and its first wake-up (WATCH_IDLE_MS).
 */
#include <check.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server/watch.h"

#include "tests/lib/suite_main.h"

/* What fired, on the watcher's thread. */
struct fired {
	struct watch_entry e; /* first: on_fire steps back to it */
	atomic_int why;
	_Atomic double at;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};

	nanosleep(&ts, NULL);
}

static void record(struct watch_entry *e, enum watch_reason why)
{
	struct fired *f = (struct fired *)(void *)((char *)e - offsetof(struct fired, e));

	atomic_store(&f->at, now());
	atomic_store(&f->why, (int)why);
}

static struct watch *start(void)
{
	char err[128];
	struct watch *w = watch_new(NULL, NULL, err, sizeof err);

	ck_assert_msg(w != NULL, "%s", err);
	return w;
}

/* Registers f with idle seconds and a deadline `deadline` seconds away (0:
 * none); returns when it was added. */
static double add(struct watch *w, struct fired *f, double idle, double deadline)
{
	double t0 = now();

	atomic_init(&f->why, WATCH_NONE);
	atomic_init(&f->at, 0.0);
	f->e.on_fire = record;
	f->e.idle = idle;
	watch_add(w, &f->e, -1, deadline > 0 ? t0 + deadline : 0);
	return t0;
}

/* Waits up to s seconds for f to fire; its reason (WATCH_NONE: it did not). */
static int wait_fired(struct fired *f, double s)
{
	double until = now() + s;

	while (atomic_load(&f->why) == WATCH_NONE && now() < until)
		sleep_s(0.005);
	return atomic_load(&f->why);
}

START_TEST(test_idle_fires_without_touch)
{
	struct watch *w = start();
	struct fired f;
	double t0 = add(w, &f, 0.3, 5.0);

	ck_assert_int_eq(wait_fired(&f, 2.0), WATCH_IDLE);
	ck_assert_msg(atomic_load(&f.at) - t0 >= 0.3, "fired after %.3f s",
		      atomic_load(&f.at) - t0);
	ck_assert_msg(atomic_load(&f.at) - t0 < 0.3 + 0.4, "fired after %.3f s",
		      atomic_load(&f.at) - t0);
	ck_assert_int_eq(atomic_load(&f.e.cancel), WATCH_IDLE);
	watch_remove(w, &f.e);
	watch_free(w);
}
END_TEST

START_TEST(test_touch_starts_idle_again)
{
	struct watch *w = start();
	struct fired f;
	double last;

	add(w, &f, 0.3, 5.0);
	for (int i = 0; i < 8; i++) { /* 0.8 s of touches 0.1 s apart */
		sleep_s(0.1);
		watch_touch(&f.e);
	}
	last = now();
	ck_assert_int_eq(atomic_load(&f.why), WATCH_NONE);
	ck_assert_int_eq(wait_fired(&f, 2.0), WATCH_IDLE);
	ck_assert_msg(atomic_load(&f.at) - last >= 0.29, "fired %.3f s after the last touch",
		      atomic_load(&f.at) - last);
	watch_remove(w, &f.e);
	watch_free(w);
}
END_TEST

START_TEST(test_deadline_before_idle)
{
	struct watch *w = start();
	struct fired f;
	double t0 = add(w, &f, 2.0, 0.3);

	ck_assert_int_eq(wait_fired(&f, 2.0), WATCH_DEADLINE);
	ck_assert_msg(atomic_load(&f.at) - t0 < 0.3 + 0.4, "fired after %.3f s",
		      atomic_load(&f.at) - t0);
	watch_remove(w, &f.e);
	watch_free(w);
}
END_TEST

START_TEST(test_no_idle_bound)
{
	struct watch *w = start();
	struct fired f;
	double t0 = add(w, &f, 0, 0.6);

	ck_assert_int_eq(wait_fired(&f, 2.0), WATCH_DEADLINE);
	ck_assert_msg(atomic_load(&f.at) - t0 >= 0.6, "fired after %.3f s",
		      atomic_load(&f.at) - t0);
	watch_remove(w, &f.e);
	watch_free(w);
}
END_TEST

/* One entry to add on a thread of its own (so on a list of its own). */
struct adder {
	struct watch *w;
	struct fired *f;
	int fd;
};

static void *add_on_thread(void *arg)
{
	struct adder *a = arg;

	atomic_init(&a->f->why, WATCH_NONE);
	a->f->e.on_fire = record;
	a->f->e.idle = 0;
	watch_add(a->w, &a->f->e, a->fd, 0);
	return NULL;
}

static void add_from_thread(struct watch *w, struct fired *f, int fd)
{
	struct adder a = {w, f, fd};
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, add_on_thread, &a), 0);
	pthread_join(t, NULL);
}

/* Entries added on other threads (each on its own list): the one whose
 * socket's peer closes fires WATCH_CLIENT_GONE, the others never fire, and
 * this thread removes them all. */
START_TEST(test_hangup_across_threads)
{
	struct watch *w = start();
	struct fired quiet[3], gone;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	for (int i = 0; i < 3; i++)
		add_from_thread(w, &quiet[i], -1);
	add_from_thread(w, &gone, sv[0]);
	sleep_s(0.05);
	ck_assert_int_eq(atomic_load(&gone.why), WATCH_NONE);
	close(sv[1]);
	ck_assert_int_eq(wait_fired(&gone, 2.0), WATCH_CLIENT_GONE);
	ck_assert_int_eq(atomic_load(&gone.e.cancel), WATCH_CLIENT_GONE);
	watch_remove(w, &gone.e);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(atomic_load(&quiet[i].why), WATCH_NONE);
		watch_remove(w, &quiet[i].e);
	}
	close(sv[0]);
	watch_free(w);
}
END_TEST

/* The fired hook's context, which the test frees once watch_stop_fired has
 * returned (as server/main.c frees the pool the transport's hook uses). */
struct hook_ctx {
	atomic_int calls;
	atomic_int inside; /* a call in progress */
};

static void slow_hook(void *arg)
{
	struct hook_ctx *c = arg;

	atomic_store(&c->inside, 1);
	atomic_fetch_add(&c->calls, 1);
	sleep_s(0.2);
	atomic_store(&c->inside, 0);
}

/* watch_stop_fired waits for a hook in progress and no call follows it:
 * the hook's context can be freed before the watcher is. */
START_TEST(test_stop_fired_waits_for_the_hook)
{
	char err[128];
	struct hook_ctx *c = calloc(1, sizeof *c);
	struct fired f1, f2;
	struct watch *w;
	double until;

	ck_assert_ptr_nonnull(c);
	w = watch_new(slow_hook, c, err, sizeof err);
	ck_assert_msg(w != NULL, "%s", err);
	add(w, &f1, 0, 0.01);
	until = now() + 5;
	while (atomic_load(&c->inside) == 0 && now() < until)
		sleep_s(0.001);
	ck_assert_msg(atomic_load(&c->inside) == 1, "the hook never ran for a fired entry");
	watch_stop_fired(w);
	ck_assert_msg(atomic_load(&c->inside) == 0, "watch_stop_fired returned within the hook");
	ck_assert_int_eq(atomic_load(&c->calls), 1);
	free(c); /* what the hook used: gone, as main.c's pool */
	add(w, &f2, 0, 0.01);
	ck_assert_int_eq(wait_fired(&f2, 2), WATCH_DEADLINE);
	sleep_s(0.1); /* rounds after the firing one: no hook (TSan, ASan: free) */
	watch_remove(w, &f1.e);
	watch_remove(w, &f2.e);
	watch_free(w);
}
END_TEST

static Suite *watch_suite(void)
{
	Suite *s = suite_create("watch");
	TCase *tc = tcase_create("idle");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_idle_fires_without_touch);
	tcase_add_test(tc, test_touch_starts_idle_again);
	tcase_add_test(tc, test_deadline_before_idle);
	tcase_add_test(tc, test_no_idle_bound);
	tcase_add_test(tc, test_hangup_across_threads);
	tcase_add_test(tc, test_stop_fired_waits_for_the_hook);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, watch_suite, NULL);
}
