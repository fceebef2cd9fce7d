"""attnd.py: what the daemon-level Python suites share (tests/daemon/hostile,
tests/daemon/faults, tests/daemon/soak, tests/daemon/concurrency). Standard library only, for
/usr/bin/python3.

  Daemon       starts ${ATTND_BIN:-build/attnd} on 127.0.0.1 --port 0, reads
               `listening on HOST:PORT`, samples its RSS and open fds from
               /proc, stops it by pid (SIGTERM, then SIGKILL after a bound).
  exchange     one raw HTTP/1.1 exchange over a socket: bytes out, a parsed
               Response (status, headers, body, whether the server closed)
               back, bounded by a timeout.
  wait_metrics polls /metrics until its gauges and counters show a state
               (a request on a worker, so many queued): what a test waits
               for instead of a sleep that guesses how long things take.
  Report       counts checks, prints `name: ok` / `name: FAIL why`, and the
               closing `<suite>: N passed, M failed` line.

Only loopback addresses are ever a target: Daemon refuses any other host.
Every wait here is bounded by a timeout; nothing loops without a count.
"""
import collections
import ipaddress
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def attnd_bin():
    path = os.environ.get("ATTND_BIN", "build/attnd")
    return path if os.path.isabs(path) else os.path.join(ROOT, path)


def _loopback(host):
    return ipaddress.ip_address(host).is_loopback


class Daemon:
    """One attnd process. args are extra flags; stderr (the access log) goes
    to a temporary file (or nowhere with log=False) so it can never fill a
    pipe and block the daemon."""

    def __init__(self, args=(), host="127.0.0.1", port=0, log=True, start_timeout=30.0):
        if not _loopback(host):
            raise ValueError("only loopback addresses are a target: %s" % host)
        self.host = host
        self.args = list(args)
        self.logfile = tempfile.NamedTemporaryFile(prefix="attnd-", suffix=".log", delete=False) if log else None
        cmd = [attnd_bin(), "--host", host, "--port", str(port)] + self.args
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                     stderr=self.logfile if log else subprocess.DEVNULL)
        self.pid = self.proc.pid
        self.port = self._read_port(start_timeout)
        self.started_at = time.monotonic()

    def _read_port(self, timeout):
        deadline = time.monotonic() + timeout
        line = b""
        while time.monotonic() < deadline and not line.endswith(b"\n"):
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            c = os.read(self.proc.stdout.fileno(), 1)
            if not c:
                break
            line += c
        m = re.match(rb"listening on (\S+):(\d+)", line)
        if m is None:
            self.kill()
            raise RuntimeError("attnd did not start: %r (log: %s)" % (line, self.log_tail()))
        return int(m.group(2))

    def alive(self):
        return self.proc.poll() is None

    def sanitizer(self):
        """The sanitizer the binary runs under (make test SANITIZE=...), or
        None: "AddressSanitizer", whose quarantine holds freed memory and
        whose shadow pages count in RSS (LeakSanitizer reports leaks at exit
        instead), or "ThreadSanitizer", whose shadow is more than twice the
        memory the daemon touches. The memory checks mean nothing under
        either."""
        try:
            with open("/proc/%d/maps" % self.pid) as f:
                maps = f.read()
        except OSError:
            return None
        if "libasan" in maps:
            return "AddressSanitizer"
        if "libtsan" in maps:
            return "ThreadSanitizer"
        return None

    def rss_kb(self):
        """VmRSS in KiB, or -1 when the process is gone."""
        try:
            with open("/proc/%d/status" % self.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return -1

    def fds(self):
        """Open file descriptors, or -1 when the process is gone."""
        try:
            return len(os.listdir("/proc/%d/fd" % self.pid))
        except OSError:
            return -1

    def signal(self, sig):
        if self.alive():
            os.kill(self.pid, sig)

    def wait(self, timeout):
        """The exit status, or None if still running after timeout seconds."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self):
        if self.alive():
            self.proc.kill()
        self.proc.wait(timeout=10)

    def stop(self, timeout=15.0):
        """SIGTERM and wait (SIGKILL after timeout); returns the exit status."""
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
        rc = self.wait(timeout)
        if rc is None:
            self.kill()
            rc = self.proc.returncode
        if self.proc.stdout:
            self.proc.stdout.close()
        return rc

    def log_tail(self, n=2000):
        if self.logfile is None:
            return ""
        self.logfile.flush()
        with open(self.logfile.name, "rb") as f:
            data = f.read()
        return data[-n:].decode("utf-8", "replace")

    def cleanup(self):
        if self.proc.returncode is None:
            self.kill()
        if self.logfile is not None:
            self.logfile.close()
            os.unlink(self.logfile.name)
            self.logfile = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        self.cleanup()


class Response:
    def __init__(self):
        self.status = None  # None: no status line arrived
        self.headers = {}  # lower-case name -> value (the last one)
        self.body = b""
        self.complete = False  # the whole body arrived (Content-Length or chunked)
        self.closed = False  # the server closed the connection
        self.error = None  # a socket error or "timeout"
        self.elapsed = 0.0
        self.interim = []  # 1xx statuses seen first

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def error_fields(self):
        """(code, pointer) of an error body; (None, None) when not one."""
        doc = self.json()
        if not isinstance(doc, dict) or not isinstance(doc.get("error"), dict):
            return None, None
        return doc["error"].get("code"), doc["error"].get("pointer", "")

    def __repr__(self):
        return "<%s %s %d bytes%s%s>" % (self.status, "complete" if self.complete else "partial",
                                         len(self.body), " closed" if self.closed else "",
                                         " " + self.error if self.error else "")


def connect(host, port, timeout=10.0, source=None):
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if source is not None:
        s.bind((source, 0))
    s.connect((host, port))
    return s


def _parse_head(head, r):
    lines = head.split(b"\r\n")
    m = re.match(rb"HTTP/1\.[01] (\d{3})", lines[0])
    if m is None:
        raise ValueError("bad status line %r" % lines[0][:80])
    r.status = int(m.group(1))
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        r.headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")


def _dechunk(data):
    """(body, done) of a chunked body received so far."""
    out, pos = b"", 0
    while True:
        end = data.find(b"\r\n", pos)
        if end < 0:
            return out, False
        size = int(data[pos:end].split(b";")[0] or b"0", 16)
        if size == 0:
            return out, data.find(b"\r\n", end + 2) >= 0
        if len(data) < end + 2 + size + 2:
            return out, False
        out += data[end + 2:end + 2 + size]
        pos = end + 2 + size + 2


class Reader:
    """Reads responses off one socket, keeping bytes past the first."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = bytearray()  # appended in place: a 56 MB answer arrives in 64 KB reads
        self.eof = False

    def _fill(self, deadline):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout("timeout")
        self.sock.settimeout(remaining)
        c = self.sock.recv(1 << 20)
        if not c:
            self.eof = True
        self.buf += c

    def read(self, timeout, head_only_method=False, limit=None):
        """One response (1xx interim answers recorded and skipped). limit:
        stop once that many body bytes arrived (complete stays False)."""
        r = Response()
        t0 = time.monotonic()
        deadline = t0 + timeout
        try:
            while True:
                while b"\r\n\r\n" not in self.buf and not self.eof:
                    self._fill(deadline)
                if b"\r\n\r\n" not in self.buf:
                    r.closed = True
                    break
                end = self.buf.index(b"\r\n\r\n")
                head = bytes(self.buf[:end])
                del self.buf[:end + 4]
                _parse_head(head, r)
                if 100 <= r.status < 200:
                    r.interim.append(r.status)
                    r.status, r.headers = None, {}
                    continue
                break
            if r.status is not None:
                self._body(r, deadline, head_only_method, limit)
        except (socket.timeout, TimeoutError):
            r.error = "timeout"
        except OSError as e:
            r.error = type(e).__name__
            r.closed = True
        except ValueError as e:
            r.error = "bad response: %s" % e
        r.elapsed = time.monotonic() - t0
        if self.eof:
            r.closed = True
        return r

    def _body(self, r, deadline, head_only_method, limit):
        if head_only_method or r.status in (204, 304):
            r.complete = True
            return
        if "chunked" in r.headers.get("transfer-encoding", "").lower():
            while True:
                body, done = _dechunk(bytes(self.buf))
                if done or self.eof:
                    break
                self._fill(deadline)
            r.body, r.complete = body, done
            self.buf = bytearray()
            return
        if "content-length" in r.headers:
            n = int(r.headers["content-length"])
            while len(self.buf) < n and not self.eof and (limit is None or len(self.buf) < limit):
                self._fill(deadline)
            r.body = bytes(self.buf[:n])
            del self.buf[:n]
            r.complete = len(r.body) == n
            return
        while not self.eof:  # delimited by close
            self._fill(deadline)
        r.body, self.buf, r.complete = bytes(self.buf), bytearray(), True


def request_bytes(method, path, body=b"", headers=(), content_type="application/json"):
    """An HTTP/1.1 request with Host and (when body or POST) Content-Length."""
    if isinstance(body, str):
        body = body.encode()
    lines = ["%s %s HTTP/1.1" % (method, path), "Host: attnd"]
    if content_type and (body or method == "POST"):
        lines.append("Content-Type: " + content_type)
    lines += list(headers)
    if body or method == "POST":
        lines.append("Content-Length: %d" % len(body))
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def exchange(port, raw, timeout=10.0, host="127.0.0.1", source=None):
    """Sends raw on a new connection and reads one response; the connection
    is closed afterwards. Never raises for network trouble: see .error."""
    t0 = time.monotonic()
    try:
        s = connect(host, port, timeout, source)
    except OSError as e:
        r = Response()
        r.error = "connect: " + type(e).__name__
        return r
    try:
        try:
            s.sendall(raw)
        except OSError:
            pass  # the server may answer (413) and close before reading it all
        r = Reader(s).read(max(0.1, timeout - (time.monotonic() - t0)), raw.startswith(b"HEAD "))
    finally:
        s.close()
    r.elapsed = time.monotonic() - t0
    return r


def get(port, path, timeout=10.0, host="127.0.0.1"):
    return exchange(port, request_bytes("GET", path), timeout, host)


def post(port, path, body, timeout=60.0, host="127.0.0.1", headers=()):
    if not isinstance(body, (bytes, str)):
        body = json.dumps(body, separators=(",", ":"))
    return exchange(port, request_bytes("POST", path, body, headers), timeout, host)


def healthz_ms(port, timeout=5.0):
    """Milliseconds for a whole GET /healthz on a new connection, or None
    unless it answered 200."""
    r = get(port, "/healthz", timeout)
    if r.status != 200 or not r.complete:
        return None
    return r.elapsed * 1e3


def metrics(port):
    """Every sample of /metrics, {"name{labels}": value} as printed; {} when
    it does not answer 200."""
    r = get(port, "/metrics")
    if r.status != 200:
        return {}
    return {m.group(1).decode(): float(m.group(2))
            for m in re.finditer(rb"^([a-z_]+(?:\{[^}]*\})?) ([0-9.eE+-]+)$", r.body, re.M)}


def metric(port, series):
    """The value of one sample ("name" or "name{labels}" as printed), or None."""
    return metrics(port).get(series)


def wait_metrics(port, want, timeout, step=0.01):
    """Polls /metrics until want holds of its samples: want maps a series to
    its value or to a predicate on it, or is a predicate on all the samples
    (a dict). A series the daemon does not print (a counter still at 0)
    reads as 0. Each poll is a request, counted in
    attnd_http_requests_in_flight. Returns (ok, the last samples)."""
    last = {}

    def holds():
        got = metrics(port)
        if not got:
            return False  # no answer
        last.clear()
        last.update(got)
        samples = collections.defaultdict(float, got)
        if callable(want):
            return want(samples)
        return all(w(samples[k]) if callable(w) else samples[k] == w for k, w in want.items())

    return bool(wait_until(holds, timeout, step)), last


def memory_check(report, daemon, name, ok, why):
    """report.check, or a note that it was skipped under a sanitizer."""
    sanitizer = daemon.sanitizer()
    if sanitizer is not None:
        report.note("%s: skipped under %s (its shadow memory counts in RSS)" % (name, sanitizer))
        return True
    return report.check(name, ok, why)


class Report:
    def __init__(self, suite):
        self.suite = suite
        self.passed = 0
        self.failed = 0
        self.failures = []

    def check(self, name, ok, why=""):
        if ok:
            self.passed += 1
            print("%s: ok" % name, flush=True)
        else:
            self.failed += 1
            self.failures.append(name)
            print("%s: FAIL %s" % (name, why), flush=True)
        return ok

    def note(self, text):
        print("  " + text, flush=True)

    def finish(self):
        print("%s: %d passed, %d failed" % (self.suite, self.passed, self.failed), flush=True)
        if self.failures:
            print("%s: failed: %s" % (self.suite, ", ".join(self.failures)), flush=True)
        return 0 if self.failed == 0 else 1


def wait_until(pred, timeout, step=0.05):
    """Polls pred() until true or timeout seconds passed; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(step)


def settle_rss(daemon, seconds=1.0):
    """RSS after a short pause (freed memory and worker arenas settle)."""
    time.sleep(seconds)
    return daemon.rss_kb()


if __name__ == "__main__":
    sys.exit("attnd.py is a module for the test runners")
