#!/usr/bin/python3
"""split_bench.py: the split row of `make bench`: one large request's latency
with and without idle workers lent to its engine call (server/main.c, the
thread model).

Starts two daemons on 127.0.0.1 with ephemeral ports, both --threads 2:
"split" (the default, a large request borrows the idle worker and runs its
engine call on 2 threads) and "not split" (--split-threads 1, one thread).
Sends one request at a time, alternating between them for ROUNDS rounds
after a warm-up, so that load elsewhere on the machine hits both alike, and
prints the median and best latency of each (wall clock at the client, the
whole exchange) and the engine's own time (Server-Timing compute), with the
ratio of the medians. "other CPU": the busy time of every process but the
two daemons and this one during the rounds, in % of all cores (as
http_bench.sh's): a row with a large value was measured on a busy machine,
where the split has no idle core to gain from. The request: POST /v1/attention on the built-in
`base` (E 512, H 8), 2048 token ids, no weights, the output as base64 (so
that the answer's text does not swamp the engine's time).

Also checks what the bench relies on: both answer 200 with the same bytes
(usage aside), and the split daemon's calls were split
(attnd_compute_split_total). Exits 1 when a check fails or a daemon does not
start, 0 otherwise.

Usage: /usr/bin/python3 bench/split_bench.py [ATTND] (default build/attnd);
SPLIT_BENCH_ROUNDS (default 9), SPLIT_BENCH_L (default 2048).
Standard library only.
"""
import http.client
import json
import os
import random
import re
import select
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUNDS = int(os.environ.get("SPLIT_BENCH_ROUNDS", "9"))
L = int(os.environ.get("SPLIT_BENCH_L", "2048"))
DAEMONS = [("not split", ["--threads", "2", "--split-threads", "1"]),
           ("split", ["--threads", "2"])]


class Daemon:
    def __init__(self, binary, args):
        self.proc = subprocess.Popen([binary, "--host", "127.0.0.1", "--port", "0"] + args,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     stdin=subprocess.DEVNULL)
        self.port = self._port(30.0)

    def _port(self, timeout):
        line, deadline = b"", time.monotonic() + timeout
        while not line.endswith(b"\n") and time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], deadline - time.monotonic())
            c = os.read(self.proc.stdout.fileno(), 1) if ready else b""
            if not c:
                break
            line += c
        m = re.match(rb"listening on \S+:(\d+)", line)
        if m is None:
            self.stop()
            sys.exit("split_bench: attnd did not start: %r" % line)
        return int(m.group(1))

    def request(self, method, path, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        headers = {"Content-Type": "application/json"} if body is not None else {}
        t0 = time.perf_counter()
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        seconds = time.perf_counter() - t0
        timing = resp.getheader("Server-Timing") or ""
        conn.close()
        m = re.search(r"compute;dur=([0-9.]+)", timing)
        return resp.status, data, seconds, float(m.group(1)) if m else float("nan")

    def metric(self, name):
        _, data, _, _ = self.request("GET", "/metrics")
        m = re.search(rb"^" + name.encode() + rb" (\S+)$", data, re.M)
        return float(m.group(1)) if m else -1.0

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def cpu_totals():
    """(busy, total) clock ticks of all cores so far, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
    return busy, busy + v[3] + v[4]


def process_ticks(pid):
    """user + system clock ticks of pid so far (0 when it is gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except OSError:
        return 0


def stable(answer):
    """The answer without its usage member (its milliseconds vary)."""
    return answer.split(b',"usage":')[0]


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "attnd")
    rng = random.Random(2048)
    body = json.dumps({"model": "base", "weights": "none", "encoding": "base64",
                       "tokens": [rng.randrange(32000) for _ in range(L)]},
                      separators=(",", ":")).encode()
    daemons = []
    try:
        for name, args in DAEMONS:
            daemons.append((name, args, Daemon(binary, args)))
        wall = {name: [] for name, _, _ in daemons}
        engine = {name: [] for name, _, _ in daemons}
        answers = {}
        hz = os.sysconf("SC_CLK_TCK")
        t0, own0 = cpu_totals(), os.times()
        d0 = sum(process_ticks(d.proc.pid) for _, _, d in daemons)
        for r in range(ROUNDS + 1):  # round 0 warms up
            for name, _, d in daemons:
                status, data, seconds, compute_ms = d.request("POST", "/v1/attention", body)
                if status != 200:
                    sys.exit("split_bench: %s answered %d: %.200r" % (name, status, data))
                answers[name] = stable(data)
                if r > 0:
                    wall[name].append(seconds * 1e3)
                    engine[name].append(compute_ms)
        t1, own1 = cpu_totals(), os.times()
        d1 = sum(process_ticks(d.proc.pid) for _, _, d in daemons)
        own = (own1.user + own1.system - own0.user - own0.system) * hz
        busy, total = t1[0] - t0[0], t1[1] - t0[1]
        other = max(0.0, 100.0 * (busy - (d1 - d0) - own) / total) if total > 0 else 0.0
        splits = daemons[1][2].metric("attnd_compute_split_total")
        unsplit = daemons[0][2].metric("attnd_compute_split_total")
    finally:
        for _, _, d in daemons:
            d.stop()
    print("split bench: one POST /v1/attention, model base, L = %d, no weights, base64;"
          " %d CPUs; %d alternating rounds after a warm-up; other CPU %.0f%%"
          % (L, os.cpu_count(), ROUNDS, other))
    print("%-12s %-34s %12s %12s %14s" % ("", "daemon", "p50 ms", "best ms", "compute p50"))
    for name, args, _ in daemons:
        print("%-12s %-34s %12.1f %12.1f %14.1f" % (
            name, "attnd " + " ".join(args), statistics.median(wall[name]), min(wall[name]),
            statistics.median(engine[name])))
    ratio = statistics.median(wall["not split"]) / statistics.median(wall["split"])
    ratio_engine = statistics.median(engine["not split"]) / statistics.median(engine["split"])
    print("%-12s %-34s %11.2fx %12s %13.2fx" % ("ratio", "not split / split", ratio, "",
                                                   ratio_engine))
    ok = True
    if answers["split"] != answers["not split"]:
        print("split_bench: FAIL: the two daemons' answers differ")
        ok = False
    if splits < ROUNDS or unsplit != 0:
        print("split_bench: FAIL: %g of %d calls split (want all), %g unsplit ones split"
              % (splits, ROUNDS + 1, unsplit))
        ok = False
    if (os.cpu_count() or 1) < 2:
        print("split_bench: one CPU: a split cannot gain here")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
