/*
 * case_files.h: the folders of JSON test cases the suites read (the golden
 * fixtures in tests/data/fixtures/mha, the ONNX conformance cases in
 * tests/data/onnx-attention): which files a folder holds, and the
 * one number convention their cells share.
 *
 * Ownership: a struct case_list owns its names; case_list_release frees them
 * and accepts a list that was never scanned or failed half-way.
 * Every name here starts with case_: the Makefile links this file into every
 * test binary.
 */
#ifndef ATTN_TESTS_CASE_FILES_H
#define ATTN_TESTS_CASE_FILES_H

#include <jansson.h>
#include <stddef.h>

/* The files of one folder named prefix*suffix, sorted by name. */
struct case_list {
	char dir[1024];
	char **names; /* the file names without the suffix */
	size_t n;
	char error[256]; /* "; why" the list is empty, to append to a message, or "" */
};

/* The value of the environment variable env, or fallback when it is unset or empty. */
const char *case_env(const char *env, const char *fallback);

/*
 * Fills l (zeroed first) with the files of dir named prefix*suffix. On failure
 * (no folder, out of memory) the list is empty and l->error says why; the
 * folder is in l->dir either way.
 */
void case_list_scan(struct case_list *l, const char *dir, const char *prefix, const char *suffix);

/* Frees the names; l is empty afterwards. */
void case_list_release(struct case_list *l);

/*
 * A float cell: a JSON number, or one of the strings "Infinity", "-Infinity"
 * and "NaN" that stand for the non-finite values. -1 for anything else.
 */
int case_number(const json_t *v, double *out);

/* The whole of the file at path, NUL-terminated, malloc'd (the caller
 * frees), its length in *len; NULL when it cannot be read. */
char *case_slurp(const char *path, size_t *len);

#endif
