/*
 * case_files.c: listing a folder of JSON test cases and reading their number
 * cells (see case_files.h).
 */
#include "case_files.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends a copy of name[0, len); -1 when out of memory. */
static int list_add(struct case_list *l, size_t *cap, const char *name, size_t len)
{
	if (l->n == *cap) {
		size_t grown_cap = *cap ? 2 * *cap : 64;
		char **grown = realloc(l->names, grown_cap * sizeof(char *));

		if (grown == NULL)
			return -1;
		l->names = grown;
		*cap = grown_cap;
	}
	l->names[l->n] = strndup(name, len);
	if (l->names[l->n] == NULL)
		return -1;
	l->n++;
	return 0;
}

const char *case_env(const char *env, const char *fallback)
{
	const char *v = getenv(env);

	return v != NULL && v[0] != '\0' ? v : fallback;
}

void case_list_scan(struct case_list *l, const char *dir, const char *prefix, const char *suffix)
{
	size_t plen = strlen(prefix), slen = strlen(suffix), cap = 0;
	struct dirent *de;
	DIR *d;

	memset(l, 0, sizeof(*l));
	snprintf(l->dir, sizeof(l->dir), "%s", dir);
	d = opendir(l->dir);
	if (d == NULL) {
		snprintf(l->error, sizeof(l->error), "; cannot open it: %s", strerror(errno));
		return;
	}
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);

		if (len <= plen + slen || strncmp(de->d_name, prefix, plen) != 0 ||
		    strcmp(de->d_name + len - slen, suffix) != 0)
			continue;
		if (list_add(l, &cap, de->d_name, len - slen) != 0) {
			case_list_release(l);
			snprintf(l->error, sizeof(l->error), "; out of memory");
			break;
		}
	}
	closedir(d);
	if (l->n > 0)
		qsort(l->names, l->n, sizeof(char *), by_name);
}

void case_list_release(struct case_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->names[i]);
	free(l->names);
	l->names = NULL;
	l->n = 0;
}

int case_number(const json_t *v, double *out)
{
	const char *s;

	if (json_is_number(v)) {
		*out = json_number_value(v);
		return 0;
	}
	s = json_string_value(v);
	if (s == NULL)
		return -1;
	if (strcmp(s, "Infinity") == 0)
		*out = INFINITY;
	else if (strcmp(s, "-Infinity") == 0)
		*out = -INFINITY;
	else if (strcmp(s, "NaN") == 0)
		*out = NAN;
	else
		return -1;
	return 0;
}

char *case_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *data = NULL;
	long n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		data = malloc((size_t)n + 1);
		if (data != NULL && fread(data, 1, (size_t)n, f) != (size_t)n) {
			free(data);
			data = NULL;
		}
		if (data != NULL) {
			data[n] = '\0';
			*len = (size_t)n;
		}
	}
	fclose(f);
	return data;
}
