/* checkpoint_cases.c: the oracle's checkpoint folders (see checkpoint_cases.h). */
#include "tests/lib/checkpoint_cases.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int ckpt_case_has(const char *name, const char *file)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof path, CKPT_ROOT "/%s/%s", name, file);
	return stat(path, &st) == 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(a, b);
}

static int list_cases(struct ckpt_cases *c)
{
	DIR *d = opendir(CKPT_ROOT);
	struct dirent *e;

	if (d == NULL) {
		fprintf(stderr, "cannot open " CKPT_ROOT "\n");
		return -1;
	}
	while ((e = readdir(d)) != NULL && c->n < CKPT_MAX_CASES) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof c->name[0] ||
		    !ckpt_case_has(e->d_name, "expected.json"))
			continue;
		snprintf(c->name[c->n++], sizeof c->name[0], "%s", e->d_name);
	}
	closedir(d);
	qsort(c->name, c->n, sizeof c->name[0], cmp_names);
	return c->n > 0 ? 0 : -1;
}

int ckpt_cases_load(struct ckpt_cases *c)
{
	memset(c, 0, sizeof(*c));
	if (list_cases(c) != 0)
		return -1;
	for (size_t i = 0; i < c->n; i++) {
		char path[512];
		json_error_t jerr;

		snprintf(path, sizeof path, CKPT_ROOT "/%s/expected.json", c->name[i]);
		c->expected[i] = json_load_file(path, 0, &jerr);
		if (c->expected[i] == NULL) {
			fprintf(stderr, "%s:%d: %s\n", path, jerr.line, jerr.text);
			return -1;
		}
	}
	return 0;
}

void ckpt_cases_release(struct ckpt_cases *c)
{
	for (size_t i = 0; i < c->n; i++)
		json_decref(c->expected[i]);
	memset(c, 0, sizeof(*c));
}

void ckpt_cases_start(const struct ckpt_cases *c, struct live_daemon *d)
{
	static char specs[CKPT_MAX_CASES][256];
	const char *args[CKPT_MAX_CASES * 2 + 1];
	size_t n = 0;

	for (size_t i = 0; i < c->n; i++) {
		snprintf(specs[i], sizeof specs[i], "%s=" CKPT_ROOT "/%s", c->name[i], c->name[i]);
		args[n++] = "--model";
		args[n++] = specs[i];
	}
	args[n] = NULL;
	live_start(d, args);
}

struct ckpt_cases ckpt_suite;
struct live_daemon ckpt_daemon;

int ckpt_suite_load(void)
{
	return ckpt_cases_load(&ckpt_suite);
}

void ckpt_suite_release(void)
{
	ckpt_cases_release(&ckpt_suite);
}

void ckpt_suite_start(void)
{
	ckpt_cases_start(&ckpt_suite, &ckpt_daemon);
}

void ckpt_suite_stop(void)
{
	live_stop(&ckpt_daemon);
}
