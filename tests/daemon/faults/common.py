"""common.py: what the fault tests (run.py, slow_clients.py) share: their
request bodies, the daemon's metrics they poll, and the checks that a daemon
is back to its baseline after an attack."""
import json
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib"))
import attnd  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MIX_LUA = os.path.join(HERE, "..", "..", "lib", "mix.lua")
HEALTHZ_MS = 100.0
WORKERS = 2
ROW = [0.25, -0.5, 0.75, 0.125, -1.0, 0.5, -0.25, 1.0]


def heavy_body(L, weights="none"):
    """tiny over L tokens: O(L^2) work. L = 15000 computes in about 0.2 s on
    this project's 2-core machine (Server-Timing, 2026-12-04; about 1 s when
    first written), L = 3000 in about 10 ms."""
    return json.dumps({"model": "tiny", "weights": weights,
                       "embeddings": [ROW[i % 8:] + ROW[:i % 8] for i in range(L)]},
                      separators=(",", ":")).encode()


HEAVY = heavy_body(15000)
BIG_ANSWER = heavy_body(2000, "per_head")  # a 56 MB answer (2 x 2000 x 2000 weights)
SMALL = b'{"model":"tiny","text":"the cat sat on the mat"}'
FREED_MS = 100.0  # a disconnected long request frees its worker within this


def tokens_body(L):
    """`base` over L token ids, no weights: L = 8192 takes seconds of one core,
    in a 54 KB body."""
    return json.dumps({"model": "base", "weights": "none",
                       "tokens": [(i * 7) % 32000 for i in range(L)]},
                      separators=(",", ":")).encode()


LONG_BASE = tokens_body(8192)


def healthz_fast(port):
    ms = attnd.healthz_ms(port)
    if ms is None or ms >= HEALTHZ_MS:
        ms = attnd.healthz_ms(port)  # one retry: a scheduler hiccup, not a blocked thread
    return ms is not None and ms < HEALTHZ_MS, ms


def compute_ok(port, timeout=10.0):
    r = attnd.post(port, "/v1/attention", SMALL, timeout)
    return r.status == 200 and r.complete, r


IN_FLIGHT = "attnd_http_requests_in_flight"  # a poll of /metrics counts itself
QUEUED = "attnd_compute_queue_depth"
RUNNING = "attnd_compute_running"
CLOSED_RUNNING = 'attnd_requests_cancelled_total{reason="client_closed",stage="running"}'
CLOSED_QUEUED = 'attnd_requests_cancelled_total{reason="client_closed",stage="queued"}'
ATTENTION_200 = 'attnd_http_requests_total{route="/v1/attention",code="200"}'
ATTENTION_ABORTED = 'attnd_http_requests_total{route="/v1/attention",code="0"}'  # ended, no answer sent
PENDING = "attnd_answers_pending_bytes"
WAIT = 30.0  # the bound on a wait for a state of the daemon


def in_flight(port):
    return attnd.metric(port, IN_FLIGHT)


def received(n):
    """A wait_metrics predicate: n compute requests received whole and not yet
    answered, each on a worker (which may have borrowed the idle ones) or queued."""
    return lambda m: m[RUNNING] + m[QUEUED] == n


def shown(samples, *series):
    """The values of some series of wait_metrics' last samples, for a message."""
    return "/metrics: " + ", ".join("%s %g" % (k, samples.get(k, 0)) for k in series)


def settled(report, name, d, fds0, rss0, rss_slack_kib=32 * 1024, timeout=10.0):
    """After a fault: alive, nothing in flight (the probe's own request is
    the one), descriptors back, memory back within rss_slack_kib, /healthz
    fast and a compute request served."""
    report.check(name + ": alive", d.alive(), "exit status %s" % d.proc.returncode)
    if not d.alive():
        return
    flight = attnd.wait_until(lambda: in_flight(d.port) == 1.0, timeout)
    report.check(name + ": nothing left in flight", flight,
                 "in flight: %s" % in_flight(d.port))
    fds = attnd.wait_until(lambda: d.fds() <= fds0 + 2 and d.fds(), timeout) or d.fds()
    report.check(name + ": descriptors back", fds <= fds0 + 2, "%d fds, baseline %d" % (fds, fds0))
    rss = attnd.settle_rss(d, 0.5)
    attnd.memory_check(report, d, name + ": memory back", rss <= rss0 + rss_slack_kib,
                       "RSS %d KiB, baseline %d KiB" % (rss, rss0))
    ok, ms = healthz_fast(d.port)
    report.check(name + ": /healthz fast", ok, "%s ms" % ms)
    ok, r = compute_ok(d.port)
    report.check(name + ": compute served", ok, repr(r))
    report.note("%s: fds %d (baseline %d), RSS %d KiB (baseline %d)" % (name, fds, fds0, rss, rss0))


def baseline(d):
    """Warms every worker on the paths the faults take, then samples. Twice:
    glibc serves a 56 MB answer's growing buffer from mmap the first time,
    then raises its mmap threshold (up to 32 MB) and keeps the next ones'
    smaller steps in each worker's arena; after two rounds RSS is flat (see
    tests/daemon/hostile/run.py, TOLERANCE)."""
    for _ in range(2):
        ts = [threading.Thread(target=attnd.post, args=(d.port, "/v1/attention", BIG_ANSWER, 60))
              for _ in range(WORKERS)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(120)
    attnd.post(d.port, "/v1/attention", heavy_body(3000), 60)
    return d.fds(), attnd.settle_rss(d)


def raw_request(body, path="/v1/attention", headers=""):
    """headers: more header lines, each ending in \\r\\n."""
    return (("POST %s HTTP/1.1\r\nHost: attnd\r\nContent-Type: application/json\r\n%s"
             "Content-Length: %d\r\n\r\n") % (path, headers, len(body))).encode() + body


def close_hard(s):
    """Close with a reset (SO_LINGER 0), as a crashed client would."""
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    s.close()


# ---- the tests -------------------------------------------------------------

def uploads_seen(port):
    """How many requests to /v1/attention the server has begun and not
    answered: in flight (beside this poll) or ended unanswered. One I/O
    thread renders /metrics and ends requests, so the two counts agree."""
    m = attnd.metrics(port)
    return m.get(IN_FLIGHT, 0) - 1 + m.get(ATTENTION_ABORTED, 0) if m else None


class LongClient(threading.Thread):
    """One long request sent whole, then its answer read to the end."""

    def __init__(self, port, body):
        super().__init__()
        self.port, self.body = port, body
        self.response = None

    def run(self):
        try:
            s = attnd.connect("127.0.0.1", self.port, 60)
            s.sendall(raw_request(self.body))
            self.response = attnd.Reader(s).read(60)
            s.close()
        except OSError as e:
            self.response = attnd.Response()
            self.response.error = repr(e)
