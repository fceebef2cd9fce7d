/*
 * config.c: the option table and its parser.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "config.h"

#include "headers.h"

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum cfg_kind {
	CFG_STR,  /* --flag VALUE */
	CFG_NUM,  /* --flag N, within [min, max] */
	CFG_BOOL, /* --flag (env: 1/true/yes or 0/false/no) */
	CFG_LIST, /* --flag VALUE, repeatable; env: entries separated by ';' */
};

struct cfg_option {
	const char *flag;
	const char *env; /* NULL: command line only */
	enum cfg_kind kind;
	const char *def;   /* as text, applied first and shown by --help; NULL: none */
	const char *shown; /* what --help shows when the default is decided later,
			      from other options (models_load); NULL: def */
	unsigned long long min, max;
	size_t offset; /* into struct attnd_config */
	const char *help;
};

#define OFF(field) offsetof(struct attnd_config, field)
#define MiB (1024ULL * 1024ULL)

static const struct cfg_option options[] = {
    {"--host", "ATTND_HOST", CFG_STR, "0.0.0.0", NULL, 0, 0, OFF(host),
     "numeric IPv4/IPv6 address to bind (0.0.0.0 = every interface, for containers; :: = every "
     "interface, IPv6 and IPv4)"},
    {"--port", "ATTND_PORT", CFG_NUM, "8080", NULL, 0, 65535, OFF(port),
     "TCP port; 0 picks a free one (the bound port is printed as `listening on HOST:PORT`)"},
    {"--threads", "ATTND_THREADS", CFG_NUM, "0", NULL, 0, 1024, OFF(threads),
     "compute workers; 0 = the CPUs of the container's quota"},
    {"--queue", "ATTND_QUEUE", CFG_NUM, "0", NULL, 0, 1000000, OFF(queue),
     "compute queue capacity (503 overloaded when full); 0 = 4 x threads"},
    {"--split-threads", "ATTND_SPLIT_THREADS", CFG_NUM, "0", NULL, 0, 64, OFF(split_threads),
     "engine threads one large request may use, borrowing idle workers; 0 = threads, 1 = never"},
    {"--io-threads", "ATTND_IO_THREADS", CFG_NUM, "0", NULL, 0, 256, OFF(io_threads),
     "network threads (accept, read, write, small requests); 0 = the CPUs of the container's "
     "quota"},
    {"--model", "ATTND_MODEL", CFG_LIST, NULL, NULL, 0, 0, OFF(models),
     "NAME=PATH.safetensors,heads=H[,prefix=P][,vocab=FILE][,tokenizer=NAME|FILE]; repeatable "
     "(env: ';'-separated); heads=H is required (the file does not say); prefix=P is prepended "
     "to every tensor name; vocab=FILE maps string tokens to ids (one token a line, or "
     "vocab.json); tokenizer= tokenizes the model's text (a --tokenizer NAME, or a file); "
     "or NAME=DIR[,tokenizer=NAME|FILE], a Hugging Face model folder (config.json, "
     "safetensors, tokenizer.json): the whole gpt2, bert, roberta, llama, mistral or qwen2 "
     "checkpoint"},
    {"--tokenizer", "ATTND_TOKENIZER", CFG_LIST, NULL, NULL, 0, 0, OFF(tokenizers),
     "NAME=FILE: a Hugging Face tokenizer.json, or a GPT-2 vocab.json with merges.txt beside "
     "it; repeatable (env: ';'-separated); for POST /v1/tokenize and --model ...,tokenizer=NAME"},
    {"--max-text-bytes", "ATTND_MAX_TEXT_BYTES", CFG_NUM, "1048576", NULL, 1, 1ULL << 30,
     OFF(max_text_bytes),
     "longest text, in bytes, a tokenizer or the whitespace split takes (422 above)"},
    {"--default-model", "ATTND_DEFAULT_MODEL", CFG_STR, NULL, "base", 0, 0, OFF(default_model),
     "model used when a request names none (with --no-builtins: the first --model)"},
    {"--max-body", "ATTND_MAX_BODY", CFG_NUM, "16777216", NULL, 1, 1ULL << 34, OFF(max_body),
     "largest request body in bytes, on the wire and after Content-Encoding (413 above)"},
    {"--compress-level", "ATTND_COMPRESS_LEVEL", CFG_NUM, "1", NULL, 0, 9, OFF(compress_level),
     "zlib level of gzip/deflate answers (Accept-Encoding) of compute routes above 1 KiB; "
     "0 = never compress (bench/README.md: why 1)"},
    {"--max-request-mb", "ATTND_MAX_REQUEST_MB", CFG_NUM, "1024", NULL, 1, 1ULL << 20,
     OFF(max_request_mb), "memory one request may need, in MiB (422 above)"},
    {"--max-request-gflop", "ATTND_MAX_REQUEST_GFLOP", CFG_NUM, "2000", NULL, 0, 1ULL << 40,
     OFF(max_request_gflop),
     "work one request may ask for, in GFLOP counting 64 a score (422 above); 0 = no limit"},
    {"--api-key", "ATTND_API_KEY", CFG_STR, NULL, NULL, 0, 0, OFF(api_key),
     "require `Authorization: Bearer KEY` (except /healthz, /readyz, /metrics, the v2 "
     "health probes and the viewer: / and /web/)"},
    {"--cors-origins", "ATTND_CORS_ORIGINS", CFG_STR, "*", NULL, 0, 0, OFF(cors_origins),
     "allowed browser origins: *, a comma list, or empty for no CORS headers"},
    {"--drain-seconds", "ATTND_DRAIN_SECONDS", CFG_NUM, "10", NULL, 0, 3600, OFF(drain_seconds),
     "on SIGTERM/SIGINT, time for in-flight requests to finish (exit 1 if they do not, or "
     "at a second signal)"},
    {"--log-format", "ATTND_LOG_FORMAT", CFG_STR, "text", NULL, 0, 0, OFF(log_format),
     "access and error log on stderr: text or json (any case)"},
    {"--connection-limit", "ATTND_CONNECTION_LIMIT", CFG_NUM, "1024", NULL, 1, 1000000,
     OFF(connection_limit), "most concurrent connections"},
    {"--per-ip-limit", "ATTND_PER_IP_LIMIT", CFG_NUM, "256", NULL, 0, 1000000, OFF(per_ip_limit),
     "most concurrent connections from one IP address; 0 = no limit"},
    {"--connection-memory", "ATTND_CONNECTION_MEMORY", CFG_NUM, "65536", NULL, 4096, 16 * MiB,
     OFF(connection_memory), "bytes of header/read buffer per connection"},
    {"--timeout", "ATTND_TIMEOUT", CFG_NUM, "30", NULL, 1, 86400, OFF(timeout),
     "seconds a connection may stay idle (a request body that stops coming that long: 408)"},
    {"--max-pending-mb", "ATTND_MAX_PENDING_MB", CFG_NUM, "256", NULL, 1, 1ULL << 20,
     OFF(max_pending_mb),
     "answer bytes queued to clients and not yet sent, over all connections, in MiB (503 "
     "with Retry-After above; also the largest answer: 422 response_too_large)"},
    {"--max-receiving-mb", "ATTND_MAX_RECEIVING_MB", CFG_NUM, "256", NULL, 1, 1ULL << 20,
     OFF(max_receiving_mb),
     "request body bytes being received and held, over all connections, in MiB (503 with "
     "Retry-After above; at least one --max-body)"},
    {"--write-timeout", "ATTND_WRITE_TIMEOUT", CFG_NUM, "10", NULL, 1, 86400,
     OFF(write_timeout),
     "seconds a client may leave a large answer unread (no progress) before it is closed"},
    {"--request-deadline", "ATTND_REQUEST_DEADLINE", CFG_NUM, "60", NULL, 1, 86400,
     OFF(request_deadline), "seconds to receive a whole request body (408 after)"},
    {"--compute-deadline", "ATTND_COMPUTE_DEADLINE", CFG_NUM, "60", NULL, 0, 86400,
     OFF(compute_deadline),
     "seconds a compute request may take from its whole body to its answer, queue wait "
     "included (503 deadline_exceeded after); 0 = no limit"},
    {"--no-builtins", "ATTND_NO_BUILTINS", CFG_BOOL, "false", NULL, 0, 0, OFF(no_builtins),
     "do not load the built-in models base, tiny, mini and numpy-demo, nor the tokenizers "
     "gpt2, bert and mini"},
    {"--probe", NULL, CFG_STR, NULL, NULL, 0, 0, OFF(probe),
     "GET http://127.0.0.1:PORT/path (or http://[::1]:PORT/path) and exit 0 on 2xx, 1 "
     "otherwise (container HEALTHCHECK)"},
    {"--version", NULL, CFG_BOOL, NULL, NULL, 0, 0, OFF(version), "print `attnd VERSION` and exit"},
    {"--routes", NULL, CFG_BOOL, NULL, NULL, 0, 0, OFF(routes),
     "print the routing table (METHOD PATH per line) and exit"},
    {"--help", NULL, CFG_BOOL, NULL, NULL, 0, 0, OFF(help), "print this help and exit"},
};

enum { N_OPTIONS = sizeof options / sizeof options[0] };

static void *field_of(struct attnd_config *cfg, const struct cfg_option *o)
{
	return (char *)cfg + o->offset;
}

/* name: what the message calls the option, its flag or its variable */
static int parse_num(const struct cfg_option *o, const char *name, const char *text,
		     unsigned long long *out, char *err, size_t errlen)
{
	char *end = NULL;
	unsigned long long v;

	errno = 0;
	if (text[0] < '0' || text[0] > '9')
		goto bad;
	v = strtoull(text, &end, 10);
	if (errno != 0 || *end != '\0' || v < o->min || v > o->max)
		goto bad;
	*out = v;
	return 0;
bad:
	snprintf(err, errlen, "%s: '%s' is not an integer in [%llu, %llu]", name, text, o->min,
		 o->max);
	return -1;
}

static int parse_bool(const char *name, const char *text, int *out, char *err, size_t errlen)
{
	static const char *const yes[] = {"1", "true", "yes", "on"};
	static const char *const no[] = {"0", "false", "no", "off", ""};

	for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
		if (strcasecmp(text, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
	}
	for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
		if (strcasecmp(text, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	snprintf(err, errlen, "%s: '%s' is not a boolean", name, text);
	return -1;
}

/* Appends one entry to a list (room for argc + env entries was made). */
static void list_push(struct attnd_list *l, const char *value)
{
	l->v[l->n] = value;
	l->n++;
}

/* Sets option o from text (a default, an env value or a flag's value);
 * name is where text came from, the flag or the variable, for the message
 * (an operator who set ATTND_PORT looks for that, not for --port). */
static int apply(struct attnd_config *cfg, const struct cfg_option *o, const char *name,
		 const char *text, char *err, size_t errlen)
{
	switch (o->kind) {
	case CFG_STR:
		*(const char **)field_of(cfg, o) = text;
		return 0;
	case CFG_NUM:
		return parse_num(o, name, text, field_of(cfg, o), err, errlen);
	case CFG_BOOL:
		return parse_bool(name, text, field_of(cfg, o), err, errlen);
	case CFG_LIST:
		list_push(field_of(cfg, o), text);
		return 0;
	}
	return -1;
}

static int apply_defaults(struct attnd_config *cfg, char *err, size_t errlen)
{
	for (size_t i = 0; i < N_OPTIONS; i++) {
		const struct cfg_option *o = &options[i];

		if (o->def == NULL || o->kind == CFG_LIST)
			continue;
		if (apply(cfg, o, o->flag, o->def, err, errlen) != 0)
			return -1;
	}
	return 0;
}

/* A list's variable (ATTND_MODEL) holds ';'-separated entries, split in a
 * copy the list owns. */
static int apply_env_list(struct attnd_list *l, const char *text)
{
	char *save = NULL;

	free(l->env);
	l->env = strdup(text);
	if (l->env == NULL)
		return -1;
	for (char *tok = strtok_r(l->env, ";", &save); tok != NULL;
	     tok = strtok_r(NULL, ";", &save)) {
		if (*tok != '\0')
			list_push(l, tok);
	}
	return 0;
}

static int apply_env(struct attnd_config *cfg, char *err, size_t errlen)
{
	for (size_t i = 0; i < N_OPTIONS; i++) {
		const struct cfg_option *o = &options[i];
		const char *text = o->env != NULL ? getenv(o->env) : NULL;
		int rc;

		if (text == NULL)
			continue;
		if (o->kind == CFG_LIST)
			rc = apply_env_list(field_of(cfg, o), text);
		else
			rc = apply(cfg, o, o->env, text, err, errlen);
		if (rc != 0) {
			if (err[0] == '\0')
				snprintf(err, errlen, "%s: out of memory", o->env);
			return -1;
		}
	}
	return 0;
}

static const struct cfg_option *find_flag(const char *arg, size_t namelen)
{
	for (size_t i = 0; i < N_OPTIONS; i++) {
		if (strlen(options[i].flag) == namelen &&
		    strncmp(options[i].flag, arg, namelen) == 0)
			return &options[i];
	}
	return NULL;
}

/* Parses argv[*i] (and its value, which may be argv[*i + 1]). */
static int apply_arg(struct attnd_config *cfg, int argc, char **argv, int *i,
		     int list_seen[N_OPTIONS], char *err, size_t errlen)
{
	const char *arg = argv[*i];
	const char *eq = strchr(arg, '=');
	size_t namelen = eq != NULL ? (size_t)(eq - arg) : strlen(arg);
	const struct cfg_option *o = find_flag(arg, namelen);
	const char *value = eq != NULL ? eq + 1 : NULL;

	if (o == NULL) {
		snprintf(err, errlen, "unknown option '%s' (see --help)", arg);
		return -1;
	}
	if (o->kind == CFG_BOOL && value == NULL)
		value = "true";
	if (value == NULL) {
		if (*i + 1 >= argc) {
			snprintf(err, errlen, "%s needs a value", o->flag);
			return -1;
		}
		*i += 1;
		value = argv[*i];
	}
	/* the first --model on the command line replaces ATTND_MODEL's list */
	if (o->kind == CFG_LIST && !list_seen[o - options]) {
		((struct attnd_list *)field_of(cfg, o))->n = 0;
		list_seen[o - options] = 1;
	}
	return apply(cfg, o, o->flag, value, err, errlen);
}

/* --log-format in any case, as the booleans are; stored as the lower-case
 * literal so that its readers (main.c) compare with strcmp. Returns -1,
 * cfg unchanged, when it is neither text nor json. */
static int normalise_log_format(struct attnd_config *cfg)
{
	if (strcasecmp(cfg->log_format, "text") == 0)
		cfg->log_format = "text";
	else if (strcasecmp(cfg->log_format, "json") == 0)
		cfg->log_format = "json";
	else
		return -1;
	return 0;
}

static int check_choices(struct attnd_config *cfg, char *err, size_t errlen)
{
	char why[256];

	/* an empty key would turn authentication off: a secret that failed to
	 * render must not leave the server open */
	if (cfg->api_key != NULL && cfg->api_key[0] == '\0') {
		snprintf(err, errlen,
			 "--api-key (or ATTND_API_KEY) is empty; leave it unset for no key");
		return -1;
	}
	if (hdr_cors_list_check(cfg->cors_origins, why, sizeof why) != 0) {
		snprintf(err, errlen, "--cors-origins (or ATTND_CORS_ORIGINS): %s", why);
		return -1;
	}
	if (normalise_log_format(cfg) != 0) {
		snprintf(err, errlen, "--log-format (or ATTND_LOG_FORMAT): '%s' is not text or json",
			 cfg->log_format);
		return -1;
	}
	if (cfg->max_receiving_mb * MiB < cfg->max_body) { /* else such a body is never taken */
		snprintf(err, errlen,
			 "--max-receiving-mb (or ATTND_MAX_RECEIVING_MB): %llu MiB cannot hold one "
			 "body of --max-body (or ATTND_MAX_BODY: %llu bytes)",
			 cfg->max_receiving_mb, cfg->max_body);
		return -1;
	}
	return 0;
}

/* Room in every list for each argument and each entry of its variable. */
static int lists_alloc(struct attnd_config *cfg, int argc)
{
	for (size_t i = 0; i < N_OPTIONS; i++) {
		const struct cfg_option *o = &options[i];
		struct attnd_list *l = field_of(cfg, o);
		const char *env;

		if (o->kind != CFG_LIST)
			continue;
		env = getenv(o->env);
		l->v = calloc((size_t)argc + 1 + (env != NULL ? strlen(env) : 0), sizeof *l->v);
		if (l->v == NULL)
			return -1;
	}
	return 0;
}

int config_parse(struct attnd_config *cfg, int argc, char **argv, char *err, size_t errlen)
{
	int list_seen[N_OPTIONS] = {0};

	memset(cfg, 0, sizeof *cfg);
	err[0] = '\0';
	if (lists_alloc(cfg, argc) != 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (apply_defaults(cfg, err, errlen) != 0 || apply_env(cfg, err, errlen) != 0)
		return -1;
	for (int i = 1; i < argc; i++) {
		if (apply_arg(cfg, argc, argv, &i, list_seen, err, errlen) != 0)
			return -1;
	}
	if (check_choices(cfg, err, errlen) != 0)
		return -1;
	/* " *, " is "*": said once here, so each request compares with "*" alone */
	if (hdr_cors_any(cfg->cors_origins))
		cfg->cors_origins = "*";
	return 0;
}

static void list_release(struct attnd_list *l)
{
	free(l->v);
	free(l->env);
	memset(l, 0, sizeof *l);
}

void config_release(struct attnd_config *cfg)
{
	list_release(&cfg->models);
	list_release(&cfg->tokenizers);
}

void config_print_help(FILE *out)
{
	fprintf(out, "usage: attnd [OPTIONS]\n\n"
		     "attnd " ATTND_VERSION ": an HTTP attention-inference daemon.\n"
		     "Every option may also come from its environment variable; flags win.\n\n");
	for (size_t i = 0; i < N_OPTIONS; i++) {
		const struct cfg_option *o = &options[i];

		const char *def = o->shown != NULL ? o->shown : o->def;

		fprintf(out, "  %-20s %-24s default: %s\n      %s\n", o->flag,
			o->env != NULL ? o->env : "(no env)", def != NULL ? def : "(none)", o->help);
	}
}

/* The cgroup v2 CPU quota as a CPU count (rounded up), or 0 when unlimited. */
static size_t cgroup_cpu_quota(void)
{
	FILE *f = fopen("/sys/fs/cgroup/cpu.max", "r");
	char quota[32] = "";
	unsigned long long period = 0;
	unsigned long long q;
	int n;

	if (f == NULL)
		return 0;
	n = fscanf(f, "%31s %llu", quota, &period);
	fclose(f);
	if (n != 2 || period == 0 || strcmp(quota, "max") == 0)
		return 0;
	q = strtoull(quota, NULL, 10);
	return q == 0 ? 0 : (size_t)((q + period - 1) / period);
}

/* The CPUs of this process's affinity mask, capped by the cgroup v2 quota. */
static size_t cpu_count(void)
{
	cpu_set_t set;
	size_t cpus = 1;
	size_t quota;

	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
		cpus = (size_t)CPU_COUNT(&set);
	quota = cgroup_cpu_quota();
	if (quota > 0 && quota < cpus)
		cpus = quota;
	return cpus;
}

size_t config_worker_count(const struct attnd_config *cfg)
{
	return cfg->threads > 0 ? (size_t)cfg->threads : cpu_count();
}

size_t config_io_thread_count(const struct attnd_config *cfg)
{
	return cfg->io_threads > 0 ? (size_t)cfg->io_threads : cpu_count();
}
