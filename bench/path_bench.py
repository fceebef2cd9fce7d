#!/usr/bin/python3
"""path_bench.py: the request path against the engine alone (issue 15), for `make bench`.

usage: /usr/bin/python3 bench/path_bench.py ATTND TIMER_SO [--rounds N] [--seconds S]

One request shape: model `base` (E = 512, H = 8), embeddings [128, 512], "weights": "none",
sent two ways:
  json     the embeddings as nested JSON numbers, each a float32 written as JavaScript's
           JSON.stringify writes it (the shortest text of the double, up to 17 digits:
           what a browser's Float32Array becomes), answered as JSON numbers;
  base64   {"shape": [128, 512], "base64": ...} (little-endian float32), answered with
           "encoding": "base64".

For each, two measures of build/attnd (started here on 127.0.0.1, an ephemeral port, its
defaults: a worker and an I/O thread per CPU):
  share    sequential requests on one kept-alive connection; the medians of Server-Timing's
           parse, queue, compute, encode and total (headers read to answer made), and
           compute / total: the part of the server's time the engine has;
  rate     wrk -t2 -c(2 x CPUs) for S seconds: requests/s, the server's CPU time per
           request (from /proc), and wrk's own (its user and system time: it runs on the
           same cores, sending the body and reading the answer).
And the ceiling: the engine alone (bench/timer/attnd_timer.c, the same layer shape, one
engine thread each) in one process per CPU at once, for S seconds: forward passes/s on
the same cores. rate / engine is the path's efficiency. Beside it, the bound wrk's own
CPU sets: were the server's work nothing but the engine's, requests/s could reach at most
CPUs / (engine pass + wrk's CPU a request), so `client-bound` = that / engine/s.

Noise: rounds alternate engine, json, base64; each ratio is taken within a round, and the
table shows the median round. Targets (issue 15), PASS / MISS for information only:
compute >= 80% of total with base64 and >= 60% with JSON; requests/s >= 70% of the
engine-alone rate. The exit status is non-zero only when the bench itself fails.
"""
import argparse
import base64
import ctypes
import http.client
import json
import multiprocessing
import os
import random
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

L, E = 128, 512
SEED = 20261202
TIMING = re.compile(r"(\w+);dur=([0-9.]+)")
WRK_LUA = """
local f = assert(io.open(os.getenv("PATH_BENCH_BODY"), "rb"))
wrk.method = "POST"
wrk.path = "/v1/attention"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
"""


def values():
    rng = random.Random(SEED)
    raw = struct.pack("<%df" % (L * E), *(rng.uniform(-1, 1) for _ in range(L * E)))
    return raw, struct.unpack("<%df" % (L * E), raw)


def bodies():
    raw, floats = values()
    rows = [list(floats[i * E:(i + 1) * E]) for i in range(L)]
    as_json = json.dumps({"model": "base", "embeddings": rows, "weights": "none"})
    as_b64 = json.dumps({"model": "base", "weights": "none", "encoding": "base64",
                         "embeddings": {"shape": [L, E],
                                        "base64": base64.b64encode(raw).decode()}})
    return {"json": as_json.encode(), "base64": as_b64.encode()}, raw


def start_attnd(binary):
    p = subprocess.Popen([binary, "--host", "127.0.0.1", "--port", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    m = re.match(r"listening on 127\.0\.0\.1:(\d+)", line)
    if not m:
        p.kill()
        raise RuntimeError("attnd did not start: %r" % line)
    return p, int(m.group(1))


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def share(port, body, n):
    """Medians of the Server-Timing parts over n sequential requests."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    parts = {}
    for _ in range(n):
        conn.request("POST", "/v1/attention", body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        if resp.status != 200:
            raise RuntimeError("attnd answered %d" % resp.status)
        for name, ms in TIMING.findall(resp.getheader("Server-Timing", "")):
            parts.setdefault(name, []).append(float(ms))
    conn.close()
    return {k: statistics.median(v) for k, v in parts.items()}


def children_cpu():
    t = os.times()
    return t.children_user + t.children_system


def non2xx_so_far(port):
    """The answers outside 2xx attnd has sent (its /metrics), every route and code but 499
    and 0: requests whose client left before their answer, as wrk's connections do when its
    time is up (wrk's own timeouts would show in its socket errors).

    Counted by the server, not by a Lua response() callback in wrk: with one, wrk copies
    every answer's headers and body into Lua, which on these 0.8 MB answers cost it 1.3 ms
    of CPU a request (wrk/req 1.62 -> 0.27 ms base64, 3.9 -> 0.9 ms JSON, 2026-12-03) on
    the cores the server is measured on."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    left = re.compile(r'code="(2\d\d|499|0)"')
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("attnd_http_requests_total{") and not left.search(line))


def rate(port, pid, body_file, seconds, conns, lua):
    """requests/s, the server's and wrk's CPU ms a request, non-2xx answers"""
    env = dict(os.environ, PATH_BENCH_BODY=body_file)
    bad0 = non2xx_so_far(port)
    c0, w0 = cpu_seconds(pid), children_cpu()
    out = subprocess.run(["wrk", "-t2", "-c%d" % conns, "-d%ds" % seconds, "--timeout", "30s",
                          "-s", lua, "http://127.0.0.1:%d" % port],
                         env=env, capture_output=True, text=True, check=True).stdout
    c1, w1 = cpu_seconds(pid), children_cpu()
    rps = float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1))
    n = max(int(re.search(r"(\d+) requests in", out).group(1)), 1)
    non2xx = int(non2xx_so_far(port) - bad0)
    return rps, (c1 - c0) / n * 1e3, (w1 - w0) / n * 1e3, non2xx


def client_bound(row, cpus):
    """The most of the engine-alone rate reachable with wrk's CPU on the same cores."""
    if row["engine"] <= 0:
        return 0
    pass_s = cpus / row["engine"]  # one engine pass's CPU seconds
    return cpus / (pass_s + row["wrk_ms"] / 1e3) / row["engine"]


def engine_child(timer_so, raw, seconds, out):
    # one OpenBLAS thread from the start, as attnd runs it: attnd_timer_run
    # otherwise lowers the count for each call and sleeps first
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    lib = ctypes.CDLL(timer_so)
    lib.attnd_timer_setup.argtypes = (ctypes.c_int, ctypes.c_uint64)
    lib.attnd_timer_run.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                                    ctypes.c_int, ctypes.POINTER(ctypes.c_double))
    if lib.attnd_timer_setup(1, 42) != 0:
        out.put(-1)
        return
    x = ctypes.create_string_buffer(raw, len(raw))
    ms = (ctypes.c_double * 32)()
    done = 0
    t_end = time.monotonic() + seconds
    lib.attnd_timer_run(1, L, 0, x, 2, ms)  # warm-up
    t0 = time.monotonic()
    while time.monotonic() < t_end:
        if lib.attnd_timer_run(1, L, 0, x, 32, ms) != 0:
            out.put(-1)
            return
        done += 32
    out.put(done / (time.monotonic() - t0))


def engine_rate(timer_so, raw, seconds, procs):
    """Forward passes/s of `procs` one-thread engines at once."""
    q = multiprocessing.Queue()
    ps = [multiprocessing.Process(target=engine_child, args=(timer_so, raw, seconds, q))
          for _ in range(procs)]
    for p in ps:
        p.start()
    rates = [q.get() for _ in ps]
    for p in ps:
        p.join()
    if min(rates) < 0:
        raise RuntimeError("the engine timer failed")
    return sum(rates)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("attnd")
    ap.add_argument("timer_so")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=4)
    ap.add_argument("--requests", type=int, default=40)
    args = ap.parse_args()
    if shutil.which("wrk") is None:
        print("path_bench: wrk not installed (apt-get install wrk), skipped")
        return 0
    cpus = len(os.sched_getaffinity(0))
    conns = 2 * cpus
    work = tempfile.mkdtemp(prefix="path_bench.")
    payloads, raw = bodies()
    files = {}
    for k, b in payloads.items():
        files[k] = os.path.join(work, k + ".json")
        with open(files[k], "wb") as f:
            f.write(b)
    lua = os.path.join(work, "body.lua")
    with open(lua, "w") as f:
        f.write(WRK_LUA)
    proc, port = start_attnd(args.attnd)
    rows = []
    try:
        share(port, payloads["json"], 3)  # warm-up: the model's pages, the arenas
        for r in range(args.rounds):
            eng = engine_rate(args.timer_so, raw, args.seconds, cpus)
            for k in ("json", "base64"):
                t = share(port, payloads[k], args.requests)
                rps, cpu_ms, wrk_ms, non2xx = rate(port, proc.pid, files[k], args.seconds,
                                                   conns, lua)
                rows.append(dict(round=r, kind=k, engine=eng, rps=rps, cpu_ms=cpu_ms,
                                 wrk_ms=wrk_ms, non2xx=non2xx, **t))
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(work, ignore_errors=True)

    print("request path vs engine: base, embeddings [%d, %d], no weights; %d CPUs, "
          "%d rounds, wrk -t2 -c%d -d%ds" % (L, E, cpus, args.rounds, conns, args.seconds))
    print("body MB: json %.2f, base64 %.2f" % (len(payloads["json"]) / 1e6,
                                                len(payloads["base64"]) / 1e6))
    hdr = ("%-7s %8s %8s %8s %8s %8s %8s %8s %9s %8s %8s %8s %13s %7s" %
           ("body", "parse", "queue", "compute", "encode", "total", "share",
            "req/s", "engine/s", "of-eng", "cpu/req", "wrk/req", "client-bound", "non2xx"))
    print("(Server-Timing medians in ms over %d sequential requests; share = compute / total;"
          " req/s under wrk; engine/s: %d one-thread engines at once; of-eng = req/s / "
          "engine/s; cpu/req, wrk/req: the server's and wrk's CPU ms per request; "
          "client-bound: the most of engine/s wrk's own CPU leaves reachable, "
          "%d / (%d / engine/s + wrk/req) / engine/s; each the median round)"
          % (args.requests, cpus, cpus, cpus))
    print(hdr)
    verdicts = []
    for k, target in (("json", 0.60), ("base64", 0.80)):
        rs = [x for x in rows if x["kind"] == k]
        for x in rs:
            x["share"] = x["compute"] / x["total"] if x["total"] > 0 else 0
            x["of_eng"] = x["rps"] / x["engine"] if x["engine"] > 0 else 0
            x["bound"] = client_bound(x, cpus)
        mid = sorted(rs, key=lambda x: x["of_eng"])[len(rs) // 2]
        med = {key: statistics.median(x[key] for x in rs)
               for key in ("parse", "queue", "compute", "encode", "total", "share")}
        print("%-7s %8.3f %8.3f %8.3f %8.3f %8.3f %7.0f%% %8.0f %9.0f %7.0f%% %8.2f %8.2f %12.0f%% "
              "%7d" %
              (k, med["parse"], med["queue"], med["compute"], med["encode"], med["total"],
               100 * med["share"], mid["rps"], mid["engine"], 100 * mid["of_eng"],
               mid["cpu_ms"], mid["wrk_ms"], 100 * mid["bound"], sum(x["non2xx"] for x in rs)))
        verdicts.append("%s: compute %.0f%% of total (target >= %.0f%%): %s" %
                        (k, 100 * med["share"], 100 * target,
                         "PASS" if med["share"] >= target else "MISS"))
        verdicts.append("%s: %.0f req/s = %.0f%% of the engine alone (target >= 70%%): %s" %
                        (k, mid["rps"], 100 * mid["of_eng"],
                         "PASS" if mid["of_eng"] >= 0.70 else "MISS"))
    for v in verdicts:
        print(v)
    return 0


if __name__ == "__main__":
    sys.exit(main())
