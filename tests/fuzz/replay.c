/*
 * replay.c: a main for a harness built without libFuzzer. Runs
 * LLVMFuzzerTestOneInput once on each file named, or on each file of each
 * directory named (not recursive), so that `make test` replays the seed
 * corpus and the regressions of tests/fuzz/ with the project's compiler and,
 * under SANITIZE, its sanitizers. A path that does not exist is skipped (a
 * harness without regressions yet). Prints one line; exits 1 when a file
 * cannot be read (a crash ends the process, as under libFuzzer).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* Runs the harness on one file; -1 when it cannot be read. */
static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data = NULL;
	long n;
	int rc = -1;

	if (f == NULL)
		return -1;
	if (fseek(f, 0, SEEK_END) != 0)
		goto out;
	n = ftell(f);
	if (n < 0 || fseek(f, 0, SEEK_SET) != 0)
		goto out;
	/* a copy of exactly n bytes, so ASan sees a read past the input */
	data = malloc(n > 0 ? (size_t)n : 1);
	if (data == NULL || fread(data, 1, (size_t)n, f) != (size_t)n)
		goto out;
	LLVMFuzzerTestOneInput(data, (size_t)n);
	rc = 0;
out:
	free(data);
	fclose(f);
	return rc;
}

/* Runs every regular file of dir; adds to *runs, returns the failures. */
static int replay_dir(const char *dir, size_t *runs)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int bad = 0;

	if (d == NULL)
		return 1;
	while ((e = readdir(d)) != NULL) {
		char path[4096];
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		if (replay_file(path) != 0) {
			fprintf(stderr, "replay: cannot read %s\n", path);
			bad++;
		}
		(*runs)++;
	}
	closedir(d);
	return bad;
}

int main(int argc, char **argv)
{
	size_t runs = 0;
	int bad = 0;

	LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) != 0)
			continue; /* a harness without regressions yet */
		if (S_ISDIR(st.st_mode)) {
			bad += replay_dir(argv[i], &runs);
		} else {
			bad += replay_file(argv[i]) != 0;
			runs++;
		}
	}
	printf("%s: %zu inputs replayed, %d unreadable\n", argv[0], runs, bad);
	return bad == 0 ? 0 : 1;
}
