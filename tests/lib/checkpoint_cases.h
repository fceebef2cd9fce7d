/*
 * checkpoint_cases.h: the oracle's checkpoint folders (tests/data/checkpoints/,
 * each with an expected.json; README there), for the suites that run them
 * through the daemon: listed in name order, their answers parsed, and one
 * daemon that serves every folder as a model named after it.
 *
 * Ownership: a struct ckpt_cases owns its parsed answers
 * (ckpt_cases_release); ckpt_suite and ckpt_daemon are this file's, made
 * and released by the ckpt_suite_ functions. Run from the repository root.
 */
#ifndef ATTN_TESTS_CHECKPOINT_CASES_H
#define ATTN_TESTS_CHECKPOINT_CASES_H

#include <jansson.h>
#include <stddef.h>

#include "tests/lib/live_daemon.h"

#define CKPT_ROOT "tests/data/checkpoints"

enum { CKPT_MAX_CASES = 32 };

struct ckpt_cases {
	char name[CKPT_MAX_CASES][64];
	json_t *expected[CKPT_MAX_CASES];
	size_t n;
};

/* Lists and parses the folders into c (zeroed first): 0, or -1 with the
 * reason on stderr (no folder, an expected.json that does not parse). */
int ckpt_cases_load(struct ckpt_cases *c);

void ckpt_cases_release(struct ckpt_cases *c);

/* Whether folder `name` holds `file`. */
int ckpt_case_has(const char *name, const char *file);

/* Starts d serving every folder of c (--model NAME=DIR each). */
void ckpt_cases_start(const struct ckpt_cases *c, struct live_daemon *d);

/*
 * What a suite that runs every folder through the daemon shares: its one
 * case list (ckpt_suite_load as suite_main's setup, ckpt_suite_release as
 * its teardown) and the daemon serving them (ckpt_suite_start and
 * ckpt_suite_stop, a test case's unchecked fixture). Each test binary has
 * its own.
 */
extern struct ckpt_cases ckpt_suite;
extern struct live_daemon ckpt_daemon;

int ckpt_suite_load(void);
void ckpt_suite_release(void);
void ckpt_suite_start(void);
void ckpt_suite_stop(void);

#endif
