#!/usr/bin/python3
"""torch_mha.py: PyTorch's nn.MultiheadAttention on the shapes of bench_engine,
and the two side by side (bench/README.md).

Shapes, outermost first (self-attention, E = 512, H = 8, batch_first=True):
  x [B, L, E] ~ N(0, 1);  B in {1, 8}, L in {128, 512, 2048, 8192}
  "with":    need_weights=True, average_attn_weights=False (weights [B, H, L, L])
  "without": need_weights=False
Each thread count runs in its own child process whose environment sets
OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = MKL_NUM_THREADS = n before torch is
imported, and which calls torch.set_num_threads(n): torch's defaults otherwise
fight over the two cores. Times are medians of >= 3 reps after one warm-up,
under torch.inference_mode(); GFLOP/s = (8 B L E^2 + 4 B L^2 E) / time, the
count the engine uses.

Torch 1.13 (the fast path, _native_multi_head_attention, on CPU) materialises
the scores [B H, L, L] and their softmax; a cell whose estimate exceeds
MEMORY_LIMIT is printed "skipped (memory)".

It then reads bench_engine's build/bench/engine.tsv (B, L, weights, threads,
mode, ms, ...) and prints attnd against torch: the best thread setting of each,
and per thread count. speedup = torch ms / attnd ms (> 1: attnd is faster).

Those attnd times were taken minutes before, and this VM's speed drifts (its
two cores now and then run as one). So each child also times attnd itself,
through build/bench/libattnd_timer.so (bench/timer/attnd_timer.c: the same
layer and seed, threads as eng1 / eng2) loaded beside torch, in ROUNDS
alternating rounds on the same x: the "same process" table's speedup is the
median over rounds of torch's round median over attnd's.

  torch_mha.py [--quick] [--tsv PATH]     --quick: B = 1, L in {128, 512}
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import time

E, H = 512, 8
SEED = 20240601
BATCHES = (1, 8)
LENGTHS = (128, 512, 2048, 8192)
WEIGHTS_MAX_L = 4096            # as bench_engine: no weights at L = 8192
THREADS = (1, 2)
MEMORY_LIMIT = 12 * 2**30       # bytes torch may use for one cell
CELL_BUDGET_S = 2.0             # timed reps per cell aim for about this long
MIN_REPS, MAX_REPS = 3, 25      # after one warm-up
MAX_REP_S = 60.0                # predicted longer reps are skipped
CHILD_BUDGET_S = 240.0          # per thread count; later cells are skipped
ROUNDS = 5                      # torch and attnd alternate in this many rounds

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_TSV = os.path.join(REPO, "build", "bench", "engine.tsv")
TIMER_SO = os.path.join(REPO, "build", "bench", "libattnd_timer.so")


def cpu_mark():
    """(wall, this process's CPU, the machine's busy CPU) in seconds, from /proc/stat."""
    import resource
    ru = resource.getrusage(resource.RUSAGE_SELF)
    busy = 0.0
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
        # user nice system idle iowait irq softirq steal
        busy = (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        pass
    return time.perf_counter(), ru.ru_utime + ru.ru_stime, busy


def others_pct(a, b):
    """CPU used by other processes between marks a and b, % of all cores (-1: unknown)."""
    if a[2] == 0 or b[0] <= a[0]:
        return -1.0
    other = max(0.0, (b[2] - a[2]) - (b[1] - a[1]))
    return 100.0 * other / ((b[0] - a[0]) * os.cpu_count())


def flops(B, L):
    return 8.0 * B * L * E * E + 4.0 * B * L * L * E


def torch_bytes(B, L):
    """Scores and softmax [B H, L, L], plus x, qkv [B, L, 3E], ctx and out."""
    return 2 * B * H * L * L * 4 + 6 * B * L * E * 4


def grid(quick):
    """Every (B, L, weights) cell, in the engine's order."""
    batches, lengths = ((1,), (128, 512)) if quick else (BATCHES, LENGTHS)
    return [(B, L, w) for B in batches for L in lengths
            for w in ("without", "with") if w == "without" or L <= WEIGHTS_MAX_L]


# ---- the child: one thread count ------------------------------------------

def load_timer(threads):
    """attnd's engine in this process (attnd_timer.c), or None without the library."""
    import ctypes
    if not os.path.exists(TIMER_SO):
        return None
    lib = ctypes.CDLL(TIMER_SO)
    lib.attnd_timer_setup.argtypes = (ctypes.c_int, ctypes.c_uint64)
    lib.attnd_timer_run.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                                    ctypes.c_int, ctypes.POINTER(ctypes.c_double))
    if lib.attnd_timer_setup(threads, SEED) != 0:
        return None
    return lib


def attnd_reps(timer, B, L, weights, x, reps):
    """reps forward passes of attnd on x; their times in ms."""
    import ctypes
    ms = (ctypes.c_double * reps)()
    if timer.attnd_timer_run(B, L, weights == "with", x.data_ptr(), reps, ms) != 0:
        raise RuntimeError(f"attnd_timer_run failed for B {B}, L {L}, {weights}")
    return list(ms)


def time_cell(torch, mha, timer, B, L, weights):
    """One warm-up each, then reps for about CELL_BUDGET_S each: torch alone, or
    torch and attnd (timer) alternating in rounds. Returns the row's fields."""
    g = torch.Generator().manual_seed(SEED + 1000 * B + L)
    x = torch.randn(B, L, E, generator=g).contiguous()
    kwargs = ({"need_weights": True, "average_attn_weights": False}
              if weights == "with" else {"need_weights": False})

    def once():
        t = time.perf_counter()
        out = mha(x, x, x, **kwargs)
        ms = 1e3 * (time.perf_counter() - t)
        del out
        return ms

    def reps_for(warm):
        return max(MIN_REPS, min(MAX_REPS, int(1e3 * CELL_BUDGET_S / max(warm, 1e-3))))

    reps = reps_for(once())
    if timer is None:
        return {"ms": statistics.median(once() for _ in range(reps)), "reps": reps}
    a_reps = reps_for(attnd_reps(timer, B, L, weights, x, 1)[0])
    rounds = min(ROUNDS, reps, a_reps)
    t_all, a_all, ratios = [], [], []
    for r in range(rounds):
        t = [once() for _ in range(reps * r // rounds, reps * (r + 1) // rounds)]
        a = attnd_reps(timer, B, L, weights, x,
                       a_reps * (r + 1) // rounds - a_reps * r // rounds)
        t_all += t
        a_all += a
        ratios.append(statistics.median(t) / statistics.median(a))
    return {"ms": statistics.median(t_all), "reps": reps,
            "attnd_ms": statistics.median(a_all), "paired": statistics.median(ratios)}


def child(threads, cells):
    """Prints one JSON line per cell: measured, or skipped with a reason."""
    import torch

    torch.set_num_threads(threads)
    print(json.dumps({"info": f"torch {torch.__version__}, {threads} thread(s): "
                      f"get_num_threads() = {torch.get_num_threads()}, "
                      f"interop {torch.get_num_interop_threads()}"}), flush=True)
    torch.manual_seed(SEED)
    mha = torch.nn.MultiheadAttention(E, H, batch_first=True).eval()
    timer = load_timer(threads)
    seen = {}   # weights -> last GFLOP/s, to predict later cells
    t0 = time.perf_counter()
    with torch.inference_mode():
        for B, L, weights in cells:
            row = {"B": B, "L": L, "weights": weights, "threads": threads}
            rep_s = flops(B, L) / (1e9 * seen[weights]) if weights in seen else 0.0
            if rep_s > MAX_REP_S:
                row["skipped"] = f"est. {rep_s:.0f} s per rep"
            elif time.perf_counter() - t0 + (1 + MIN_REPS) * rep_s > CHILD_BUDGET_S:
                row["skipped"] = "time budget"
            else:
                m0 = cpu_mark()
                row.update(time_cell(torch, mha, timer, B, L, weights))
                row["other"] = others_pct(m0, cpu_mark())
                seen[weights] = flops(B, L) / (1e6 * row["ms"])
            print(json.dumps(row), flush=True)


# ---- the parent ----------------------------------------------------------------

def run_child(threads, cells):
    """Runs child() in a fresh interpreter with the thread variables set."""
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(threads)
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", str(threads),
         "--cells", json.dumps(cells)],
        env=env, stdout=subprocess.PIPE, text=True, check=False)
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    for r in rows:
        if "info" in r:
            print(r["info"])
    rows = [r for r in rows if "info" not in r]
    if proc.returncode != 0:
        print(f"torch child (threads {threads}) exited with {proc.returncode}", file=sys.stderr)
    return rows


def read_engine(path):
    """{(B, L, weights, threads): (ms, mode)} from engine.tsv, {} if absent."""
    if not os.path.exists(path):
        return {}
    with open(path, newline="") as f:
        return {(int(r["B"]), int(r["L"]), r["weights"], int(r["threads"])):
                (float(r["ms"]), r["mode"]) for r in csv.DictReader(f, delimiter="\t")}


def print_torch(cells, skipped, results):
    print("PyTorch nn.MultiheadAttention(512, 8, batch_first=True), inference_mode "
          "(ms: median; GFLOP/s = (8BLE^2 + 4BL^2E) / time;\nother: CPU used by other "
          "processes during the cell, % of all cores)")
    print(f"{'B':>2} {'L':>5} {'thr':>3} {'weights':<7} {'ms':>10} {'reps':>4} {'GFLOP/s':>8} "
          f"{'other':>6}")
    for B, L, w in cells:
        for n in THREADS:
            head = f"{B:>2} {L:>5} {n:>3} {w:<7}"
            r = results.get((B, L, w, n))
            if (B, L, w) in skipped:
                print(f"{head} skipped ({skipped[(B, L, w)]})")
            elif r is None or "skipped" in r:
                print(f"{head} skipped ({r['skipped'] if r else 'no result'})")
            else:
                gf = flops(B, L) / (1e6 * r["ms"])
                other = f"{r['other']:.0f}%" if r.get("other", -1) >= 0 else "?"
                print(f"{head} {r['ms']:>10.2f} {r['reps']:>4} {gf:>8.1f} {other:>6}")


def torch_ms(results, B, L, w, n):
    r = results.get((B, L, w, n))
    return r["ms"] if r and "ms" in r else None


def side_row(label, a, t):
    """a: (ms, mode) or None; t: (ms, thr) or None."""
    a_s = f"{a[0]:>10.2f} {a[1]:<10}" if a else f"{'-':>10} {'':<10}"
    t_s = f"{t[0]:>10.2f} {t[1]:<6}" if t else f"{'-':>10} {'':<6}"
    sp = f"{t[0] / a[0]:>7.2f}x" if a and t else f"{'-':>8}"
    print(f"{label} {a_s} {t_s} {sp}")


def print_side_by_side(cells, engine, results):
    print("\nattnd vs PyTorch, best thread setting of each (speedup = torch ms / attnd ms)")
    print(f"{'B':>2} {'L':>5} {'weights':<7} {'attnd ms':>10} {'setting':<10} "
          f"{'torch ms':>10} {'thr':<6} {'speedup':>8}")
    for B, L, w in cells:
        a = [(engine[(B, L, w, n)][0], f"{n}:{engine[(B, L, w, n)][1]}")
             for n in THREADS if (B, L, w, n) in engine]
        t = [(torch_ms(results, B, L, w, n), str(n)) for n in THREADS
             if torch_ms(results, B, L, w, n) is not None]
        side_row(f"{B:>2} {L:>5} {w:<7}", min(a) if a else None, min(t) if t else None)
    print("\nattnd vs PyTorch, per thread count (attnd threads 2 = its better of eng2 / blas2)")
    print(f"{'B':>2} {'L':>5} {'weights':<7} {'thr':>3} {'attnd ms':>10} {'setting':<10} "
          f"{'torch ms':>10} {'':<6} {'speedup':>8}")
    for B, L, w in cells:
        for n in THREADS:
            a = engine.get((B, L, w, n))
            t = torch_ms(results, B, L, w, n)
            side_row(f"{B:>2} {L:>5} {w:<7} {n:>3}", a,
                     (t, "") if t is not None else None)
    if not engine:
        print("(no engine.tsv: run build/bench/bench_engine first)")


def print_same_process(cells, results):
    """The pairs timed in one child, round by round (attnd_timer.c)."""
    if not any("paired" in r for r in results.values()):
        print("\n(no same-process pairs: build/bench/libattnd_timer.so missing)")
        return
    print("\nattnd vs PyTorch in the same process, alternating rounds (attnd as eng1 / eng2; "
          "speedup: the median over rounds\nof torch's round median over attnd's)")
    print(f"{'B':>2} {'L':>5} {'weights':<7} {'thr':>3} {'attnd ms':>10} {'torch ms':>10} "
          f"{'speedup':>8}")
    for B, L, w in cells:
        for n in THREADS:
            r = results.get((B, L, w, n))
            head = f"{B:>2} {L:>5} {w:<7} {n:>3}"
            if r is None or "paired" not in r:
                print(f"{head} {'-':>10} {'-':>10} {'-':>8}")
            else:
                print(f"{head} {r['attnd_ms']:>10.2f} {r['ms']:>10.2f} {r['paired']:>7.2f}x")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--tsv", default=DEFAULT_TSV)
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--cells", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, [tuple(c) for c in json.loads(args.cells)])
        return
    engine = read_engine(args.tsv)
    engine_shapes = {k[:3] for k in engine}
    cells = grid(args.quick)
    skipped = {}
    for c in cells:
        if torch_bytes(c[0], c[1]) > MEMORY_LIMIT:
            skipped[c] = f"memory: ~{torch_bytes(c[0], c[1]) / 2**30:.0f} GiB"
        elif engine and c not in engine_shapes:
            skipped[c] = "no attnd result to compare"
    todo = [c for c in cells if c not in skipped]
    t0 = time.perf_counter()
    env = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items())
                   if k.startswith(("OPENBLAS_", "OMP_", "MKL_", "GOTO_")))
    print(f"torch_mha.py: environment {env or 'has no OPENBLAS_* / OMP_* / MKL_* variables'}; "
          f"each child sets OMP/OPENBLAS/MKL_NUM_THREADS = n")
    results = {}
    for n in THREADS:
        for r in run_child(n, todo):
            results[(r["B"], r["L"], r["weights"], n)] = r
    print()
    print_torch(cells, skipped, results)
    print_side_by_side(cells, engine, results)
    print_same_process(cells, results)
    print(f"\ntorch total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
