/*
 * proc_metrics.c: process_* from /proc/self/stat (CPU ticks, start time in
 * ticks after boot, virtual size, resident pages), /proc/stat (the boot
 * time), /proc/self/fd (open descriptors) and RLIMIT_NOFILE, with the names,
 * types and units of Prometheus' own client libraries.
 */
#include "proc_metrics.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

struct proc_stat {
	unsigned long long utime, stime; /* clock ticks */
	unsigned long long start_ticks;	 /* after boot */
	unsigned long long vsize;	 /* bytes */
	long long rss_pages;
};

/* Reads path whole (small /proc files) into text[cap]; 0 or -1. */
static int read_small(const char *path, char *text, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (f == NULL)
		return -1;
	n = fread(text, 1, cap - 1, f);
	fclose(f);
	text[n] = '\0';
	return n > 0 ? 0 : -1;
}

/* /proc/self/stat: fields 14-15 (utime, stime), 22 (starttime), 23 (vsize),
 * 24 (rss), counted after the `(comm)` field, whose name may hold spaces and
 * parentheses: the fields start after its last ')'. */
static int read_stat(struct proc_stat *st)
{
	char text[1024];
	const char *p;

	if (read_small("/proc/self/stat", text, sizeof text) != 0)
		return -1;
	p = strrchr(text, ')');
	if (p == NULL)
		return -1;
	/* after ')': 3 state, 4 ppid ... 13 majflt skipped, then what we need */
	if (sscanf(p + 1,
		   " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d "
		   "%*d %llu %llu %lld",
		   &st->utime, &st->stime, &st->start_ticks, &st->vsize, &st->rss_pages) != 5)
		return -1;
	return 0;
}

/* Line by line: a fixed buffer of the file's start may end before btime,
 * or inside its number and read a part of it. */
long long proc_boot_time(FILE *f)
{
	char *line = NULL;
	size_t cap = 0;
	long long boot = -1;

	while (boot < 0 && getline(&line, &cap, f) > 0) {
		if (strncmp(line, "btime ", 6) == 0)
			boot = strtoll(line + 6, NULL, 10);
	}
	free(line);
	return boot;
}

/* The boot time in seconds since the epoch (/proc/stat's btime), or -1. */
static long long boot_time(void)
{
	FILE *f = fopen("/proc/stat", "r");
	long long boot;

	if (f == NULL)
		return -1;
	boot = proc_boot_time(f);
	fclose(f);
	return boot;
}

/* The open descriptors: /proc/self/fd's entries but the one reading it. */
static long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	const struct dirent *e;
	long n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] != '.')
			n++;
	}
	closedir(d);
	return n - 1;
}

static void put(struct buf *out, const char *name, const char *type, const char *help,
		double value)
{
	buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n%s %.15g\n", name, help, name, type, name,
		   value);
}

void proc_metrics_render(struct buf *out)
{
	struct proc_stat st;
	struct rlimit lim;
	double tick = (double)sysconf(_SC_CLK_TCK);
	double page = (double)sysconf(_SC_PAGESIZE);
	long long boot = boot_time();
	long fds = open_fds();

	if (read_stat(&st) == 0 && tick > 0) {
		put(out, "process_cpu_seconds_total", "counter",
		    "Total user and system CPU time spent in seconds.",
		    (double)(st.utime + st.stime) / tick);
		put(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
		    (double)st.vsize);
		put(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
		    (double)st.rss_pages * page);
		if (boot >= 0)
			put(out, "process_start_time_seconds", "gauge",
			    "Start time of the process since unix epoch in seconds.",
			    (double)boot + (double)st.start_ticks / tick);
	}
	if (fds >= 0)
		put(out, "process_open_fds", "gauge", "Number of open file descriptors.",
		    (double)fds);
	if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY)
		put(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.",
		    (double)lim.rlim_cur);
}
