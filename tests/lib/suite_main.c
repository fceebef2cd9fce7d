/* suite_main.c: the one main of every Check suite (see suite_main.h). */
#include "suite_main.h"

#include <cblas.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "case_files.h"
#include "live_daemon.h"

static const struct suite_main_opts suite_main_none;

/* Step 2: attnd found and built, SIGPIPE ignored; -1 (said on stderr) when it is not built. */
static int suite_main_daemon(const char *argv0)
{
	live_find_attnd(argv0);
	if (access(live_attnd(), X_OK) != 0) {
		fprintf(stderr, "%s: %s is not built (make %s)\n", argv0, live_attnd(),
			live_attnd());
		return -1;
	}
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/* Steps 5 and 6: the suite run; the number of its failures, plus one when after_run fails. */
static int suite_main_run(Suite *(*make)(void), const struct suite_main_opts *o)
{
	SRunner *runner = srunner_create(make());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	if (o->after_run != NULL && o->after_run(runner) != 0)
		failed++;
	srunner_free(runner);
	return failed;
}

int suite_main(int argc, char **argv, Suite *(*make)(void), const struct suite_main_opts *opts)
{
	const struct suite_main_opts *o = opts != NULL ? opts : &suite_main_none;
	const char *argv0 = argc > 0 ? argv[0] : "check";
	int failed;

	if (o->one_blas_thread)
		openblas_set_num_threads(1);
	if (o->daemon && suite_main_daemon(argv0) != 0)
		return EXIT_FAILURE;
	if (o->list_cases != NULL)
		o->list_cases(o->cases);
	if (o->setup != NULL && o->setup() != 0) {
		failed = 1;
		goto out;
	}
	failed = suite_main_run(make, o);
	if (o->teardown != NULL)
		o->teardown();
out:
	if (o->list_cases != NULL)
		case_list_release(o->cases);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
