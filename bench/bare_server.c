/*
 * bare_server.c: the baseline of `make bench`'s HTTP table (bench/http_bench.sh).
 *
 * A libmicrohttpd server that answers every request, whatever its method and
 * path, with 200 and one fixed small JSON body. It runs libmicrohttpd exactly
 * as attnd does (server/http_daemon.c start_daemon, server/main.c's thread model):
 * a pool of internal polling threads on poll() (one per CPU, as attnd's
 * --io-threads default; poll(), not epoll, since 8d73076 made attnd's so),
 * suspend/resume allowed, the same
 * connection limits, per-connection memory and idle timeout as attnd's
 * defaults, and a request body read to its end before the answer is queued
 * (doc/examples/simplepost.c's lifecycle). So the gap between the two servers'
 * requests/s is attnd's own work per request: routing, headers, body copy,
 * the hand-off to a compute worker and back, api_handle, the access log.
 *
 *   bare_server [--port N] [--io-threads T] [--answer FILE]
 *                N = 0 (the default) picks a free port; T: the CPUs
 *                FILE: an HTTP answer as `curl -si` saves it (status line,
 *                headers, a blank line, the body); every request is then
 *                answered with its headers and body instead of the small
 *                fixed body, so that a bare server sends attnd's own bytes
 *                (libmicrohttpd writes Date, Content-Length and Connection
 *                itself, so the file's are skipped; the status is always
 *                200 whatever the file's)
 *
 * It binds 127.0.0.1 only, prints `listening on 127.0.0.1:PORT` like attnd,
 * and exits 0 on SIGTERM or SIGINT. Exit 2 on a bad argument, 1 when the
 * daemon cannot start.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <microhttpd.h>

#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

/* attnd's defaults (server/config.c): --connection-limit, --per-ip-limit,
 * --connection-memory, --timeout */
enum {
	CONNECTION_LIMIT = 1024,
	PER_IP_LIMIT = 256,
	CONNECTION_MEMORY = 65536,
	TIMEOUT_SECONDS = 30,
	EXIT_USAGE = 2,
};

static const char BODY[] = "{\"status\":\"ok\"}";

enum { ANSWER_MAX = 65536 }; /* --answer files are shorter than this */

/* --answer's file, read once before the daemon starts; its body is the
 * response's PERSISTENT buffer, so it lives until main returns. */
static char answer_text[ANSWER_MAX + 1];

/* Any non-NULL value marks "first callback done" in *con_cls; the bare
 * server keeps no per-request state, so nothing is allocated or freed. */
static int seen_headers;

/* The one response, made before the daemon starts and only read after:
 * libmicrohttpd reference-counts it, so every connection may queue it. */
static struct MHD_Response *fixed_response;

/* simplepost.c's three phases: headers (remember we saw them), body chunks
 * (consume them), final call (queue the answer). */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	(void)cls;
	(void)url;
	(void)method;
	(void)version;
	(void)upload_data;
	if (*con_cls == NULL) {
		*con_cls = &seen_headers;
		return MHD_YES;
	}
	if (*upload_data_size != 0) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	return MHD_queue_response(conn, MHD_HTTP_OK, fixed_response);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	fputs("bare_server: ", stderr);
	vfprintf(stderr, fmt, ap);
}

/* Reads one number in [0, max] into *out; -1 when text is not one. */
static int parse_uint(const char *text, unsigned long max, unsigned *out)
{
	char *end = NULL;
	unsigned long v;

	errno = 0;
	v = strtoul(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || v > max || text[0] == '-')
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* Returns 0 and sets *port, *io_threads and *answer (NULL: none), or -1 on a
 * bad command line. */
static int parse_args(int argc, char **argv, unsigned *port, unsigned *io_threads,
		      const char **answer)
{
	cpu_set_t cpus;

	*port = 0;
	*io_threads = 1;
	*answer = NULL;
	if (sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 0)
		*io_threads = (unsigned)CPU_COUNT(&cpus);
	for (int i = 1; i < argc; i += 2) {
		if (i + 1 >= argc)
			return -1;
		if (strcmp(argv[i], "--port") == 0) {
			if (parse_uint(argv[i + 1], 65535, port) != 0)
				return -1;
		} else if (strcmp(argv[i], "--io-threads") == 0) {
			if (parse_uint(argv[i + 1], 256, io_threads) != 0 || *io_threads == 0)
				return -1;
		} else if (strcmp(argv[i], "--answer") == 0) {
			*answer = argv[i + 1];
		} else {
			return -1;
		}
	}
	return 0;
}

/* The fixed small answer: BODY as application/json. */
static struct MHD_Response *small_response(void)
{
	struct MHD_Response *resp;

	/* PERSISTENT: libmicrohttpd never writes to or frees BODY; its API
	 * (0.9.75 has no _from_buffer_static) takes void *, hence the cast. */
	resp = MHD_create_response_from_buffer(sizeof BODY - 1, (void *)(uintptr_t)BODY,
					       MHD_RESPMEM_PERSISTENT);
	if (resp != NULL &&
	    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json") !=
		MHD_YES) {
		MHD_destroy_response(resp);
		resp = NULL;
	}
	return resp;
}

/* Headers libmicrohttpd writes itself, whatever the response holds. */
static int written_by_mhd(const char *name)
{
	return strcasecmp(name, "Date") == 0 || strcasecmp(name, "Content-Length") == 0 ||
	       strcasecmp(name, "Connection") == 0 || strcasecmp(name, "Keep-Alive") == 0 ||
	       strcasecmp(name, "Transfer-Encoding") == 0;
}

/* Adds the header lines from text (NUL-terminated, just past the status
 * line) up to the blank line; 0, or -1 on a line that is no header or one
 * libmicrohttpd refuses. */
static int add_head(struct MHD_Response *resp, char *text)
{
	for (;;) {
		char *eol = strchr(text, '\n');
		char *value;

		if (eol == NULL)
			return -1;
		*eol = '\0';
		if (eol > text && eol[-1] == '\r')
			eol[-1] = '\0';
		if (*text == '\0')
			return 0;
		value = strchr(text, ':');
		if (value == NULL)
			return -1;
		*value++ = '\0';
		value += strspn(value, " \t");
		if (!written_by_mhd(text) && MHD_add_response_header(resp, text, value) != MHD_YES)
			return -1;
		text = eol + 1;
	}
}

/* Where the body of an HTTP answer starts: after the first empty line (CRLF
 * or LF), the line add_head stops at; NULL when there is none. */
static char *body_of(char *text)
{
	for (char *eol = strchr(text, '\n'); eol != NULL; eol = strchr(text, '\n')) {
		if (eol == text || (eol == text + 1 && *text == '\r'))
			return eol + 1;
		text = eol + 1;
	}
	return NULL;
}

/* The answer saved in path (see the header comment), or NULL with a message. */
static struct MHD_Response *answer_response(const char *path)
{
	struct MHD_Response *resp = NULL;
	FILE *f = fopen(path, "rb");
	char *head, *body;
	size_t n;

	if (f == NULL) {
		perror(path);
		return NULL;
	}
	n = fread(answer_text, 1, ANSWER_MAX, f);
	fclose(f);
	answer_text[n] = '\0';
	head = strchr(answer_text, '\n');
	body = body_of(answer_text);
	if (n < ANSWER_MAX && head != NULL && body != NULL)
		resp = MHD_create_response_from_buffer(n - (size_t)(body - answer_text), body,
						       MHD_RESPMEM_PERSISTENT);
	if (resp != NULL && add_head(resp, head + 1) == 0)
		return resp;
	if (resp != NULL)
		MHD_destroy_response(resp);
	fprintf(stderr, "bare_server: %s is not an HTTP answer (curl -si) under %d bytes\n", path,
		(int)ANSWER_MAX);
	return NULL;
}

static struct MHD_Daemon *start_daemon(unsigned port, unsigned io_threads)
{
	struct sockaddr_in addr;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
			 MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC | MHD_USE_ERROR_LOG;

	memset(&addr, 0, sizeof addr);
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, NULL,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				MHD_OPTION_THREAD_POOL_SIZE, io_threads > 1 ? io_threads : 0u,
				MHD_OPTION_SOCK_ADDR,
				(struct sockaddr *)&addr, MHD_OPTION_CONNECTION_LIMIT,
				(unsigned)CONNECTION_LIMIT, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
				(unsigned)PER_IP_LIMIT, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
				(size_t)CONNECTION_MEMORY, MHD_OPTION_CONNECTION_TIMEOUT,
				(unsigned)TIMEOUT_SECONDS, MHD_OPTION_END);
}

/* Blocks SIGTERM and SIGINT in every thread (libmicrohttpd's thread inherits
 * this mask), so main can sigwait for them. SIGPIPE is ignored as in attnd. */
static int block_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	if (pthread_sigmask(SIG_BLOCK, set, NULL) != 0)
		return -1;
	return signal(SIGPIPE, SIG_IGN) == SIG_ERR ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct MHD_Daemon *daemon = NULL;
	const union MHD_DaemonInfo *info;
	sigset_t set;
	const char *answer;
	unsigned port, io_threads;
	int sig = 0;
	int status = 1;

	if (parse_args(argc, argv, &port, &io_threads, &answer) != 0) {
		fprintf(stderr, "usage: bare_server [--port N] [--io-threads T] [--answer FILE]   "
				"(N in [0, 65535]; 0: a free port; T in [1, 256], default: the CPUs; "
				"FILE: an answer as curl -si saves it)\n");
		return EXIT_USAGE;
	}
	if (block_signals(&set) != 0) {
		perror("bare_server: signals");
		return 1;
	}
	fixed_response = answer != NULL ? answer_response(answer) : small_response();
	if (fixed_response == NULL) {
		fprintf(stderr, "bare_server: cannot build the response\n");
		goto out;
	}
	daemon = start_daemon(port, io_threads);
	if (daemon == NULL) {
		fprintf(stderr, "bare_server: cannot listen on 127.0.0.1:%u\n", port);
		goto out;
	}
	info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
	printf("listening on 127.0.0.1:%u\n", info != NULL ? (unsigned)info->port : port);
	fflush(stdout);
	if (sigwait(&set, &sig) != 0)
		goto out;
	status = 0;
out:
	if (daemon != NULL)
		MHD_stop_daemon(daemon);
	if (fixed_response != NULL)
		MHD_destroy_response(fixed_response);
	return status;
}
