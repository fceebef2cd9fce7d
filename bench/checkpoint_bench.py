#!/usr/bin/python3
"""checkpoint_bench.py: whole Hugging Face checkpoints, attnd's stack
(engine/stack.h, loaded by server/checkpoint_dir.c) beside the same PyTorch
implementation in the same process, against the machine's own sgemm
(bench/README.md, "Checkpoints").

Shapes (random F32 weights, written by this script as Hugging Face folders
under --dir, kept between runs, not committed):
  gpt2   12 layers, E 768, H 12, F 3072, V 50257, n_positions 1024   (~498 MB)
  llama  16 layers, E 2048, H 32, Hkv 8 (GQA), D 64, F LLAMA_F, V 32000,
         max_position_embeddings 2048
ids [1, L] (seeded random), L in {16, 128, 512} (--quick: {16, 128}).
  "with":    every layer's attention weights kept, per head: [N, H, L, L]
  "without": none kept (the same eager code; torch never holds them)

PyTorch: the oracle's families (tests/checkpoint/oracle/models.py) written for
speed, eager, under torch.inference_mode(): B = 1 dropped, scores by
torch.baddbmm(mask, q, k^T, alpha=scale), softmax, bmm; Llama's GQA by
grouping each KV head's query heads into one bmm (no repeat_kv copy);
F.gelu(approximate="tanh") for gelu_new. "with" appends each layer's softmax
to a list (as output_attentions=True returns them); "without" drops it.

Each thread count runs in a child interpreter with OMP/OPENBLAS/MKL_NUM_THREADS
= n and OMP_WAIT_POLICY=PASSIVE (unless set) before torch is imported, and
torch.set_num_threads(n). The child loads
--lib (bench/timer/stack_timer.c) with ctypes and times, per cell, in ROUNDS
alternating rounds: torch, attnd, and the ceiling (cblas_sgemm, OpenBLAS on n
threads, on each of the layer's [L, in] x [in, out] shapes, FLOP-weighted as
the layer has them). Ratios are medians over rounds of the round's ratios.
At 2 threads attnd runs as the daemon does, "eng" (engine 2 threads on kept
workers, OpenBLAS 1: server/main.c sets OpenBLAS single-threaded); with
--blas-too, the faster (by a warm-up pass each) of eng and "blas" (engine 1
thread, OpenBLAS 2), a setting the daemon never uses, for comparison.

Then a fresh child without torch per (shape, L = 512, mode) loads and runs
attnd alone: load time (checkpoint_dir_load) and peak RSS (VmHWM) against the
budget: mapped weights + 2 x one layer's activations + the attentions asked for.

  checkpoint_bench.py --lib SO --dir DIR [--quick] [--shapes gpt2,llama] [--llama-f F] [--no-memory] [--blas-too]
"""
import argparse
import ctypes
import json
import os
import statistics
import struct
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORACLE = os.path.join(REPO, "tests", "checkpoint", "oracle")
SEED = 20261201
LENGTHS = (16, 128, 512)
THREADS = (1, 2)
LLAMA_F = 5632
MEM_L = 512
WARM_SKIP_MS = 3000.0   # cells predicted slower than this get no warm-up

SHAPES = {
    "gpt2": dict(family="gpt2", name="gpt2", arch="GPT2Model", E=768, H=12, N=12, V=50257, P=1024,
                 eps=1e-5, dtype="F32", n_inner=None),
    "llama": dict(family="llama", name="llama", arch="LlamaModel", model_type="llama", E=2048, H=32,
                  Hkv=8, D=64, N=16, V=32000, P=2048, eps=1e-5, rope_theta=10000.0, tied=False,
                  dtype="F32"),
}


def complete(c, llama_f):
    c = dict(c)
    c.setdefault("Hkv", c["H"])
    c.setdefault("D", c["E"] // c["H"])
    c["F"] = 4 * c["E"] if c["family"] == "gpt2" else llama_f
    return c


# ---- the folders -----------------------------------------------------------

def tensor_specs(c):
    """[(name, shape, kind)] in the file's order; kind: "w" (normal, std 0.02),
    "one" (1 + normal 0.02: norm weights), "b" (normal 0.02: biases)."""
    E, F, V, N = c["E"], c["F"], c["V"], c["N"]
    t = []
    if c["family"] == "gpt2":
        t += [("wte.weight", (V, E), "w"), ("wpe.weight", (c["P"], E), "w"),
              ("ln_f.weight", (E,), "one"), ("ln_f.bias", (E,), "b")]
        for l in range(N):
            p = "h.%d." % l
            t += [(p + "ln_1.weight", (E,), "one"), (p + "ln_1.bias", (E,), "b"),
                  (p + "attn.c_attn.weight", (E, 3 * E), "w"), (p + "attn.c_attn.bias", (3 * E,), "b"),
                  (p + "attn.c_proj.weight", (E, E), "w"), (p + "attn.c_proj.bias", (E,), "b"),
                  (p + "ln_2.weight", (E,), "one"), (p + "ln_2.bias", (E,), "b"),
                  (p + "mlp.c_fc.weight", (E, F), "w"), (p + "mlp.c_fc.bias", (F,), "b"),
                  (p + "mlp.c_proj.weight", (F, E), "w"), (p + "mlp.c_proj.bias", (E,), "b")]
    else:
        H, Hkv, D = c["H"], c["Hkv"], c["D"]
        t += [("embed_tokens.weight", (V, E), "w"), ("norm.weight", (E,), "one")]
        for l in range(N):
            p = "layers.%d." % l
            t += [(p + "input_layernorm.weight", (E,), "one"),
                  (p + "post_attention_layernorm.weight", (E,), "one"),
                  (p + "self_attn.q_proj.weight", (H * D, E), "w"),
                  (p + "self_attn.k_proj.weight", (Hkv * D, E), "w"),
                  (p + "self_attn.v_proj.weight", (Hkv * D, E), "w"),
                  (p + "self_attn.o_proj.weight", (E, H * D), "w"),
                  (p + "mlp.gate_proj.weight", (F, E), "w"), (p + "mlp.up_proj.weight", (F, E), "w"),
                  (p + "mlp.down_proj.weight", (E, F), "w")]
    return sorted(t)


def write_folder(c, folder):
    """config.json and model.safetensors (F32), tensor by tensor (st_write.py's
    format, streamed: the Llama shape is too big to hold twice)."""
    import torch
    sys.path.insert(0, ORACLE)
    import make_checkpoints
    os.makedirs(folder, exist_ok=True)
    specs = tensor_specs(c)
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for name, shape, _ in specs:
        n = 4
        for s in shape:
            n *= s
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    g = torch.Generator().manual_seed(SEED)
    path = os.path.join(folder, "model.safetensors")
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name, shape, kind in specs:
            t = torch.randn(shape, generator=g) * 0.02
            if kind == "one":
                t += 1.0
            f.write(t.numpy().astype("<f4").tobytes())
    os.replace(path + ".tmp", path)
    cfg = (make_checkpoints.gpt2_config if c["family"] == "gpt2" else make_checkpoints.llama_config)(c)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    with open(os.path.join(folder, "bench_shape.json"), "w") as f:
        json.dump(c, f, sort_keys=True)


def ensure_folder(c, base):
    folder = os.path.join(base, "ckpt_" + c["name"])
    stamp = os.path.join(folder, "bench_shape.json")
    try:
        with open(stamp) as f:
            if json.load(f) == json.loads(json.dumps(c)) and \
                    os.path.exists(os.path.join(folder, "model.safetensors")):
                return folder, False
    except (OSError, ValueError):
        pass
    t = time.perf_counter()
    write_folder(c, folder)
    print(f"wrote {folder} ({os.path.getsize(os.path.join(folder, 'model.safetensors')) / 1e6:.0f} MB) "
          f"in {time.perf_counter() - t:.0f} s", flush=True)
    return folder, True


# ---- counts ------------------------------------------------------------------

def linear_shapes(c):
    """[(out, in, in_major)] of one layer's maps, in the order run."""
    E, F, H, Hkv, D = c["E"], c["F"], c["H"], c["Hkv"], c["D"]
    if c["family"] == "gpt2":
        return [(3 * E, E, 1), (E, E, 1), (F, E, 1), (E, F, 1)]
    return [(H * D, E, 0), (Hkv * D, E, 0), (Hkv * D, E, 0), (E, H * D, 0),
            (F, E, 0), (F, E, 0), (E, F, 0)]


def flops(c, L):
    """attn_stack_flops: N (2 L sum(in out) + 4 L^2 H D)."""
    maps = sum(o * i for o, i, _ in linear_shapes(c))
    return c["N"] * (2.0 * L * maps + 4.0 * L * L * c["H"] * c["D"])


def budget_bytes(c, L, mapped, capture):
    """mapped + 2 x one layer's activations + attentions: the activations of
    stack.c's layout, L (E + (H + 2 Hkv) D + H D + F, 2F for llama) floats."""
    act = L * (c["E"] + (c["H"] + 2 * c["Hkv"]) * c["D"] + c["H"] * c["D"] +
               c["F"] * (2 if c["family"] == "llama" else 1)) * 4
    att = c["N"] * c["H"] * L * L * 4 if capture else 0
    return mapped + 2 * act + att, act, att


# ---- the timer library ---------------------------------------------------------

def load_lib(path):
    lib = ctypes.CDLL(path)
    lib.stack_timer_load.argtypes = (ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_double),
                                     ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t),
                                     ctypes.c_char_p, ctypes.c_size_t)
    lib.stack_timer_run.argtypes = (ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                    ctypes.c_int, ctypes.POINTER(ctypes.c_double), ctypes.c_void_p,
                                    ctypes.POINTER(ctypes.c_size_t))
    lib.stack_timer_sgemm.argtypes = (ctypes.c_int,) * 6 + (ctypes.POINTER(ctypes.c_double),)
    return lib


def lib_load(lib, folder, threads):
    ms, info, mapped = ctypes.c_double(), (ctypes.c_size_t * 8)(), ctypes.c_size_t()
    err = ctypes.create_string_buffer(512)
    if lib.stack_timer_load(folder.encode(), threads, ctypes.byref(ms), info, ctypes.byref(mapped),
                            err, 512) != 0:
        raise RuntimeError("stack_timer_load: " + err.value.decode(errors="replace"))
    return ms.value, list(info), mapped.value


def lib_run(lib, ids_ptr, L, capture, blas_mode, reps, out_ptr=None):
    ms, ws = (ctypes.c_double * reps)(), ctypes.c_size_t()
    if lib.stack_timer_run(ids_ptr, L, int(capture), blas_mode, reps, ms, out_ptr, ctypes.byref(ws)) != 0:
        raise RuntimeError(f"stack_timer_run failed (L {L}, capture {capture})")
    return list(ms), ws.value


def lib_ceiling(lib, c, L, threads):
    """One pass of the ceiling: each distinct map shape, 2 calls (best), FLOP-weighted
    as the layer has them; GFLOP/s."""
    fl, t = 0.0, 0.0
    for out, inn, major in linear_shapes(c):
        ms = (ctypes.c_double * 2)()
        if lib.stack_timer_sgemm(L, out, inn, major, threads, 2, ms) != 0:
            raise RuntimeError("sgemm")
        fl += 2.0 * L * out * inn
        t += min(ms) * 1e-3
    return fl / t / 1e9


# ---- PyTorch -------------------------------------------------------------------

def torch_weights(torch, folder):
    """{name: tensor} on the file's pages (copy-on-write numpy memmap)."""
    import numpy as np
    path = os.path.join(folder, "model.safetensors")
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    w = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        a, b = h["data_offsets"]
        m = np.memmap(path, dtype="<f4", mode="c", offset=8 + n + a, shape=tuple(h["shape"]))
        w[name] = torch.from_numpy(m)
    return w


def torch_forward(torch, c, w, ids, keep):
    """ids [L] -> (hidden [L, E] after the final norm, attentions list or [])."""
    import torch.nn.functional as F
    sys.path.insert(0, ORACLE)
    import models
    L, E, H, Hkv, D, N = ids.shape[0], c["E"], c["H"], c["Hkv"], c["D"], c["N"]
    mask = torch.full((L, L), torch.finfo(torch.float32).min).triu(1)
    scale = D ** -0.5
    atts = []
    if c["family"] == "gpt2":
        x = F.embedding(ids, w["wte.weight"]) + w["wpe.weight"][:L]
        for l in range(N):
            p = "h.%d." % l
            h = F.layer_norm(x, (E,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], c["eps"])
            qkv = torch.addmm(w[p + "attn.c_attn.bias"], h, w[p + "attn.c_attn.weight"])
            q, k, v = (t.view(L, H, D).transpose(0, 1) for t in qkv.split(E, dim=1))
            a = torch.softmax(torch.baddbmm(mask, q, k.transpose(1, 2), alpha=scale), -1)
            if keep:
                atts.append(a)
            ctx = torch.bmm(a, v).transpose(0, 1).reshape(L, E)
            x = x + torch.addmm(w[p + "attn.c_proj.bias"], ctx, w[p + "attn.c_proj.weight"])
            h = F.layer_norm(x, (E,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], c["eps"])
            h = F.gelu(torch.addmm(w[p + "mlp.c_fc.bias"], h, w[p + "mlp.c_fc.weight"]), approximate="tanh")
            x = x + torch.addmm(w[p + "mlp.c_proj.bias"], h, w[p + "mlp.c_proj.weight"])
        return F.layer_norm(x, (E,), w["ln_f.weight"], w["ln_f.bias"], c["eps"]), atts
    rep = H // Hkv
    cos, sin = models.rope_cos_sin(c, L)
    cos, sin = cos.view(1, L, D), sin.view(1, L, D)
    mask_g = mask.repeat(rep, 1)          # [rep L, L]: the query heads of one KV head, stacked
    x = F.embedding(ids, w["embed_tokens.weight"])
    for l in range(N):
        p = "layers.%d." % l
        h = models.rms_norm(x, w[p + "input_layernorm.weight"], c["eps"])
        q = F.linear(h, w[p + "self_attn.q_proj.weight"]).view(L, H, D).transpose(0, 1)
        k = F.linear(h, w[p + "self_attn.k_proj.weight"]).view(L, Hkv, D).transpose(0, 1)
        v = F.linear(h, w[p + "self_attn.v_proj.weight"]).view(L, Hkv, D).transpose(0, 1)
        q = q * cos + models.rotate_half(q) * sin     # [H, L, D], contiguous
        k = k * cos + models.rotate_half(k) * sin
        a = torch.softmax(torch.baddbmm(mask_g, q.reshape(Hkv, rep * L, D), k.transpose(1, 2),
                                        alpha=scale), -1)
        if keep:
            atts.append(a.view(H, L, L))
        ctx = torch.bmm(a, v).view(H, L, D).transpose(0, 1).reshape(L, H * D)
        x = x + F.linear(ctx, w[p + "self_attn.o_proj.weight"])
        h = models.rms_norm(x, w[p + "post_attention_layernorm.weight"], c["eps"])
        x = x + F.linear(F.silu(F.linear(h, w[p + "mlp.gate_proj.weight"])) *
                         F.linear(h, w[p + "mlp.up_proj.weight"]), w[p + "mlp.down_proj.weight"])
    return models.rms_norm(x, w["norm.weight"], c["eps"]), atts


# ---- the timing child ----------------------------------------------------------

def cpu_mark():
    """(wall, this process's CPU, the machine's busy CPU) in seconds (torch_mha.py's)."""
    import resource
    ru = resource.getrusage(resource.RUSAGE_SELF)
    busy = 0.0
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
        busy = (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        pass
    return time.perf_counter(), ru.ru_utime + ru.ru_stime, busy


def others_pct(a, b):
    """CPU other processes used between marks a and b, % of all cores (-1: unknown)."""
    if a[2] == 0 or b[0] <= a[0]:
        return -1.0
    other = max(0.0, (b[2] - a[2]) - (b[1] - a[1]))
    return 100.0 * other / ((b[0] - a[0]) * os.cpu_count())


def time_cell(torch, lib, c, w, L, mode, threads, predicted_ms):
    """Rounds of torch reps, attnd reps and one ceiling pass. A cell predicted
    to take over WARM_SKIP_MS a pass gets no warm-up (the shorter cells before
    it touched every weight): 3 rounds of one pass each, and with --blas-too
    at 2 threads attnd runs eng when L spans 2 row blocks of 256 (linear.h),
    else blas."""
    g = torch.Generator().manual_seed(SEED + L)
    ids = torch.randint(0, c["V"], (L,), generator=g, dtype=torch.int64)
    keep = mode == "with"
    out = torch.empty(L, c["E"])
    m0 = cpu_mark()

    def t_once():
        t0 = time.perf_counter()
        hid, atts = torch_forward(torch, c, w, ids, keep)
        ms = 1e3 * (time.perf_counter() - t0)
        del atts
        return ms, hid

    settings = [0, 1] if threads == 2 and ARGS.blas_too else [0]
    if predicted_ms > WARM_SKIP_MS:
        setting = 1 if settings == [0, 1] and L < 512 else 0
        reps, rounds, hid = 1, 3, None
    else:
        t_warm, hid = t_once()
        warm = {s: lib_run(lib, ids.data_ptr(), L, keep, s, 1, out.data_ptr())[0][0] for s in settings}
        setting = min(settings, key=lambda s: warm[s])
        if setting != settings[-1]:   # out: from the setting timed
            lib_run(lib, ids.data_ptr(), L, keep, setting, 1, out.data_ptr())
        slow = max(t_warm, warm[setting])
        reps, rounds = max(1, min(10, int(400.0 / slow))), 3 if slow > 1500 else 5
    fl = flops(c, L)
    t_all, a_all, speed, frac = [], [], [], []
    for r in range(rounds):
        if hid is None:
            t_ms, hid = t_once()
            t = [t_ms]
            a, ws_bytes = lib_run(lib, ids.data_ptr(), L, keep, setting, 1, out.data_ptr())
        else:
            t = [t_once()[0] for _ in range(reps)]
            a, ws_bytes = lib_run(lib, ids.data_ptr(), L, keep, setting, reps)
        ceil = lib_ceiling(lib, c, L, threads)
        t_all += t
        a_all += a
        speed.append(statistics.median(t) / statistics.median(a))
        frac.append(fl / (statistics.median(a) * 1e6) / ceil)
    diff = float((out - hid).abs().max() / hid.abs().max())
    a_ms = statistics.median(a_all)
    return {"shape": c["name"], "L": L, "mode": mode, "threads": threads,
            "torch_ms": statistics.median(t_all), "attnd_ms": a_ms,
            "speedup": statistics.median(speed), "gflops": fl / (a_ms * 1e6),
            "ceiling": fl / (a_ms * 1e6) / statistics.median(frac),
            "of_ceiling": statistics.median(frac), "setting": ["eng", "blas"][setting],
            "reps": reps * rounds, "rounds": rounds, "diff": diff, "ws_bytes": ws_bytes,
            "other": others_pct(m0, cpu_mark())}


def child(threads, shapes, lengths, folders):
    import torch
    torch.set_num_threads(threads)
    print(json.dumps({"info": f"torch {torch.__version__}, {threads} thread(s): get_num_threads() = "
                      f"{torch.get_num_threads()}, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}"}),
          flush=True)
    for name, c in shapes:
        lib = load_lib(ARGS.lib)
        lib_load(lib, folders[name], threads)
        w = torch_weights(torch, folders[name])
        with torch.inference_mode():
            last = None   # (L, ms) of the last cell, to predict the next
            for L in lengths:
                for mode in ("without", "with"):
                    pred = last[1] * flops(c, L) / flops(c, last[0]) if last else 0.0
                    row = time_cell(torch, lib, c, w, L, mode, threads, pred)
                    last = (L, max(row["torch_ms"], row["attnd_ms"]))
                    print(json.dumps(row), flush=True)
        lib.stack_timer_free()
        del w


def run_child(threads, shapes, lengths, folders):
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(threads)
    # libgomp's idle threads spin after each parallel region and fight
    # OpenBLAS's own threads for the 2 cores: gpt2 L = 128 at 2 threads took
    # 620-690 ms spinning, 230 ms passive (1 thread: 320 ms)
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--lib", ARGS.lib, "--dir", ARGS.dir,
                           "--child", str(threads), "--plan", json.dumps([shapes, lengths, folders])] +
                          (["--blas-too"] if ARGS.blas_too else []),
                          env=env, stdout=subprocess.PIPE, text=True, check=False)
    rows = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    for r in rows:
        if "info" in r:
            print(r["info"])
    if proc.returncode != 0:
        print(f"checkpoint_bench: child (threads {threads}) exited with {proc.returncode}", file=sys.stderr)
    return [r for r in rows if "info" not in r], proc.returncode


# ---- the memory child (no torch) -------------------------------------------------

def proc_status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def mem_child(folder, L, capture, evict):
    """Prints one JSON line: load ms, first and second forward ms, RSS figures."""
    lib = load_lib(ARGS.lib)
    if evict:   # drop the file's clean pages from the page cache first
        fd = os.open(os.path.join(folder, "model.safetensors"), os.O_RDONLY)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    import random
    rng = random.Random(SEED + L)
    before = proc_status("VmRSS")
    load_ms, info, mapped = lib_load(lib, folder, 1)
    V = info[6]
    ids = (ctypes.c_int64 * L)(*[rng.randrange(V) for _ in range(L)])
    first, ws = lib_run(lib, ctypes.addressof(ids), L, capture, 0, 1)
    second = lib_run(lib, ctypes.addressof(ids), L, capture, 0, 1)[0] if info[7] == 0 else [float("nan")]
    print(json.dumps({"load_ms": load_ms, "first_ms": first[0], "second_ms": second[0],
                      "rss_before": before, "hwm": proc_status("VmHWM"), "mapped": mapped,
                      "ws_bytes": ws}), flush=True)


def run_mem_child(folder, L, capture, evict):
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--lib", ARGS.lib, "--dir", ARGS.dir,
                           "--mem-child", json.dumps([folder, L, capture, evict])],
                          stdout=subprocess.PIPE, text=True, check=False)
    rows = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    return rows[0] if proc.returncode == 0 and rows else None


# ---- the parent ----------------------------------------------------------------

def print_speed(rows, shapes):
    print("\nSpeed: B = 1, ids [1, L]; ms: median over all reps; speedup: the median over rounds of torch's\n"
          "round median / attnd's (> 1: attnd faster); GFLOP/s = attn_stack_flops / attnd ms; ceiling: "
          "cblas_sgemm GFLOP/s\non the layer's [L, in] x [in, out] shapes, same threads, FLOP-weighted; "
          "of-ceil: attnd GFLOP/s / ceiling, paired by round;\nrun: attnd's setting (eng: engine threads, "
          "OpenBLAS 1; blas: engine 1, OpenBLAS threads); diff: max |attnd - torch| / max |torch|,\n"
          "the final hidden state; other: CPU other processes used during the cell, % of all cores")
    print(f"{'shape':<6} {'L':>4} {'thr':>3} {'mode':<7} {'torch ms':>10} {'attnd ms':>10} {'speedup':>8} "
          f"{'GFLOP/s':>8} {'ceiling':>8} {'of-ceil':>8} {'run':>4} {'reps':>4} {'diff':>8} {'other':>5}  targets")
    for r in sorted(rows, key=lambda r: ([s for s, _ in shapes].index(r["shape"]), r["L"], r["threads"],
                                         r["mode"] != "without")):
        tgt = "faster " + ("PASS" if r["speedup"] > 1 else "MISS")
        if r["L"] >= 128:
            tgt += ", >=75% " + ("PASS" if r["of_ceiling"] >= 0.75 else "MISS")
        print(f"{r['shape']:<6} {r['L']:>4} {r['threads']:>3} {r['mode']:<7} {r['torch_ms']:>10.2f} "
              f"{r['attnd_ms']:>10.2f} {r['speedup']:>7.2f}x {r['gflops']:>8.1f} {r['ceiling']:>8.1f} "
              f"{100 * r['of_ceiling']:>7.1f}% {r['setting']:>4} {r['reps']:>4} {r['diff']:>8.1e} {r['other']:>4.0f}%  {tgt}")


def print_memory(shapes, folders):
    print(f"\nLoad and peak memory: a fresh child per row (no torch), attnd alone on 1 thread, L = {MEM_L};\n"
          "load: checkpoint_dir_load; 1st / 2nd: the first and second forward pass; peak: VmHWM - VmRSS "
          "before the load;\nbudget: mapped weights + 2 x one layer's activations "
          "(L (E + (H + 2Hkv) D + H D + F, 2F llama) floats) + attentions (N H L^2 floats)\n"
          "page cache: warm = the file as the timing children left it; evicted = "
          "posix_fadvise(DONTNEED) on it first (MB = 10^6 bytes)")
    print(f"{'shape':<6} {'mode':<7} {'cache':<7} {'load ms':>8} {'1st ms':>8} {'2nd ms':>8} {'mapped':>8} "
          f"{'act x2':>7} {'attns':>7} {'budget':>8} {'peak':>8} {'ws':>7}  targets")
    for name, c in shapes:
        plan = [("without", False), ("with", False)]
        if name == "gpt2":
            plan.append(("without", True))
        for mode, evict in plan:
            r = run_mem_child(folders[name], MEM_L, mode == "with", evict)
            if r is None:
                print(f"{name:<6} {mode:<7} failed")
                continue
            budget, act, att = budget_bytes(c, MEM_L, r["mapped"], mode == "with")
            peak = r["hwm"] - r["rss_before"]
            tgt = "mem " + ("PASS" if peak <= budget else "MISS")
            if name == "gpt2":
                tgt = "load<2s " + ("PASS" if r["load_ms"] < 2000 else "MISS") + ", " + tgt
            print(f"{name:<6} {mode:<7} {'evicted' if evict else 'warm':<7} {r['load_ms']:>8.1f} "
                  f"{r['first_ms']:>8.1f} {r['second_ms']:>8.1f} {r['mapped'] / 1e6:>8.1f} "
                  f"{2 * act / 1e6:>7.1f} {att / 1e6:>7.1f} {budget / 1e6:>8.1f} {peak / 1e6:>8.1f} "
                  f"{r['ws_bytes'] / 1e6:>7.1f}  {tgt}", flush=True)


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--quick", action="store_true", help="L in {16, 128} only")
    ap.add_argument("--shapes", default="gpt2,llama")
    ap.add_argument("--llama-f", type=int, default=LLAMA_F)
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--blas-too", action="store_true",
                    help="at 2 threads, also try engine 1 thread + OpenBLAS 2 and keep the faster")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--plan", help=argparse.SUPPRESS)
    ap.add_argument("--mem-child", help=argparse.SUPPRESS)
    ARGS = ap.parse_args()
    ARGS.lib = os.path.abspath(ARGS.lib)
    if ARGS.child:
        shapes, lengths, folders = json.loads(ARGS.plan)
        child(ARGS.child, shapes, lengths, folders)
        return 0
    if ARGS.mem_child:
        mem_child(*json.loads(ARGS.mem_child))
        return 0
    t0 = time.perf_counter()
    shapes = [(n, complete(SHAPES[n], ARGS.llama_f)) for n in ARGS.shapes.split(",")]
    lengths = [L for L in LENGTHS if not ARGS.quick or L <= 128]
    print("attnd checkpoint benchmark")
    with open("/proc/cpuinfo") as f:
        cpu = next((x.split(":", 1)[1].strip() for x in f if x.startswith("model name")), "?")
    print(f"machine: nproc {os.cpu_count()}, CPU \"{cpu}\"; load average "
          f"{open('/proc/loadavg').read().split()[0]}")
    for n, c in shapes:
        print(f"{n}: N {c['N']}, E {c['E']}, H {c['H']}, Hkv {c['Hkv']}, D {c['D']}, F {c['F']}, "
              f"V {c['V']}, positions {c['P']}, F32")
    folders = {}
    for n, c in shapes:
        folders[n] = ensure_folder(c, os.path.abspath(ARGS.dir))[0]
    rows, failed = [], 0
    for threads in THREADS:
        r, rc = run_child(threads, shapes, lengths, folders)
        rows += r
        failed |= rc
    print_speed(rows, shapes)
    if not ARGS.no_memory:
        print_memory(shapes, folders)
    print(f"\ncheckpoint bench total {time.perf_counter() - t0:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
