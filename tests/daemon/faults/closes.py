"""closes.py: fault tests of how attnd ends a connection whose client is still
sending, or has gone silent mid-request (issue 17); tests/daemon/faults/run.py
runs them with the others (`make faults`, `run.py --only linger`).

  linger_413   --max-body 65536, 20 times each: a client streams a chunked
               body without end and sends 64 KiB more once the 413 starts to
               arrive (a client that notices late); a client sends a
               Content-Length past the limit and the whole body at once (413
               from the headers alone, the body never read); a client sends
               a request with bad framing and 64 KiB behind it (400, then
               close); a header line without a colon and 64 KiB behind it
               (libmicrohttpd's own 400 page). Each reads the whole answer
               (JSON, as many bytes as Content-Length says, Connection:
               close; the page: its length), then EOF, and its socket was
               never reset: TCP_INFO says CLOSE-WAIT (the server's FIN came,
               no RST), SO_ERROR is 0. Without the lingering close
               (server/linger.h) the server's kernel reset each of them.
               attnd_lingering_closes_total{end="client_closed"} counts them,
               the lingering gauge returns to 0, descriptors to baseline.
  linger_408   --request-deadline 1: 20 clients at once trickle a body (10
               bytes every 50 ms) and send three more pieces once the 408
               starts to arrive: each reads the whole 408, then EOF, no reset.
  linger_bounds
               a client that reads its 413 and then sends without end is
               lingered no longer than 2 s or 8 MiB (lingering closes ended
               by time or bytes), then closed; one that reads its 413 and
               then stays silent, open, is lingered when SIGTERM comes: the
               drain waits for it (2 s at most), attnd exits 0, and that
               client was never reset.
  idle_408     --timeout 1 --request-deadline 3: the headers and part of a
               body (Content-Length; chunked; and on an inline route, GET
               /healthz with a body), then silence: 408 request_timeout naming
               --timeout, between 1 and 2 s after the headers (before the
               deadline), JSON, Connection: close, then EOF, no reset, and
               the request freed a second later though the client stays
               open (libmicrohttpd's raised timeout); a body
               trickled a byte every 0.4 s is never idle that long: its 408,
               naming --request-deadline, comes at 3 s; a keep-alive
               connection idle after a whole answer is closed at --timeout
               with no byte sent (nothing is in progress to answer).
"""
import json
import re
import select
import signal
import socket
import threading
import time

import attnd

TCP_CLOSE, TCP_CLOSE_WAIT = 7, 8  # include/net/tcp_states.h
LINGERED = 'attnd_lingering_closes_total{end="%s"}'
LINGERING = "attnd_connections_lingering"
IN_FLIGHT = "attnd_http_requests_in_flight"  # the poll's own request is one
ATTENTION_HEAD = (b"POST /v1/attention HTTP/1.1\r\nHost: attnd\r\n"
                  b"Content-Type: application/json\r\n")


def tcp_state(s):
    """The socket's TCP state (tcpi_state, the first byte of TCP_INFO)."""
    return s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0]


def read_to_eof(s, timeout):
    """(what s receives until the server's EOF, '' or the error that ended it)."""
    s.setblocking(True)
    s.settimeout(timeout)
    got = b""
    try:
        while True:
            c = s.recv(65536)
            if not c:
                return got, ""
            got += c
    except OSError as e:
        return got, repr(e)


def whole_answer(got, status, code, message=None):
    """'' when got is exactly one answer of status with Connection: close and
    a JSON error body of code (its message containing message) of
    Content-Length bytes; else why not. code None: libmicrohttpd's own
    answer (an HTML page), whose status and length alone are checked."""
    head, sep, body = got.partition(b"\r\n\r\n")
    if not sep:
        return "no whole head: %r" % got[:120]
    lines = head.split(b"\r\n")
    if not lines[0].startswith(b"HTTP/1.1 %d " % status):
        return "status line %r" % lines[0]
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    if headers.get(b"content-length") != str(len(body)).encode():
        return "%d body bytes, Content-Length %s" % (len(body), headers.get(b"content-length"))
    if code is None:
        return ""
    if headers.get(b"connection", b"").lower() != b"close":
        return "no Connection: close"
    try:
        err = json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        return "body %r" % body[:120]
    if err.get("code") != code:
        return "code %r" % err.get("code")
    if message is not None and message not in err.get("message", ""):
        return "message %r" % err.get("message")
    return ""


def ended_cleanly(s, got, end, status, code, message=None):
    """'' when s read the whole answer then EOF and was never reset."""
    why = whole_answer(got, status, code, message)
    if why:
        return why + (" (%s)" % end if end else "")
    if end:
        return "no EOF: %s" % end
    time.sleep(0.05)  # a reset would come right after the FIN
    err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    state = tcp_state(s)
    if err != 0 or state != TCP_CLOSE_WAIT:
        return "reset: SO_ERROR %d, TCP state %d (7 is CLOSE: reset)" % (err, state)
    return ""


def send_ignoring(s, data):
    """Sends what the socket takes now; a reset or EPIPE ends nothing here."""
    try:
        return s.send(data)
    except (BlockingIOError, InterruptedError):
        return 0
    except OSError:
        return -1


def endless_chunked(port):
    """Streams a chunked body until the answer begins, then 64 KiB more."""
    piece = b"[" * 8192
    chunk = b"%x\r\n" % len(piece) + piece + b"\r\n"
    s = attnd.connect("127.0.0.1", port, 10.0)
    s.sendall(ATTENTION_HEAD + b"Transfer-Encoding: chunked\r\n\r\n")
    s.setblocking(False)
    extra, t0 = 0, time.monotonic()
    while extra < 64 << 10 and time.monotonic() - t0 < 10:
        ready_r, ready_w, _ = select.select([s], [s], [], 1.0)
        if ready_w and send_ignoring(s, chunk) < 0:
            break
        if ready_r:
            extra += len(chunk)
    return s


def declared_too_large(port):
    """A Content-Length past the limit, and the whole body at once."""
    body = b"[" * (256 << 10)
    s = attnd.connect("127.0.0.1", port, 10.0)
    try:
        s.sendall(ATTENTION_HEAD + b"Content-Length: %d\r\n\r\n" % len(body) + body)
    except OSError:
        pass  # a reset: ended_cleanly says so
    return s


def bad_framing(port):
    """Content-Length beside Transfer-Encoding (400, close), 64 KiB behind."""
    s = attnd.connect("127.0.0.1", port, 10.0)
    try:
        s.sendall(ATTENTION_HEAD + b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n" +
                  b"[" * (64 << 10))
    except OSError:
        pass
    return s


def mhd_bad_request(port):
    """A header line without a colon, answered 400 by libmicrohttpd itself
    before attnd sees the request, with 64 KiB of body behind it."""
    s = attnd.connect("127.0.0.1", port, 10.0)
    try:
        s.sendall(ATTENTION_HEAD + b"NoColonHere\r\nContent-Length: 65536\r\n\r\n" +
                  b"[" * (64 << 10))
    except OSError:
        pass
    return s


def lingered(port, end):
    return attnd.metric(port, LINGERED % end) or 0


def test_linger_413(report, run):
    """run: run.py's helpers (baseline, settled, shown, WORKERS)."""
    limit, times = 65536, 20
    with attnd.Daemon(["--threads", str(run.WORKERS), "--max-body", str(limit)]) as d:
        fds0, rss0 = run.baseline(d)
        clean0 = lingered(d.port, "client_closed")
        kinds = [("chunked", endless_chunked, 413, "payload_too_large"),
                 ("declared", declared_too_large, 413, "payload_too_large"),
                 ("framing", bad_framing, 400, "bad_request"),
                 ("libmicrohttpd's own 400", mhd_bad_request, 400, None)]
        for name, client, status, code in kinds:
            failures = []
            for _ in range(times):
                s = client(d.port)
                got, end = read_to_eof(s, 10.0)
                why = ended_cleanly(s, got, end, status, code)
                if why:
                    failures.append(why)
                s.close()
            report.check("linger_413 %s: %d times the whole %d, then EOF, never reset"
                         % (name, times, status), not failures,
                         "%d of %d: %s" % (len(failures), times, failures[:3]))
        ok, m = attnd.wait_metrics(d.port, {LINGERING: 0}, 5.0)
        report.check("linger_413: nothing lingering once the clients closed", ok,
                     run.shown(m, LINGERING))
        clean = lingered(d.port, "client_closed") - clean0
        report.check("linger_413: counted as lingering closes the clients ended",
                     clean >= len(kinds) * times - 3, "%d of %d" % (clean, len(kinds) * times))
        report.note("linger_413: %d lingering closes ended by the client, %d by time, %d by "
                    "bytes, %d full" % (clean, lingered(d.port, "time"), lingered(d.port, "bytes"),
                                        lingered(d.port, "full")))
        run.settled(report, "linger_413", d, fds0, rss0)


def keep_sending(s, seconds):
    """Sends without end (errors ignored) for seconds, reading nothing."""
    s.setblocking(False)
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        if send_ignoring(s, b"[" * 65536) < 0:
            return
        select.select([], [s], [], 0.05)


def test_linger_bounds(report, run):
    with attnd.Daemon(["--threads", "2", "--max-body", "65536", "--drain-seconds", "10"]) as d:
        s = endless_chunked(d.port)
        got, end = read_to_eof(s, 10.0)
        why = whole_answer(got, 413, "payload_too_large")
        t0 = time.monotonic()
        keep_sending(s, 4.0)
        ok, m = attnd.wait_metrics(d.port, {LINGERING: 0}, 4.0)
        took = time.monotonic() - t0
        ended = lingered(d.port, "time") + lingered(d.port, "bytes")
        s.close()
        report.check("linger_bounds: a client sending without end after its 413 is closed by a "
                     "bound", not why and ok and ended == 1,
                     "%s; %s; ended by time or bytes: %d" % (why, run.shown(m, LINGERING), ended))
        report.check("linger_bounds: within 2 s (and the tick)", took < 2.5, "%.2f s" % took)
        s = endless_chunked(d.port)
        got, end = read_to_eof(s, 10.0)
        ok, m = attnd.wait_metrics(d.port, {LINGERING: 1}, 2.0)
        report.check("linger_bounds: a silent client, its 413 read, still lingers", ok,
                     run.shown(m, LINGERING))
        t0 = time.monotonic()
        d.signal(signal.SIGTERM)
        rc = d.wait(10.0)
        took = time.monotonic() - t0
        report.check("linger_bounds: SIGTERM: attnd exits 0", rc == 0, "exit status %s" % rc)
        report.check("linger_bounds: SIGTERM: the drain waits for the lingering close, no "
                     "longer than it lasts", took < 3.0, "%.2f s" % took)
        why = ended_cleanly(s, got, end, 413, "payload_too_large")
        s.close()
        report.check("linger_bounds: SIGTERM: that client read its 413, then EOF, never reset",
                     not why, why)
        report.note("linger_bounds: exited %.2f s after SIGTERM with one socket lingering" % took)


def trickle_past_deadline(port, out, i):
    s = attnd.connect("127.0.0.1", port, 10.0)
    s.sendall(ATTENTION_HEAD + b"Content-Length: 100000\r\n\r\n")
    s.setblocking(False)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 10:
        ready, _, _ = select.select([s], [], [], 0.05)
        if ready:
            break
        if send_ignoring(s, b"[" * 10) < 0:
            break
    for _ in range(3):  # a client that notices late
        send_ignoring(s, b"[" * 10)
        time.sleep(0.02)
    got, end = read_to_eof(s, 10.0)
    out[i] = ended_cleanly(s, got, end, 408, "request_timeout")
    s.close()


def test_linger_408(report, run):
    n = 20
    with attnd.Daemon(["--threads", "2", "--request-deadline", "1"]) as d:
        fds0 = d.fds()
        out = [None] * n
        ts = [threading.Thread(target=trickle_past_deadline, args=(d.port, out, i))
              for i in range(n)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(30)
        failures = [w for w in out if w != ""]
        report.check("linger_408: %d trickled bodies each read the whole 408, then EOF, never "
                     "reset" % n, not failures, "%d of %d: %s" % (len(failures), n, failures[:3]))
        ok, m = attnd.wait_metrics(d.port, {LINGERING: 0, IN_FLIGHT: 1}, 5.0)
        report.check("linger_408: nothing lingering or in flight afterwards", ok,
                     run.shown(m, LINGERING, IN_FLIGHT))
        fds = attnd.wait_until(lambda: d.fds() <= fds0 and d.fds(), 5.0) or d.fds()
        report.check("linger_408: descriptors back", fds <= fds0, "%d, baseline %d" % (fds, fds0))


def silent_after(port, data):
    """Sends data, then nothing: (seconds from the send to the server's EOF,
    what came, how reading ended, the socket)."""
    s = attnd.connect("127.0.0.1", port, 10.0)
    t0 = time.monotonic()
    s.sendall(data)
    got, end = read_to_eof(s, 10.0)
    return time.monotonic() - t0, got, end, s


def test_idle_408(report, run):
    timeout, deadline = 1, 3
    idle_msg = "--timeout (%d s)" % timeout
    with attnd.Daemon(["--threads", "2", "--timeout", str(timeout),
                       "--request-deadline", str(deadline)]) as d:
        partial = [("Content-Length", ATTENTION_HEAD + b"Content-Length: 100\r\n\r\n[["),
                   ("chunked", ATTENTION_HEAD + b"Transfer-Encoding: chunked\r\n\r\n2\r\n[[\r\n"),
                   ("inline route", b"GET /healthz HTTP/1.1\r\nHost: attnd\r\n"
                                    b"Content-Length: 100\r\n\r\n[[")]
        for name, data in partial:
            took, got, end, s = silent_after(d.port, data)
            why = ended_cleanly(s, got, end, 408, "request_timeout", idle_msg)
            # the client keeps its socket open, silent: freed a second later
            freed, m = attnd.wait_metrics(d.port, {IN_FLIGHT: 1}, 1.5)
            s.close()
            report.check("idle_408 %s: the request freed within a second of its 408, the "
                         "client silent and open" % name, freed, run.shown(m, IN_FLIGHT))
            report.check("idle_408 %s: a silent partial body gets 408 naming --timeout, then "
                         "EOF, never reset" % name, not why, why)
            report.check("idle_408 %s: at --timeout, before --request-deadline" % name,
                         timeout <= took < timeout + 1.0, "%.2f s" % took)
        # a byte every 0.4 s: never --timeout without one, so the deadline answers
        s = attnd.connect("127.0.0.1", d.port, 10.0)
        s.sendall(ATTENTION_HEAD + b"Content-Length: 100\r\n\r\n")
        t0 = time.monotonic()
        while time.monotonic() - t0 < deadline + 3:
            ready, _, _ = select.select([s], [], [], 0.4)
            if ready or send_ignoring(s, b"[") < 0:
                break
        got, end = read_to_eof(s, 10.0)
        took = time.monotonic() - t0
        why = ended_cleanly(s, got, end, 408, "request_timeout", "--request-deadline")
        s.close()
        report.check("idle_408 trickled: a body trickled faster than --timeout gets the "
                     "deadline's 408", not why, why)
        report.check("idle_408 trickled: at --request-deadline", deadline - 0.1 <= took <
                     deadline + 1.0, "%.2f s" % took)
        # no request in progress: closed at --timeout, no answer
        took, got, end, s = silent_after(d.port, b"GET /healthz HTTP/1.1\r\nHost: attnd\r\n\r\n")
        head_end = got.find(b"\r\n\r\n")
        length = re.search(rb"Content-Length: (\d+)", got[:head_end])
        rest = got[head_end + 4 + int(length.group(1)):] if head_end >= 0 and length else got
        s.close()
        report.check("idle_408 keep-alive: an idle connection after a whole answer is closed, "
                     "with nothing sent", got.startswith(b"HTTP/1.1 200 ") and rest == b""
                     and end == "", "%r then %r (%s)" % (got[:40], rest[:80], end))
        report.check("idle_408 keep-alive: at --timeout", timeout <= took < timeout + 1.0,
                     "%.2f s" % took)
        logged = attnd.wait_until(lambda: len(re.findall(r" 408 ", d.log_tail(1 << 16))) >= 4,
                                  5.0)
        report.check("idle_408: each 408 logged", logged, d.log_tail(600))
    # --timeout longer than what is left of the deadline: a body trickled up
    # to the deadline's 408, the client then silent and open, is freed within
    # 2 s of the 408, not at --timeout + 1 after its last byte (4 s here)
    with attnd.Daemon(["--threads", "2", "--timeout", "3", "--request-deadline", "5"]) as d:
        s = attnd.connect("127.0.0.1", d.port, 10.0)
        s.sendall(ATTENTION_HEAD + b"Content-Length: 100\r\n\r\n")
        t0 = time.monotonic()
        while time.monotonic() - t0 < 8:
            ready, _, _ = select.select([s], [], [], 0.4)
            if ready or send_ignoring(s, b"[") < 0:
                break
        got, end = read_to_eof(s, 10.0)
        t408 = time.monotonic()
        why = ended_cleanly(s, got, end, 408, "request_timeout", "--request-deadline")
        freed, m = attnd.wait_metrics(d.port, {IN_FLIGHT: 1}, 4.0)
        after = time.monotonic() - t408
        s.close()
        report.check("idle_408 deadline, then silent: the deadline's 408, then EOF", not why, why)
        report.check("idle_408 deadline, then silent: the request freed within 2 s of its 408, "
                     "not at --timeout", freed and after < 2.6,
                     "%.2f s after the 408; %s" % (after, run.shown(m, IN_FLIGHT)))
