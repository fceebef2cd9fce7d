/*
 * metrics.h: the daemon's counters, rendered in Prometheus text format 0.0.4.
 *
 * Any thread may record without a lock: each adds to counters of its own
 * (metrics.c: per-thread shards), summed when rendered; a model's series
 * are found by name, a short lock when a name is first seen.
 * Ownership: metrics_new returns a struct the caller frees with metrics_free
 * (NULL accepted); metrics_render appends to a buf the caller owns. Strings
 * given to metrics_set_build and metrics_model are copied.
 */
#ifndef SERVER_METRICS_H
#define SERVER_METRICS_H

#include <stddef.h>

#include "common/buf.h"

/* The route label of a request ("other" for unknown paths). */
enum metric_route {
	MR_ATTENTION = 0,
	MR_SDPA,
	MR_MODELS,
	MR_MODEL,
	MR_VERSION,
	MR_OPENAPI,
	MR_TOKENIZE,
	MR_DETOKENIZE,
	MR_TOKENIZERS,
	MR_HEALTHZ,
	MR_READYZ,
	MR_METRICS,
	MR_WEB_INDEX,
	MR_WEB_FILE,
	MR_V2_SERVER,
	MR_V2_LIVE,
	MR_V2_READY,
	MR_V2_MODEL, /* with or without /versions/{version}, as the two below */
	MR_V2_MODEL_READY,
	MR_V2_INFER,
	MR_OTHER,
	MR_COUNT
};

/* Why the transport turned a request away before it reached the API. */
enum rejection {
	REJ_NOT_FOUND = 0,
	REJ_METHOD,
	REJ_MEDIA_TYPE,
	REJ_ENCODING,	  /* a Content-Encoding other than gzip, deflate, identity */
	REJ_BAD_ENCODING, /* a gzip or deflate body that does not inflate */
	REJ_TOO_LARGE,
	REJ_BAD_FRAMING,
	REJ_UNAUTHORIZED,
	REJ_OVERLOADED,
	REJ_DRAINING,
	REJ_TIMEOUT,
	REJ_DEADLINE, /* --compute-deadline passed (server/watch.h) */
	REJ_PER_IP,   /* its connection was over --per-ip-limit (server/peers.h) */
	REJ_PRECONDITION, /* If-Match named no current ETag (http_inline.c) */
	REJ_COUNT
};

/* Why a queued or running compute request was stopped (server/watch.h). */
enum cancel_reason {
	CANCEL_CLIENT_GONE = 0, /* its client closed the connection: 499 in the log */
	CANCEL_DEADLINE,        /* --compute-deadline passed: 503 deadline_exceeded */
	CANCEL_REASON_COUNT
};

/* The limit by which the transport turned a connection away
 * (attnd_connections_refused_total{limit}). */
enum refuse_limit {
	LIMIT_CONNECTION = 0, /* --connection-limit (or the process's fds): closed on accept */
	LIMIT_PER_IP,	      /* --per-ip-limit: answered 503, then closed */
	LIMIT_MEMORY,	      /* --connection-memory: a request's headers did not fit */
	LIMIT_DRAINING,	      /* shutting down: answered 503 draining, then closed */
	LIMIT_COUNT
};

/* How a lingering close ended (server/linger.h), or why there was none. */
enum linger_end {
	LINGER_END_EOF = 0, /* the client closed its side: the clean end */
	LINGER_END_TIME,    /* LINGER_SECONDS passed */
	LINGER_END_BYTES,   /* LINGER_BYTES were read */
	LINGER_END_ERROR,   /* the socket failed (the client reset it) */
	LINGER_END_STOP,    /* the daemon stopped */
	LINGER_END_FULL,    /* not lingered: LINGER_MAX were; closed at once */
	LINGER_END_COUNT
};

/* How a compute request that reached the API ended, per model. */
enum model_outcome {
	OUTCOME_OK = 0,	      /* 2xx */
	OUTCOME_CLIENT_ERROR, /* 4xx */
	OUTCOME_SERVER_ERROR, /* 5xx */
	OUTCOME_CANCELLED,    /* its client left, or --compute-deadline cut it */
	OUTCOME_COUNT
};

/* Model label values beyond this many distinct names are counted as "other". */
enum { METRICS_MODELS_MAX = 64 };

struct metrics;

struct metrics *metrics_new(void);
void metrics_free(struct metrics *m);

/* One finished request: its status (0 if none was sent), latency, sizes and
 * the engine FLOPs it cost. */
void metrics_request(struct metrics *m, enum metric_route route, int status, double seconds,
		     size_t bytes_in, size_t bytes_out, double flops);

void metrics_reject(struct metrics *m, enum rejection why);

/* A connection (or its request) refused by a limit. */
void metrics_refused(struct metrics *m, enum refuse_limit limit);

/* The model label of later calls: the index of `model`'s series, made on
 * first sight. The caller bounds the names: a loaded model's name (the API's
 * reply says which) or a fixed word ("sdpa", "inline", "none"), never a
 * client's string. */
size_t metrics_model(struct metrics *m, const char *model);

/* A compute request of that model: how it ended, its time in the queue (0
 * for one answered on the I/O thread) and, when the engine ran (>= 0), its
 * engine time. */
void metrics_model_request(struct metrics *m, size_t model, enum model_outcome outcome,
			   double queue_seconds, double compute_seconds);

/* attnd_build_info's labels; call once before serving. */
void metrics_set_build(struct metrics *m, const char *version, const char *commit,
		       const char *blas);

/* A compute request cancelled: dropped from the queue (running = 0, the
 * engine never ran it) or stopped while it ran (running = 1). */
void metrics_cancelled(struct metrics *m, enum cancel_reason why, int running);

/* Gauges: +1 / -1. A compute request is queued from its submission until a
 * worker takes it, then computing until the worker has its answer. */
void metrics_in_flight(struct metrics *m, int delta);
void metrics_queued(struct metrics *m, int delta);
void metrics_computing(struct metrics *m, int delta);

/* Bytes of answers queued to clients and not yet sent (server/pending.h):
 * + when one is queued, - when its request completes. */
void metrics_pending_bytes(struct metrics *m, long long delta);
void metrics_receiving_bytes(struct metrics *m, long long delta);

/* A compute request whose engine call borrowed `lent` idle workers
 * (server/main.c, the thread model). */
void metrics_split(struct metrics *m, size_t lent);

/* A socket began (+1) or ended (-1) a lingering close; and how one ended. */
void metrics_linger(struct metrics *m, int delta);
void metrics_lingered(struct metrics *m, enum linger_end end);

/* Appends the exposition text; returns 0, or -1 if out grew past its max. */
int metrics_render(const struct metrics *m, struct buf *out);

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

#endif
