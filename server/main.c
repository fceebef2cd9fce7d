/*
 * main.c: attnd's start-up, signal wait and graceful shutdown.
 *
 * Thread model (chosen on purpose; see STYLE.md rule 3):
 *
 * - libmicrohttpd runs a pool of --io-threads internal polling threads (default:
 *   the CPUs, as --threads), each on its own poll() (not epoll: http_daemon.c,
 *   start_daemon, says why) (MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL,
 *   MHD_OPTION_THREAD_POOL_SIZE), that do all network I/O: accepting, reading
 *   headers and bodies, writing responses. A connection stays on the thread
 *   that accepted it ("the I/O thread" below), so small requests answered
 *   there use every core.
 *   Its error log is routed to ours (MHD_USE_ERROR_LOG + EXTERNAL_LOGGER).
 * - Compute (POST /v1/attention, /v1/sdpa, /v1/tokenize, /v1/detokenize,
 *   /v2/models/{name}/infer) runs on
 *   a fixed pool of N worker threads (--threads; default: the CPUs of this
 *   process's affinity mask, capped by the cgroup v2 quota in
 *   /sys/fs/cgroup/cpu.max), fed by a bounded FIFO queue (--queue, default
 *   4 N). A full queue answers 503 `overloaded` at once instead of building
 *   latency.
 * - A connection whose request is queued or computing is suspended
 *   (MHD_suspend_connection, MHD_ALLOW_SUSPEND_RESUME) and resumed by its
 *   worker once the reply is ready, so a slow client never holds a compute
 *   thread and a long computation never blocks the I/O thread. Parsing,
 *   compute and encoding all happen inside api_handle on the worker.
 * - Except for small v1 compute requests (api/service.h, API_SMALL_BODY: a
 *   body of at most 512 bytes on a named model, at most 2^18 FLOPs, 2^12
 *   attention scores and 2^10 numbers in the answer, e.g. the four-word
 *   Korean example). Their whole work costs no more than the queue's
 *   hand-off to a worker and back (a condvar wake-up, a resume, an
 *   eventfd write), so the I/O thread answers them itself, once the whole
 *   body is in: still no slow client holds a compute thread, and nothing
 *   long runs on the I/O thread. The API decodes the request (512 bytes at
 *   most), plans it, and declines it when the plan is not small, before
 *   anything large is built (an inline model's weights, the query's
 *   embedding rows); the request then goes to the queue as any other. The
 *   timings behind the bounds are in bench/README.md. A /v1/tokenize or
 *   /v1/detokenize body of at most 512 bytes is small as it is: tokenizing
 *   is linear in the text, and 512 bytes of it take microseconds.
 *   tests/daemon/check_server.c checks both sides of the line.
 * - Cheap GET routes (/v1/models, /v1/tokenizers, /version, /openapi.json, /healthz, /readyz,
 *   /metrics, the viewer's embedded files at / and /web/{file}, and the v2
 *   metadata and health routes) are answered inline on the I/O thread.
 * - One watcher thread (server/watch.c) polls, every 10 ms, the sockets of
 *   the requests queued or computing (libmicrohttpd does not watch a
 *   suspended connection) and their --compute-deadline, and sets the
 *   request's cancel flag, which the engine reads between blocks, tiles and
 *   layers (engine/cancel.h): a client gone or a deadline past frees the
 *   worker, and the workers it borrowed, within milliseconds; a queued
 *   request is dropped unrun. watch_add and watch_remove take its lock from
 *   any thread (I/O threads add, workers remove). With nothing to watch it
 *   sleeps. It also holds the --request-deadline and --timeout of a request
 *   whose body is arriving, and writes its 408 (http.c: watch_receiving).
 * - One lingering-close thread (server/linger.c) reads and discards, for 2 s
 *   at most, what clients still send on connections attnd has closed (a 413
 *   or 408 mid-body), so that their answers are not destroyed by a reset;
 *   with nothing lingering it sleeps.
 * - Log lines (access and error) are formatted by the thread that logs and
 *   written by one log writer thread (log_writer.h), in batches, so the I/O
 *   thread never waits on write(2) to stderr; it is started once the daemon
 *   listens and stopped (everything written) before exit.
 * - OpenBLAS runs single-threaded (openblas_set_num_threads(1)): parallelism
 *   comes from the workers and from the engine's own team (engine/team.h),
 *   and OpenBLAS's notes ask for single-threaded BLAS inside a
 *   multi-threaded program, else N workers x N BLAS threads oversubscribe.
 *   The threads its pthreads build started before main (one per CPU but
 *   one) would then only idle, and take the signals every thread of ours
 *   blocks (signals.h): they are stopped (single_threaded_blas).
 * - An engine call runs on one thread (api_limits.engine_threads = 1), but
 *   a large request borrows the workers that are idle, to run its call on
 *   their cores too:
 *   1. "Large" is a call of at least SPLIT_MIN_WORK (split.c) of work, as
 *      --max-request-gflop counts it: the API plans the request first and
 *      asks the server's lender then (api_lender in api/service.h), so the
 *      server judges the work itself, not the body's size.
 *   2. The lender asks the pool for the idle workers, only when no request
 *      is queued, at most --split-threads - 1 of them (default: all), and
 *      the engine call runs on its worker plus one thread per worker lent.
 *      A call whose extra scratch would pass --max-request-mb gives them
 *      back at once and runs on one thread: the limit holds either way.
 *   3. Lent workers take no request until the call gives them back, right
 *      after the engine call: the parse before and the encoding after run
 *      on one thread and hold no one else's core. The pool counts running
 *      and lent workers under its queue's lock, so the threads computing
 *      never outnumber --threads and two large requests never count one
 *      idle worker twice.
 *   4. The extra threads are kept from call to call (one attn_workers of
 *      --split-threads - 1 threads, started at start-up). A call that
 *      borrowed as many workers as the set has threads runs on them; a
 *      narrower one (some workers were busy), or a second such call at once,
 *      starts threads of its own for the call rather than wake kept ones to
 *      sit out. Kept threads spin some 2 ms after a call, yielding the core,
 *      then sleep (engine/workers.h): idle, they cost nothing.
 *   Answers do not depend on the thread count (tests/engine/check_workers.c;
 *   tests/daemon/check_split.c end to end).
 *   The trade-off: a request that arrives during a split waits in the queue
 *   until the split ends, where unsplit it would have found an idle worker.
 *   The alternative, extra engine threads beside workers that stay free to
 *   take requests, was turned down: the team shares a call's work out evenly
 *   and meets at barriers, so one thread that shares a core slows the whole
 *   call, and --threads defaults to the cgroup quota, which more running
 *   threads turn into throttling. A large request gains only while workers
 *   are idle; under steady load the queue is seldom empty and nothing is
 *   borrowed. --split-threads 1 turns lending off. The gain is measured in
 *   bench/README.md (`make bench`, split_bench.py).
 * - Memory goes back after a burst. glibc keeps what a request frees in the
 *   malloc arena of the thread that freed it; with large answers the arenas
 *   grow the daemon well over idle and keep it there after the load. So
 *   main waits for its signal in 1 s ticks, and after a tick in which no
 *   request was in flight or completed, if some completed since the last
 *   trim, calls malloc_trim(0) (trim_when_idle). That returns every whole
 *   free page in every arena, and the main arena's top; a worker arena keeps
 *   its top chunk, up to twice the largest big buffer freed so far (glibc
 *   2.36 trims only the main arena's top), so some memory stays over idle.
 *   Fixing M_MMAP_THRESHOLD instead (every big buffer its own mmap) gave the
 *   memory back too, but made large answers slower with the page faults of
 *   fresh mappings; a trim costs nothing while busy. The figures, each with
 *   the commit it was measured at, are in bench/README.md.
 * - Signals: SIGTERM, SIGINT and SIGHUP are blocked in every thread and
 *   main reads them from a signalfd (signals.h), so no work happens in a
 *   signal handler. On SIGTERM or SIGINT, the
 *   server drains: /readyz turns 503, the listening socket closes
 *   (MHD_quiesce_daemon), requests already received complete and are sent,
 *   each answer closing its connection, requests sent on open connections
 *   in the first second are answered too (compute ones 503 `draining`),
 *   then the daemon stops and attnd exits 0. If that takes longer than
 *   --drain-seconds, or a second SIGTERM/SIGINT comes, attnd logs it and
 *   exits 1 at once. SIGHUP, which log rotation sends, comes the same way
 *   and is only logged: the logs go to stderr, whose file (if it
 *   is one) attnd did not open and has no name to reopen by; rotate with
 *   copytruncate, or let the collector that reads stderr rotate. It never
 *   stops the daemon.
 */
#include <cblas.h>

#ifndef ATTND_COMMIT
#define ATTND_COMMIT "unknown" /* the Makefile passes `git rev-parse --short HEAD` */
#endif
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "api/error.h"
#include "clock.h"
#include "engine/workers.h"
#include "http.h"
#include "log.h"
#include "log_writer.h"
#include "metrics.h"
#include "models.h"
#include "pool.h"
#include "probe.h"
#include "route.h"
#include "signals.h"
#include "api/service.h"

#define MiB ((size_t)1 << 20)
enum { MAX_INLINE_D_MODEL = 4096, MAX_SPLIT_THREADS = 64, EXIT_CONFIG = 2 };

/* Everything a running daemon holds; stop_all frees it (the workers first). */
struct daemon_parts {
	struct api_service *svc;
	struct metrics *metrics;
	struct pool *pool;
	struct attn_workers *engine_workers; /* for split calls, or NULL */
	struct http_server *http;
};

/* The largest answer: what one request may need, and no more than the
 * budget of answers queued to clients (pending.h) could ever hold. */
static size_t max_answer_bytes(const struct attnd_config *cfg)
{
	unsigned long long mb = cfg->max_request_mb;

	if (cfg->max_pending_mb < mb)
		mb = cfg->max_pending_mb;
	return (size_t)mb * MiB;
}

static int start_service(struct daemon_parts *d, const struct attnd_config *cfg)
{
	struct api_limits limits;
	char err[512];

	limits.max_request_bytes = (size_t)cfg->max_request_mb * MiB;
	limits.max_response_bytes = max_answer_bytes(cfg);
	limits.max_request_gflop = (double)cfg->max_request_gflop;
	limits.max_text_bytes = (size_t)cfg->max_text_bytes;
	limits.max_inline_d_model = MAX_INLINE_D_MODEL;
	limits.engine_threads = 1;
	d->svc = api_service_new(&limits);
	if (d->svc == NULL) {
		log_error("out of memory creating the service");
		return -1;
	}
	if (models_load(d->svc, cfg, err, sizeof err) != 0) {
		log_error("%s", err);
		return -1;
	}
	return 0;
}

/* The engine threads one large request may use (the thread model above):
 * --split-threads, 0 meaning every worker; at most the workers, and at most
 * what one engine call and one attn_workers set run on (engine/workers.h). */
static size_t split_threads(const struct attnd_config *cfg, size_t workers)
{
	size_t n = cfg->split_threads > 0 ? (size_t)cfg->split_threads : workers;

	n = n < workers ? n : workers;
	return n < MAX_SPLIT_THREADS ? n : MAX_SPLIT_THREADS;
}

/* The threads a split call runs on besides its own, kept between calls.
 * Without them (no memory or threads to be had) a split call starts its
 * own, so this only logs a failure. */
static void start_engine_workers(struct daemon_parts *d, size_t split)
{
	struct attn_error aerr;

	if (split < 2)
		return;
	if (attn_workers_new(&d->engine_workers, split, &aerr) != ATTN_OK) {
		log_error("no kept engine threads (%s): split calls start their own", aerr.message);
		d->engine_workers = NULL;
	} else if (attn_workers_threads(d->engine_workers) < split) {
		log_error("%zu of %zu kept engine threads started",
			  attn_workers_threads(d->engine_workers) - 1, split - 1);
	}
}

static int start_all(struct daemon_parts *d, const struct attnd_config *cfg)
{
	size_t workers = config_worker_count(cfg);
	size_t queue = cfg->queue > 0 ? (size_t)cfg->queue : 4 * workers;
	size_t split = split_threads(cfg, workers);
	struct http_deps deps;
	char err[512];

	if (start_service(d, cfg) != 0)
		return -1;
	d->metrics = metrics_new();
	if (d->metrics != NULL)
		metrics_set_build(d->metrics, ATTND_VERSION, ATTND_COMMIT, openblas_get_config());
	d->pool = pool_new(workers, queue);
	if (d->metrics == NULL || d->pool == NULL) {
		log_error("cannot start %zu workers with a queue of %zu", workers, queue);
		return -1;
	}
	start_engine_workers(d, split);
	deps = (struct http_deps){.cfg = cfg,
				  .svc = d->svc,
				  .metrics = d->metrics,
				  .pool = d->pool,
				  .max_response_bytes = max_answer_bytes(cfg),
				  .split_threads = split,
				  .engine_workers = d->engine_workers};
	d->http = http_start(&deps, err, sizeof err);
	if (d->http == NULL) {
		log_error("%s", err);
		return -1;
	}
	log_info("attnd %s: %zu models, %zu workers, queue %zu, split up to %zu threads",
		 ATTND_VERSION, api_service_model_count(d->svc), workers, queue, split);
	return 0;
}

/* The daemon first (it may resume into the pool), then the pool, then what
 * the workers used: the kept engine threads and the service. */
/* Called with nothing running (after a drain, or when start-up failed).
 * The workers are joined before libmicrohttpd stops: the last one may
 * still be inside MHD_resume_connection, which signals the daemon's
 * wake-up channel after it releases the lock the I/O thread finishes the
 * request under, so the request can be counted done (and the drain end)
 * while that call still reads the daemon MHD_stop_daemon would free. No
 * request is handed to the pool meanwhile: a draining server refuses
 * compute requests at their headers (http.c admit_compute). */
static void stop_all(struct daemon_parts *d)
{
	/* the watcher's hook takes cancelled requests out of the pool's queue:
	 * stopped first, else it may run on the pool freed (http.h) */
	http_stop_evicting(d->http);
	pool_free(d->pool);
	http_stop(d->http);
	attn_workers_free(d->engine_workers);
	metrics_free(d->metrics);
	api_service_free(d->svc);
}

/* What trim_when_idle saw: the completed count at the last tick and at the
 * last trim. */
struct idle_trim {
	unsigned long seen;
	unsigned long trimmed;
};

/* Gives what freed memory it can back to the system (see the thread model
 * above) once a whole tick has passed with no request completing and none
 * in flight, if any completed since the last trim. A quiet tick, not just
 * an idle instant: libmicrohttpd frees a response after the request's
 * completion is counted. */
static void trim_when_idle(const struct daemon_parts *d, struct idle_trim *t)
{
	unsigned long done = http_completed(d->http);

	if (http_active(d->http) != 0 || done != t->seen) {
		t->seen = done;
		return;
	}
	if (done == t->trimmed)
		return;
	t->trimmed = done;
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

/* Waits for SIGTERM or SIGINT, trimming memory on quiet 1 s ticks. SIGHUP
 * (what log rotation sends) is noted and ignored: the logs go to stderr,
 * which attnd did not open and cannot reopen by name (see the thread model). */
static void wait_for_signal(const struct daemon_parts *d)
{
	struct idle_trim trim = {0, 0};
	int sig;

	for (;;) {
		sig = signals_next(1000);
		if (sig == 0) {
			http_tick(d->http);
			trim_when_idle(d, &trim);
		} else if (sig == SIGHUP) {
			log_info("SIGHUP: the logs go to stderr, nothing to reopen; still serving");
		} else {
			break;
		}
	}
	log_info("signal %d: draining", sig);
}

/* How long a drain keeps open keep-alive connections, counted from the
 * signal: a client may have sent its next request on one just as the drain
 * began, still in the socket's buffer; closing the connection then would
 * lose it unanswered (a POST no client retries). Every answer while
 * draining closes its connection, so a busy client's go within a round
 * trip; an idle one is closed when this has passed. */
#define DRAIN_KEEPALIVE_SECONDS 1.0

/* Waits for every in-flight request, then for the lingering closes of the
 * answers just sent to clients still sending (linger.h: LINGER_SECONDS at
 * most), and for open connections to close (DRAIN_KEEPALIVE_SECONDS at
 * most); 0 when the requests all finished within --drain-seconds (lingering
 * closes and idle connections left then are cut, as they are bounds, not
 * work). A request that comes meanwhile on an open connection is waited
 * for as well. A second SIGTERM or SIGINT ends the wait at once (-1), as
 * one who presses Ctrl-C twice means. */
static int drain(struct daemon_parts *d, const struct attnd_config *cfg)
{
	double start = clock_seconds(), deadline = start + (double)cfg->drain_seconds;

	http_begin_drain(d->http);
	for (;;) {
		long active = http_active(d->http);
		int sig;

		if (active == 0 && http_lingering(d->http) == 0 &&
		    (http_connections(d->http) == 0 ||
		     clock_seconds() > start + DRAIN_KEEPALIVE_SECONDS))
			break;
		if (clock_seconds() > deadline) {
			if (active == 0)
				break;
			log_error("drain: %ld requests still running after %llu s; exiting 1", active,
				  cfg->drain_seconds);
			return -1;
		}
		sig = signals_next(10);
		if (sig == SIGTERM || sig == SIGINT) {
			log_error("drain: signal %d again; exiting 1 now with %ld requests running",
				  sig, active);
			return -1;
		}
	}
	log_info("drained; exiting");
	return 0;
}

/* OpenBLAS's own call that stops the threads of its pthreads build (the one
 * its fork handler makes); weak, so a BLAS without it links, and left
 * uncalled there. */
extern int blas_thread_shutdown_(void) __attribute__((weak));

/* BLAS on the calling thread only, and OpenBLAS's idle threads stopped.
 * With one thread set, its pthreads build never starts them again (its
 * calls run threaded only when more than one is set). */
static void single_threaded_blas(void)
{
	openblas_set_num_threads(1);
	if (openblas_get_parallel() == 1 && blas_thread_shutdown_ != NULL)
		blas_thread_shutdown_();
}

static int serve(const struct attnd_config *cfg)
{
	struct daemon_parts d = {NULL, NULL, NULL, NULL, NULL};
	log_set_format(strcmp(cfg->log_format, "json") == 0 ? LOG_JSON : LOG_TEXT);
	single_threaded_blas();
	if (signals_start() != 0 || start_all(&d, cfg) != 0) {
		stop_all(&d);
		return EXIT_CONFIG;
	}
	if (log_writer_start() != 0)
		log_error("no log writer thread: log lines are written by the threads that log");
	log_never_wait(); /* this thread handles the signals */
	if (strchr(cfg->host, ':') != NULL) /* IPv6, bracketed as in a URL */
		printf("listening on [%s]:%u\n", cfg->host, http_port(d.http));
	else
		printf("listening on %s:%u\n", cfg->host, http_port(d.http));
	fflush(stdout);
	wait_for_signal(&d);
	if (drain(&d, cfg) != 0) {
		/* libmicrohttpd cannot stop with suspended connections: leave now */
		http_log_waiting(d.http);
		log_writer_stop();
		_exit(1);
	}
	stop_all(&d);
	log_writer_stop();
	return 0;
}

int main(int argc, char **argv)
{
	struct attnd_config cfg;
	char err[512];
	int rc;

	if (config_parse(&cfg, argc, argv, err, sizeof err) != 0) {
		fprintf(stderr, "attnd: %s\n", err);
		config_release(&cfg);
		return EXIT_CONFIG;
	}
	if (cfg.help) {
		config_print_help(stdout);
		rc = 0;
	} else if (cfg.version) {
		printf("attnd %s\n", ATTND_VERSION);
		rc = 0;
	} else if (cfg.routes) {
		route_print(stdout);
		rc = 0;
	} else if (cfg.probe != NULL) {
		rc = probe_run(cfg.probe);
	} else {
		rc = serve(&cfg);
	}
	config_release(&cfg);
	return rc;
}
