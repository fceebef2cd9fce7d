#!/usr/bin/python3
"""stack_profile.py: forward passes of a checkpoint folder through the bench's
timer library, for `perf record` to profile (no PyTorch, no tables).

  /usr/bin/python3 bench/stack_profile.py --lib build/bench/libstack_timer.so \\
      --dir build/bench/ckpt_gpt2 --L 512 --reps 4 [--capture] [--threads 2 [--blas]]
  perf record -o perf.data /usr/bin/python3 bench/stack_profile.py ...

Loads the folder (bench/timer/stack_timer.c: stack_timer_load), runs one
warm-up pass and `reps` timed passes on ids [1, L] (seeded random), and prints
the median and every pass in ms. --blas: the engine on one thread, OpenBLAS on
--threads (checkpoint_bench.py's `blas`); else the engine on --threads.
"""
import argparse
import ctypes
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--L", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--capture", action="store_true", help="keep every layer's attentions")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--blas", action="store_true")
    a = ap.parse_args()
    lib = ctypes.CDLL(a.lib)
    ms, info, mapped = ctypes.c_double(), (ctypes.c_size_t * 8)(), ctypes.c_size_t()
    err = ctypes.create_string_buffer(512)
    if lib.stack_timer_load(a.dir.encode(), a.threads, ctypes.byref(ms), info, ctypes.byref(mapped),
                            err, ctypes.c_size_t(512)) != 0:
        sys.exit("stack_timer_load: " + err.value.decode(errors="replace"))
    ids = np.random.RandomState(0).randint(0, info[6], size=a.L).astype(np.int64)
    ws = ctypes.c_size_t()
    for reps in (1, a.reps):  # the warm-up, then the timed passes
        t = (ctypes.c_double * reps)()
        if lib.stack_timer_run(ctypes.c_void_p(ids.ctypes.data), a.L, int(a.capture), int(a.blas),
                               reps, t, None, ctypes.byref(ws)) != 0:
            sys.exit("stack_timer_run failed")
    times = sorted(t)
    print("median %.1f ms; passes %s" % (times[len(times) // 2], ", ".join("%.1f" % x for x in t)))
    lib.stack_timer_free()


if __name__ == "__main__":
    main()
