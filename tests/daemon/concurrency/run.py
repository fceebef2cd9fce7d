#!/usr/bin/python3
"""run.py: 64 concurrent requests of random shapes (`make concurrency`).

Property: concurrency never changes a number. 64 requests of seeded random
shapes (/v1/attention on the built-in tiny, inline seeded models and inline
models with explicit weights, batches ragged or not, masks, positional
encodings, every weights mode, text and base64 encodings; /v1/sdpa with
grouped heads, causal and boolean masks) are each sent once alone, then all
64 at once from 64 connections released by one barrier, twice (the second
time in reverse order). Every concurrent answer must be byte-identical to
the solo one, apart from "usage" (which holds the milliseconds): the floats
are written as shortest round-trip text, so equal text is equal float32 bits.

That the solo answers are right is the C suites' job (every BLAS path
against its naive twin, PyTorch fixtures, ONNX conformance); here, as a
check on the whole path through HTTP, the requests with explicit weights
and no positional encoding are also compared with a float64 reference in
plain Python loops, within the README's tolerance (1e-5 absolute plus 1e-4
relative).

Prints one line per check and `concurrency: N passed, M failed`.
Usage: /usr/bin/python3 tests/daemon/concurrency/run.py [--seed N] [--count 64]
"""
import argparse
import base64
import json
import math
import os
import random
import re
import struct
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib"))
import attnd  # noqa: E402

ATOL, RTOL = 1e-5, 1e-4
USAGE = re.compile(rb',"usage":\{[^{}]*\}')


def r4(rng, scale=1.0):
    """A value with 4 decimals, exact in the JSON the test sends."""
    return round(rng.uniform(-scale, scale), 4)


def matrix(rng, rows, cols, scale=1.0):
    return [[r4(rng, scale) for _ in range(cols)] for _ in range(rows)]


def heads_for(rng, E):
    H = rng.choice([h for h in (1, 2, 4, 8) if E % h == 0])
    Hkv = rng.choice([k for k in (1, 2, 4, 8) if H % k == 0])
    return H, Hkv


def inputs(rng, E, vocab, B, lengths):
    """embeddings, tokens or text for a batch (B = 0: unbatched)."""
    kind = rng.choice(["embeddings", "embeddings", "tokens", "text"] if vocab else ["embeddings"])
    items = []
    for L in lengths:
        if kind == "embeddings":
            items.append(matrix(rng, L, E))
        elif kind == "tokens":
            items.append([rng.randrange(vocab) for _ in range(L)])
        else:
            items.append(" ".join(rng.choice(["the", "cat", "sat", "on", "a", "mat", "사과를", "먹었다"])
                                  for _ in range(L)))
    return kind, items[0] if B == 0 else items


def random_attention(rng, i):
    kind = ["tiny", "seeded", "explicit"][i % 3]
    req = {}
    if kind == "tiny":
        E, H, vocab = 8, 2, 64
        req["model"] = "tiny"
    elif kind == "seeded":
        E = rng.choice([8, 16, 24, 32, 48, 64, 96, 128])
        H, Hkv = heads_for(rng, E)
        vocab = rng.choice([0, 50, 100])
        req["model"] = {"d_model": E, "num_heads": H, "num_kv_heads": Hkv,
                        "seed": rng.randrange(1 << 30), "vocab_size": vocab}
    else:
        E = rng.choice([4, 8, 12, 16])
        H, Hkv = heads_for(rng, E)
        D = E // H
        vocab = 0
        m = {"d_model": E, "num_heads": H, "num_kv_heads": Hkv,
             "in_proj_weight": matrix(rng, (H + 2 * Hkv) * D, E, 0.5),
             "out_proj_weight": matrix(rng, E, E, 0.5)}
        if rng.random() < 0.6:
            m["in_proj_bias"] = [r4(rng, 0.2) for _ in range((H + 2 * Hkv) * D)]
            m["out_proj_bias"] = [r4(rng, 0.2) for _ in range(E)]
        req["model"] = m
    B = rng.choice([0, 0, 1, 2, 3])
    L = rng.randint(1, 24 if kind == "explicit" else 96)
    ragged = B > 1 and kind != "explicit" and rng.random() < 0.5
    lengths = [rng.randint(1, L) if ragged else L for _ in range(max(B, 1))]
    if ragged:
        lengths[0] = L
    field, value = inputs(rng, E, vocab, B, lengths)
    req[field] = value
    if kind == "explicit":
        req["mask"] = rng.choice(["none", "causal"])
        req["weights"] = "per_head"
    else:
        if rng.random() < 0.5:
            req["mask"] = rng.choice(["causal", {"causal": True, "window": rng.randint(1, 4)},
                                      {"allow": [[rng.random() < 0.7 for _ in range(L)] for _ in range(L)]}
                                      if not ragged else "causal",
                                      {"bias": [[r4(rng) for _ in range(L)] for _ in range(L)]}
                                      if not ragged else "none"])
        if rng.random() < 0.5:
            req["positional"] = rng.choice(["rope", "alibi", "sinusoidal",
                                            {"type": "rope", "offset": rng.randint(0, 100)}])
        req["weights"] = rng.choice(["per_head", "mean", "none"])
        if rng.random() < 0.3:
            req["encoding"] = "base64"
    return req


def random_sdpa(rng):
    B, Hkv = rng.randint(1, 2), rng.choice([1, 2])
    H = Hkv * rng.choice([1, 2])
    Lq, S, D, Dv = rng.randint(1, 12), rng.randint(1, 12), rng.choice([2, 4, 8]), rng.choice([2, 4, 8])
    req = {"q": [[matrix(rng, Lq, D) for _ in range(H)] for _ in range(B)],
           "k": [[matrix(rng, S, D) for _ in range(Hkv)] for _ in range(B)],
           "v": [[matrix(rng, S, Dv) for _ in range(Hkv)] for _ in range(B)],
           "weights": rng.choice(["per_head", "mean", "none"])}
    if rng.random() < 0.4:
        req["is_causal"] = True
    elif rng.random() < 0.5:
        req["attn_mask"] = [[rng.random() < 0.7 for _ in range(S)] for _ in range(Lq)]
    return req


def make_requests(seed, count):
    rng = random.Random(seed)
    out = []
    for i in range(count):
        if i % 5 == 4:
            out.append(("/v1/sdpa", random_sdpa(rng)))
        else:
            out.append(("/v1/attention", random_attention(rng, i)))
    return out


# ---- the float64 reference (explicit weights, no positional encoding) -------

def mha_reference(m, x, causal):
    """out [L, E] and weights [H, L, L] of one item x [L, E], in float64."""
    E, H, Hkv = m["d_model"], m["num_heads"], m["num_kv_heads"]
    D, L = E // H, len(x)
    W, Wo = m["in_proj_weight"], m["out_proj_weight"]
    b = m.get("in_proj_bias", [0.0] * len(W))
    bo = m.get("out_proj_bias", [0.0] * E)
    proj = [[sum(W[r][c] * x[t][c] for c in range(E)) + b[r] for r in range(len(W))] for t in range(L)]
    q_off, k_off, v_off = 0, H * D, H * D + Hkv * D
    scale = 1.0 / math.sqrt(D)
    ctx = [[0.0] * E for _ in range(L)]
    weights = []
    for h in range(H):
        g = h // (H // Hkv)
        wh = []
        for i in range(L):
            keys = range(i + 1) if causal else range(L)
            s = {j: scale * sum(proj[i][q_off + h * D + d] * proj[j][k_off + g * D + d] for d in range(D))
                 for j in keys}
            mx = max(s.values())
            e = {j: math.exp(v - mx) for j, v in s.items()}
            z = sum(e.values())
            row = [e.get(j, 0.0) / z for j in range(L)]
            wh.append(row)
            for d in range(D):
                ctx[i][h * D + d] = sum(row[j] * proj[j][v_off + g * D + d] for j in range(L))
        weights.append(wh)
    out = [[sum(Wo[r][c] * ctx[t][c] for c in range(E)) + bo[r] for r in range(E)] for t in range(L)]
    return out, weights


def flat(x):
    if isinstance(x, list):
        for e in x:
            yield from flat(e)
    else:
        yield x


def decode_tensor(v):
    """Nested lists from a float or base64 tensor."""
    if isinstance(v, dict) and "base64" in v:
        raw = base64.b64decode(v["base64"])
        vals = list(struct.unpack("<%df" % (len(raw) // 4), raw))
        for n in reversed(v["shape"][1:]):
            vals = [vals[k:k + n] for k in range(0, len(vals), n)]
        return vals
    return v


def worst_error(got, want):
    worst = 0.0
    g, w = list(flat(decode_tensor(got))), list(flat(want))
    if len(g) != len(w):
        return float("inf")
    for a, b in zip(g, w):
        worst = max(worst, abs(a - b) - (ATOL + RTOL * abs(b)))
    return worst


def check_reference(report, idx, req, answer):
    m, causal = req["model"], req.get("mask") == "causal"
    items = req["embeddings"] if isinstance(req["embeddings"][0][0], list) else [req["embeddings"]]
    batched = len(items) != 1 or isinstance(req["embeddings"][0][0], list)
    outs, ws = zip(*[mha_reference(m, x, causal) for x in items])
    want_out = list(outs) if batched else outs[0]
    want_w = list(ws) if batched else ws[0]
    e_out = worst_error(answer["output"], want_out)
    e_w = worst_error(answer["weights"], want_w)
    report.check("reference %02d (E %d, H %d, Hkv %d, %s%s)" % (idx, m["d_model"], m["num_heads"], m["num_kv_heads"],
                                                              "B %d" % len(items) if batched else "unbatched",
                                                              ", causal" if causal else ""),
                 e_out <= 0 and e_w <= 0, "past tolerance by %g (output), %g (weights)" % (e_out, e_w))


# ---- the runs ------------------------------------------------------------------

def send(port, path, body):
    r = attnd.post(port, path, body, timeout=120)
    return r


def concurrent_pass(port, reqs, bodies, order):
    barrier = threading.Barrier(len(order))
    results = [None] * len(reqs)

    def worker(k):
        path = reqs[k][0]
        raw = attnd.request_bytes("POST", path, bodies[k])
        s = attnd.connect("127.0.0.1", port, 120)
        try:
            barrier.wait(30)
            s.sendall(raw)
            results[k] = attnd.Reader(s).read(120)
        except Exception as e:  # recorded, compared below
            results[k] = attnd.Response()
            results[k].error = repr(e)
        finally:
            s.close()

    threads = [threading.Thread(target=worker, args=(k,)) for k in order]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=20240611)
    ap.add_argument("--count", type=int, default=64)
    args = ap.parse_args()
    report = attnd.Report("concurrency")
    t0 = time.monotonic()
    reqs = make_requests(args.seed, args.count)
    bodies = [json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode() for _, r in reqs]
    with attnd.Daemon(["--threads", "2", "--queue", str(args.count)]) as d:
        solo = []
        for k, (path, req) in enumerate(reqs):
            r = send(d.port, path, bodies[k])
            ok = r.status == 200 and r.complete
            report.check("solo %02d %s" % (k, path), ok, "%s %r" % (r, r.body[:200]))
            solo.append(USAGE.sub(b"", r.body) if ok else None)
            if ok and path == "/v1/attention" and isinstance(req["model"], dict) \
                    and "in_proj_weight" in req["model"]:
                check_reference(report, k, req, r.json())
        t_solo = time.monotonic() - t0
        for rnd, order in enumerate([list(range(len(reqs))), list(reversed(range(len(reqs))))]):
            t1 = time.monotonic()
            results = concurrent_pass(d.port, reqs, bodies, order)
            same = 0
            for k, r in enumerate(results):
                got = USAGE.sub(b"", r.body) if r and r.status == 200 and r.complete else None
                if got is not None and got == solo[k]:
                    same += 1
                else:
                    report.check("round %d request %02d identical to solo" % (rnd + 1, k), False,
                                 "%r" % (r,))
            report.check("round %d: %d concurrent answers bit-identical to the solo ones"
                         % (rnd + 1, len(reqs)), same == len(reqs), "%d of %d" % (same, len(reqs)))
            queued = [float(m.group(1)) for m in (re.search(r"queue;dur=([0-9.]+)", r.headers.get("server-timing", ""))
                                                  for r in results if r) if m]
            report.note("round %d: %d requests at once in %.2f s; %d waited in the queue (longest %.1f ms)"
                        % (rnd + 1, len(reqs), time.monotonic() - t1, sum(q > 0.5 for q in queued),
                           max(queued or [0])))
        shapes = {}
        for path, req in reqs:
            key = path if path == "/v1/sdpa" else (req["model"] if isinstance(req["model"], str)
                                                   else "explicit" if "in_proj_weight" in req["model"]
                                                   else "seeded")
            shapes[key] = shapes.get(key, 0) + 1
        report.note("requests: %s; solo pass %.2f s" % (shapes, t_solo))
        report.check("daemon alive", d.alive())
    report.note("concurrency: %.1f s" % (time.monotonic() - t0))
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
