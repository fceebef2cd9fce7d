#!/usr/bin/python3
"""run.py: the soak (`make soak`).

wrk drives a mix of valid, invalid and oversized requests (tests/lib/
mix.lua picks a body at random for every request) at one attnd for a bounded
time, while this script samples the daemon's resident memory (VmRSS) and
open descriptors once a second: before, during and after. It prints the
samples and checks:

  - only the expected statuses came back (200, 400, 413, 422; 503 when the
    queue is full) and plenty of 200s; no wrk timeouts;
  - the run keeps no memory: RSS once attnd has given freed memory back
    (server/main.c, trim_when_idle: after a quiet 1 s tick) is, after the
    run, within max(16 MiB, 10 %) of what it was, the same way, after the
    warm-up. Both readings are taken when RSS has stopped falling in the
    quiet that follows the load, so what the malloc arenas hold for the mix
    in flight is not in either. That working size is not a leak and is not
    steady: RSS under load climbed 150 -> 200 MiB in a run's last 15 s on
    the 2-core CI machine, and a check of the run's own samples (its last
    third's median against its first's, 24 MiB or 10 %, or the last third
    settled) failed CI with no leak while the trimmed RSS was 107 MiB after
    against 150 MiB of baseline; two local runs then read 122 -> 108 and
    104.6 -> 104.5 MiB trimmed (and 104.9 -> 105.1, 104.7 -> 105.4, 104.7
    -> 104.6 with this check). A malloc(256) leaked by every request (96,000
    in 60 s) read 107 -> 148 MiB and failed it, where the run's medians had
    grown 15 MiB, inside the old bound. The medians are printed for
    information;
  - descriptors stay within the baseline plus twice wrk's connections (and
    4) during the run, and return to the baseline after: a connection
    answered 413 is closed by attnd, which then lingers on a duplicate of
    its socket (server/linger.h) while wrk's next connection is already
    open; with one in 25 requests a 413 the run saw 5 such over
    connections + 4 once. A descriptor leak grows by thousands;
  - after the run: RSS within max(16 MiB, 10 %) of the baseline (the highest
    RSS of the warm-up), the daemon alive, /healthz under 100 ms, exit 0 on
    SIGTERM. The after phase waits for the trim (rss_when_trimmed: 5 to
    9 s): RSS then falls 25-70 MiB below the baseline. Without that trim,
    what the workers' malloc arenas kept once left RSS 32 MiB over the
    baseline and failed this check in CI.

The warm-up is the same mix in 3 s rounds until RSS stops climbing (at
most half the run, 9 to 30 s), so the malloc arenas of every worker have
reached their working size before the baseline (why that matters:
tests/daemon/hostile/run.py, TOLERANCE). The baseline is the highest RSS of the
warm-up: under load RSS swings by about 10 MiB with what is in flight when
it is sampled.

Usage: /usr/bin/python3 tests/daemon/soak/run.py [--seconds N]   (default
$SOAK_SECONDS or 60). Prints `soak: N passed, M failed`.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib"))
import attnd  # noqa: E402

MIX_LUA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib", "mix.lua")
MAX_BODY = 262144  # small, so that an oversized body costs little to send
CONNECTIONS = 16
WARM_ROUND = 3  # seconds
ALLOWED = {"s200", "s400", "s413", "s422", "s503"}
KEPT_KIB = 16 * 1024  # the run keeps no memory: the bound (see the docstring)
KEPT_FRACTION = 0.10


def bodies():
    """(weight, name, bytes): what the mix sends and why."""
    row = [0.5, -0.25, 0.125, 1.0, -1.0, 0.75, 0.0, -0.5]
    emb = lambda L: [row[i % 8:] + row[:i % 8] for i in range(L)]  # noqa: E731
    j = lambda o: json.dumps(o, separators=(",", ":"), ensure_ascii=False).encode()  # noqa: E731
    return [
        (6, "valid_text", j({"model": "tiny", "text": "나는 맛있는 사과를 먹었다"})),
        (3, "valid_causal_rope", j({"model": "tiny", "embeddings": emb(64), "mask": "causal",
                                    "positional": "rope", "encoding": "base64"})),
        (2, "valid_base_batch", j({"model": "base", "tokens": [[1, 2, 3, 4], [5, 6]], "weights": "mean"})),
        (2, "valid_inline", j({"model": {"d_model": 32, "num_heads": 4, "num_kv_heads": 2, "seed": 3,
                                         "vocab_size": 100}, "tokens": list(range(40))})),
        (2, "valid_sdpa", j({"q": [[[[1, 0], [0, 1]]]], "k": [[[[1, 0], [0, 1], [1, 1]]]],
                             "v": [[[[1, 2], [3, 4], [5, 6]]]], "is_causal": True, "weights": "per_head"})),
        (1, "valid_heavy", j({"model": "tiny", "embeddings": emb(600), "weights": "per_head"})),
        (2, "invalid_json", b'{"model": "tiny", "tokens": [1, 2'),
        (1, "duplicate_key", b'{"model":"tiny","tokens":[1],"tokens":[2]}'),
        (2, "unknown_field", j({"model": "tiny", "tokens": [1], "colour": "blue"})),
        (2, "bad_value", j({"model": "tiny", "embeddings": [[1e39] + row[1:]]})),
        (1, "token_range", j({"model": "tiny", "tokens": [64]})),
        (1, "too_large_for_memory", j({"model": "tiny", "embeddings": {"shape": [1, 70000, 8],
                                                                        "base64": "AAAA"}})),
        (1, "oversized_body", b'{"model":"tiny","text":"' + b"a " * (MAX_BODY // 2 + 100) + b'"}'),
    ]


class Sampler(threading.Thread):
    def __init__(self, d, period=1.0):
        super().__init__(daemon=True)
        self.d, self.period = d, period
        self.samples = []  # (seconds since start, phase, rss KiB, fds)
        self.phase = "before"
        self.stop = threading.Event()
        self.t0 = time.monotonic()

    def run(self):
        while not self.stop.is_set():
            self.samples.append((time.monotonic() - self.t0, self.phase, self.d.rss_kb(), self.d.fds()))
            self.stop.wait(self.period)


def warm_up(d, sampler, files, most):
    """The mix in 3 s rounds until a round's highest RSS is no higher than
    the rounds' before (+2 MiB), at least 2 and at most `most` seconds;
    returns the seconds spent."""
    spent, best = 0, 0
    while spent < most:
        sampler.phase = "warm-%d" % (spent // WARM_ROUND + 1)
        run_wrk(d.port, WARM_ROUND, files)
        spent += WARM_ROUND
        top = max(s[2] for s in sampler.samples if s[1] == sampler.phase)
        if best and top <= best + 2048:
            break
        best = max(best, top)
    return spent


def rss_when_trimmed(d, first=4.0, most=9.0, step=0.25):
    """RSS once attnd has given freed memory back in a quiet spell: it
    trims on the 1 s tick after a whole quiet one, so about 2 s after the
    load's end; this waits `first` seconds, then until RSS has not fallen
    for 1 s (at most `most` seconds in all)."""
    t0 = time.monotonic()
    time.sleep(first)
    rss = low = d.rss_kb()
    since = time.monotonic()
    while time.monotonic() - since < 1.0 and time.monotonic() - t0 < most:
        time.sleep(step)
        rss = d.rss_kb()
        if rss < low - 256:
            low, since = rss, time.monotonic()
    return rss


def run_wrk(port, seconds, files):
    cmd = [os.environ.get("WRK", "wrk"), "-t2", "-c%d" % CONNECTIONS, "-d%ds" % seconds,
           "--timeout", "10s", "-s", MIX_LUA, "http://127.0.0.1:%d" % port, "--", "/v1/attention"] + files
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=seconds + 60)
    out = p.stdout.decode("utf-8", "replace")
    m = re.search(r"^wrk-mix: (.*)$", out, re.M)
    stats = {k: int(v) for k, v in (kv.split("=") for kv in m.group(1).split())} if m else {}
    return stats, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=int(os.environ.get("SOAK_SECONDS", "60")))
    args = ap.parse_args()
    seconds = max(6, args.seconds)
    warmup_max = max(9, min(30, seconds // 2))
    report = attnd.Report("soak")
    if shutil.which(os.environ.get("WRK", "wrk")) is None:
        report.check("wrk installed", False, "wrk not found (Debian package wrk)")
        return report.finish()
    tmp = tempfile.mkdtemp(prefix="attnd-soak-")
    t_start = time.monotonic()
    try:
        files = []
        for w, name, body in bodies():
            path = os.path.join(tmp, name + ".json")
            with open(path, "wb") as f:
                f.write(body)
            files.append("%d:%s" % (w, path))
        # a queue deeper than wrk has connections: the mix is computed, not 503ed
        with attnd.Daemon(["--threads", "2", "--queue", str(4 * CONNECTIONS), "--max-body", str(MAX_BODY)],
                          log=False) as d:
            sampler = Sampler(d)
            sampler.start()
            time.sleep(1.0)
            warmup = warm_up(d, sampler, files, warmup_max)
            rss_settled = attnd.settle_rss(d)
            sampler.phase = "quiet"
            rss_kept0 = rss_when_trimmed(d)
            fds0 = d.fds()
            # the baseline: the working size the arenas reached under the mix
            # (RSS swings by +-10 MiB with what is in flight at the sample)
            warm = [s[2] for s in sampler.samples if s[1].startswith("warm")]
            rss0 = max([rss_settled] + warm)
            sampler.phase = "run"
            stats, out = run_wrk(d.port, seconds, files)
            sampler.phase = "after"
            rss_kept = rss_when_trimmed(d)
            sampler.stop.set()
            sampler.join(5)
            fds_after = attnd.wait_until(lambda: d.fds() <= fds0 + 2 and d.fds(), 5.0) or d.fds()

            print("%8s  %-8s %10s %5s" % ("seconds", "phase", "RSS KiB", "fds"))
            for t, phase, rss, fds in sampler.samples:
                print("%8.1f  %-8s %10d %5d" % (t, phase, rss, fds))
            statuses = {k: v for k, v in stats.items() if k.startswith("s")}
            report.note("wrk %d s (after a %d s warm-up): %s" % (seconds, warmup, stats))
            report.check("only expected statuses", bool(statuses) and set(statuses) <= ALLOWED,
                         str(statuses))
            report.check("plenty of 200s", statuses.get("s200", 0) >= 0.4 * stats.get("requests", 1),
                         str(statuses))
            report.check("no wrk timeouts", stats.get("timeout", -1) == 0, out[-300:])

            run = [s for s in sampler.samples if s[1] == "run"]
            third = max(1, len(run) // 3)
            first = statistics.median(s[2] for s in run[:third])
            last = statistics.median(s[2] for s in run[-third:])
            bound = max(KEPT_KIB, int(rss_kept0 * KEPT_FRACTION))
            attnd.memory_check(report, d, "run keeps no memory", rss_kept <= rss_kept0 + bound,
                               "RSS given back %d KiB after the run, %d KiB after the warm-up, bound"
                               " +%d KiB" % (rss_kept, rss_kept0, bound))
            fds_max = max(s[3] for s in run)
            report.check("descriptors bounded during the run",
                         fds_max <= fds0 + 2 * CONNECTIONS + 4,
                         "max %d, baseline %d + %d connections, each with a predecessor that may"
                         " linger" % (fds_max, fds0, CONNECTIONS))
            report.check("descriptors back after", fds_after <= fds0 + 2, "%d, baseline %d" % (fds_after, fds0))
            limit = rss0 + max(16384, int(rss0 * 0.10))
            attnd.memory_check(report, d, "memory back after", 0 < rss_kept <= limit,
                               "RSS %d KiB, baseline %d KiB, limit %d KiB" % (rss_kept, rss0, limit))
            report.note("RSS baseline %d KiB (given back: %d); run median first third %d, last third"
                        " %d; after %d KiB; fds baseline %d, run max %d, after %d"
                        % (rss0, rss_kept0, first, last, rss_kept, fds0, fds_max, fds_after))
            report.check("alive after", d.alive())
            ms = attnd.healthz_ms(d.port)
            report.check("/healthz fast after", ms is not None and ms < 100.0, "%s ms" % ms)
            rc = d.stop()
            report.check("exits 0 on SIGTERM", rc == 0, "exit status %s" % rc)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report.note("soak: %.1f s" % (time.monotonic() - t_start))
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
