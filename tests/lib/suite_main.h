/*
 * suite_main.h: the one main of every Check suite (tests/<group>/check_*.c).
 * A suite's main is a single call:
 *
 *	int main(int argc, char **argv)
 *	{
 *		return suite_main(argc, argv, kernels_suite, NULL);
 *	}
 *
 * suite_main runs the suite in CK_NORMAL and returns EXIT_SUCCESS when every
 * test passed, EXIT_FAILURE otherwise (or when a step below fails). Whether
 * each test forks is Check's default: CK_FORK=no in the environment runs them
 * all in this process, as `make valgrind` does, so a leak anywhere counts.
 *
 * What a suite needs around its run it asks for in struct suite_main_opts
 * (NULL: nothing). The steps, in order:
 *
 *	1. one_blas_thread	openblas_set_num_threads(1)
 *	2. daemon		find attnd (live_find_attnd: $ATTND_BIN, else
 *				attnd beside build/tests/<group>/); fail at once,
 *				naming it, when it is not built; ignore SIGPIPE,
 *				as a daemon may close a connection first
 *	3. list_cases		list_cases(cases): the case files, listed before
 *				the suite is built, as its loop tests count them
 *	4. setup		non-zero: the suite does not run (setup has undone
 *				itself and said why on stderr)
 *	5. make, the run	the suite built and run
 *	6. after_run		given the runner before it is freed; non-zero
 *				fails the suite (after_run says why on stderr)
 *	7. teardown		when setup succeeded; then the case list released
 *
 * Ownership: suite_main owns the suite make returns and its runner; the
 * options and the case list they point at are the caller's (its static
 * storage, usually). Every name here starts with suite_main: the Makefile
 * links this file into every test binary. (Not check_main.c: the Makefile
 * takes every tests/<dir>/check_*.c for a suite of its own.)
 */
#ifndef ATTN_TESTS_SUITE_MAIN_H
#define ATTN_TESTS_SUITE_MAIN_H

#include <check.h>
#include <stdbool.h>

struct case_list;

/* Every field is optional: zero or NULL leaves its step out. */
struct suite_main_opts {
	/* BLAS single-threaded: the server's model, and reproducible sums. */
	bool one_blas_thread;
	/* The suite starts build/attnd. */
	bool daemon;
	/* list_cases(cases) fills the list before the run; released after it. */
	struct case_list *cases;
	void (*list_cases)(struct case_list *cases);
	/* 0, or non-zero when the suite cannot run. */
	int (*setup)(void);
	/* 0 when what the runner holds is right, else non-zero. */
	int (*after_run)(SRunner *runner);
	void (*teardown)(void);
};

/* The exit status of a suite's process: see above. opts may be NULL. */
int suite_main(int argc, char **argv, Suite *(*make)(void), const struct suite_main_opts *opts);

#endif
