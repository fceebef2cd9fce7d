/* tmp_files.c: a suite's temporary files (tmp_files.h). */
#include "tmp_files.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void tmp_write(const char *dir, const char *name, const void *bytes, size_t len, char path[512])
{
	FILE *f;

	snprintf(path, 512, "%s/%s", dir, name);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(bytes, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

void tmp_remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[512];

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}
