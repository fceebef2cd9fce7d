/*
 * config.h: every attnd option, from one table {flag, env, default, min, max, help}.
 *
 * Each option comes from its default, then its ATTND_* environment variable,
 * then its command-line flag (flags win). Numbers are checked against the
 * table's [min, max]; anything else is a configuration error.
 *
 * Ownership: a struct attnd_config borrows its strings from argv and the
 * environment (both live as long as the process) and owns only its lists'
 * arrays and their copies of the environment, which config_release frees.
 */
#ifndef SERVER_CONFIG_H
#define SERVER_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#define ATTND_VERSION "0.1.0"

/* A repeatable option: its entries, and the copy of its environment
 * variable they may point into (entries separated by ';'). */
struct attnd_list {
	const char **v;
	size_t n;
	char *env;
};

struct attnd_config {
	const char *host;
	unsigned long long port;
	unsigned long long threads; /* 0: the CPUs of the container's quota */
	unsigned long long queue;   /* 0: 4 * threads */
	unsigned long long split_threads; /* engine threads of one large request; 0: threads */
	unsigned long long io_threads;    /* libmicrohttpd's threads; 0: the CPUs */
	struct attnd_list models;     /* NAME=PATH,heads=H[,prefix=P][,vocab=FILE][,tokenizer=T] */
	struct attnd_list tokenizers; /* NAME=FILE (tokenizer.json, or vocab.json + merges.txt) */
	const char *default_model;
	unsigned long long max_body;	   /* bytes */
	unsigned long long compress_level; /* zlib level of coded answers; 0: never */
	unsigned long long max_request_mb; /* MiB one request may need */
	unsigned long long max_request_gflop; /* work one request may ask for (api/service.h) */
	unsigned long long max_text_bytes;    /* longest text, tokenized or split */
	const char *api_key;		   /* NULL or "": no auth */
	const char *cors_origins;	   /* "*", a comma list, or "" (off) */
	unsigned long long drain_seconds;
	const char *log_format; /* "text" or "json" */
	unsigned long long connection_limit;
	unsigned long long per_ip_limit;      /* 0: off */
	unsigned long long connection_memory; /* bytes per connection */
	unsigned long long timeout;	      /* inactivity seconds */
	unsigned long long max_pending_mb;    /* answer MiB queued and unsent, all connections */
	unsigned long long max_receiving_mb;  /* request body MiB received and held, all connections */
	unsigned long long write_timeout;     /* seconds a large answer may make no progress */
	unsigned long long request_deadline;  /* seconds to receive one request */
	unsigned long long compute_deadline;  /* seconds from a whole body to its answer; 0: none */
	int no_builtins;
	/* actions */
	int help, version, routes;
	const char *probe;
};

/*
 * Fills cfg from defaults, the environment and argv. Returns 0, or -1 with a
 * message naming the option in err (cfg then holds what was parsed so far and
 * must still be config_release()d).
 */
int config_parse(struct attnd_config *cfg, int argc, char **argv, char *err, size_t errlen);

/* Frees what cfg owns (the lists); cfg may then be parsed again. */
void config_release(struct attnd_config *cfg);

/* Writes the usage text: every option with its env name, default and help. */
void config_print_help(FILE *out);

/* The number of workers to run: --threads, or the CPUs of this process's
 * affinity mask capped by the cgroup v2 cpu.max quota (at least 1). */
size_t config_worker_count(const struct attnd_config *cfg);

/* The I/O threads to run: --io-threads, or the CPUs as config_worker_count
 * counts them (at least 1). */
size_t config_io_thread_count(const struct attnd_config *cfg);

#endif
