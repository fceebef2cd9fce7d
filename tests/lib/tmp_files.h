/*
 * tmp_files.h: files a daemon suite writes for the daemon to read (bad
 * vocabularies, tokenizer files), in a folder of its own from mkdtemp.
 * The caller owns the folder's name; tmp_remove_dir removes the files in it
 * (not below) and the folder. Failures to write fail the running test.
 */
#ifndef ATTN_TESTS_TMP_FILES_H
#define ATTN_TESTS_TMP_FILES_H

#include <stddef.h>

/* Writes len bytes to dir/name; the full path goes to path[512]. */
void tmp_write(const char *dir, const char *name, const void *bytes, size_t len, char path[512]);

/* Removes every file in dir, then dir; a missing dir is no error. */
void tmp_remove_dir(const char *dir);

#endif
