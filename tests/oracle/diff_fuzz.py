#!/usr/bin/python3
"""A randomized differential test of attnd's numbers against a float64 oracle.

    /usr/bin/python3 tests/oracle/diff_fuzz.py [--n 2000] [--seed 1] [--url HOST:PORT]

Without --url it starts ${ATTND_BIN:-build/attnd} on 127.0.0.1 with --port 0
(tests/lib/attnd.py) and stops it at the end. It sends random requests to
POST /v1/sdpa and POST /v1/attention with explicit inputs and weights,
recomputes each in float64 with torch, mirroring the documented semantics
(api/openapi.yaml, engine/attention.h: the ONNX Attention operator for
/v1/sdpa; nn.MultiheadAttention plus masks and positional encodings for
/v1/attention), and compares within 1e-5 + 1e-4 |expected| (the 1e-5 grows
with the inputs' magnitude, as float32 rounding of the dot products does). A
ragged batch is computed item by item, each on its own lengths. Requests made
invalid on purpose must get a 4xx JSON error, never a 5xx or a dead daemon.
The oracle checks itself against torch's nn.MultiheadAttention where that
applies. Needs python3-torch; loopback only. Exit status 0 = no disagreement;
--save DIR keeps each failing request's body for replay.
"""

import argparse
import base64
import http.client
import json
import math
import os
import random
import struct
import sys
import time

import numpy as np
import torch

F64 = torch.float64
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import attnd  # noqa: E402 (tests/lib: the daemon on an ephemeral loopback port)
sys.path.insert(0, os.path.join(ROOT, "tests", "data", "fixtures"))
import make_fixtures  # noqa: E402 (the fixtures' sinusoidal, RoPE and ALiBi, in float64)


# ---------------------------------------------------------------------------
# The daemon and the wire
# ---------------------------------------------------------------------------

class Client:
    def __init__(self, host, port):
        self.host, self.port = host, port
        self.conn = None

    def post(self, path, body):
        data = json.dumps(body, allow_nan=False).encode()
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
            try:
                self.conn.request("POST", path, data, {"Content-Type": "application/json"})
                r = self.conn.getresponse()
                raw = r.read()
                return r.status, json.loads(raw) if raw else None
            except (ConnectionError, http.client.HTTPException) as e:
                self.conn.close()
                self.conn = None
                if attempt:
                    return None, f"{type(e).__name__} ({len(data)} bytes sent)"
        return None


def f32(a):
    """float64 tensor holding float32-exact values."""
    return torch.as_tensor(np.asarray(a, dtype=np.float32).astype(np.float64))


def encode_tensor(rng, t, allow_base64=True, allow_nested=True):
    """A float tensor in one of the three request forms."""
    arr = np.asarray(t, dtype=np.float32)
    forms = ["data"] + (["nested"] if allow_nested else []) + (["base64"] if allow_base64 else [])
    form = rng.choice(forms)
    if form == "nested":
        return jnum(arr.tolist())
    if form == "data":
        return {"shape": list(arr.shape), "data": jnum(arr.ravel().tolist())}
    return {"shape": list(arr.shape),
            "base64": base64.b64encode(arr.astype("<f4").tobytes()).decode()}


def jnum(x):
    if isinstance(x, list):
        return [jnum(v) for v in x]
    if isinstance(x, bool):
        return x
    if math.isinf(x):
        return "-Infinity" if x < 0 else "Infinity"
    return float(x)


def decode_tensor(x):
    """A response tensor (nested, base64 object, or a ragged list) as numpy or a list."""
    if isinstance(x, dict):
        a = np.frombuffer(base64.b64decode(x["base64"]), dtype="<f4").astype(np.float64)
        return a.reshape(x["shape"])
    if isinstance(x, list) and x and isinstance(x[0], dict):
        return [decode_tensor(v) for v in x]

    def conv(v):
        if isinstance(v, list):
            return [conv(u) for u in v]
        if isinstance(v, str):
            return {"-Infinity": -math.inf, "Infinity": math.inf, "NaN": math.nan}[v]
        return v
    return np.asarray(conv(x), dtype=np.float64)


# ---------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------

class Stats:
    def __init__(self):
        self.counts = {}
        self.max_err = 0.0
        self.max_where = ""
        self.failures = []

    def count(self, kind):
        self.counts[kind] = self.counts.get(kind, 0) + 1


def compare(stats, what, got, want, atol):
    """Returns None when got matches want, else a message."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want.detach().numpy() if torch.is_tensor(want) else want, dtype=np.float64)
    if got.shape != want.shape:
        return f"{what}: shape {list(got.shape)} != {list(want.shape)}"
    if np.isnan(got).any():
        return f"{what}: NaN in answer"
    inf_w, inf_g = np.isinf(want), np.isinf(got)
    if (inf_w != inf_g).any() or (got[inf_g] != want[inf_w]).any() if inf_g.any() or inf_w.any() else False:
        idx = np.argwhere(inf_w != inf_g)
        i = tuple(idx[0]) if len(idx) else None
        return f"{what}: infinities differ at {i}: got {got[i] if i else ''} want {want[i] if i else ''}"
    fin = ~inf_w
    if not fin.any():
        return None
    err = np.abs(got[fin] - want[fin])
    tol = atol + 1e-4 * np.abs(want[fin])
    ratio = err / tol
    k = int(np.argmax(ratio))
    if err.max() > stats.max_err:
        stats.max_err = float(err.max())
        stats.max_where = what
    if ratio[k] > 1:
        i = tuple(np.argwhere(fin)[k])
        return f"{what}: at {i} got {got[i]!r} want {want[i]!r} (|err| {err[k]:.3g}, tol {tol[k]:.3g})"
    return None


# ---------------------------------------------------------------------------
# The oracle: ONNX Attention semantics (engine/attention.h) in float64
# ---------------------------------------------------------------------------

def alibi_slopes(H):
    return torch.from_numpy(make_fixtures.alibi_slopes(H))


def user_bias(kind, data, B, H, Lq, Lk):
    """A rank 2..4 mask right-aligned to [B, H, Lq, Lk]; a short last axis hides the rest."""
    data = torch.as_tensor(data, dtype=F64) if kind == "additive" else \
        torch.where(torch.as_tensor(data, dtype=torch.bool), 0.0, -math.inf).to(F64)
    shape = list(data.shape)
    width = shape[-1]
    if width != Lk and width != 1:
        full = torch.full(shape[:-1] + [Lk], -math.inf, dtype=F64)
        full[..., :width] = data
        data = full
    data = data.reshape([1] * (4 - len(shape)) + list(data.shape))
    return data.expand(B, H, Lq, Lk)


def sdpa_core(q, k, v, scale, softcap, bias):
    """q [B,H,Lq,D], k [B,H,Lk,D] (heads already expanded), bias [B,H,Lq,Lk]."""
    raw = scale * torch.einsum("bhid,bhjd->bhij", q, k)
    capped = softcap * torch.tanh(raw / softcap) if softcap > 0 else raw
    masked = capped + bias
    dead = torch.isneginf(masked).all(dim=-1, keepdim=True)
    probs = torch.softmax(torch.where(dead, 0.0, masked), dim=-1)
    probs = torch.where(dead, 0.0, probs)
    out = torch.einsum("bhij,bhjd->bhid", probs, v)
    return out, {"raw": raw, "softcap": capped, "masked": masked, "softmax": probs}


def ref_sdpa(c):
    """c: the case's float64 tensors and options; returns the expected answer."""
    B, H, Hkv, Lq = c["B"], c["H"], c["Hkv"], c["Lq"]
    k, v = c["k"], c["v"]
    P = 0
    if c.get("past_key") is not None:
        P = c["past_key"].shape[2]
        k = torch.cat([c["past_key"], k], dim=2)
        v = torch.cat([c["past_value"], v], dim=2)
    Lk = k.shape[2]
    kh = torch.arange(H) // (H // Hkv)
    bias = torch.zeros(B, H, Lq, Lk, dtype=F64)
    if c.get("mask") is not None:
        bias = bias + user_bias(c["mask_kind"], c["mask"], B, H, Lq, Lk)
    kvl = c.get("kv_lengths")
    i = torch.arange(Lq)[:, None]
    j = torch.arange(Lk)[None, :]
    for b in range(B):
        hide = torch.zeros(Lq, Lk, dtype=torch.bool)
        if c["is_causal"]:
            off = P if kvl is None else kvl[b] - Lq
            hide |= j > i + off
        if kvl is not None:
            hide |= j >= kvl[b]
        bias[b, :, hide] = -math.inf
    scale = c["scale"] or 1.0 / math.sqrt(c["q"].shape[-1])
    out, views = sdpa_core(c["q"], k[:, kh], v[:, kh], scale, c["softcap"], bias)
    res = {"output": out, "views": views, "present_key": k, "present_value": v}
    return res


# ---------------------------------------------------------------------------
# /v1/sdpa cases
# ---------------------------------------------------------------------------

def rand_mask(rng, B, H, Lq, Lk, kind, rank, short=True):
    """A random mask of rank 2..4 with broadcast axes and maybe a short last axis."""
    full = [B, H, Lq, Lk]
    shape = full[4 - rank:]
    shape = [1 if (d != 1 and rng.random() < 0.3 and a < rank - 1) else d
             for a, d in enumerate(shape)]
    r = rng.random()
    if r < 0.2 and Lk > 1 and short:
        shape[-1] = rng.randint(2, Lk) if Lk > 2 else 2  # opset 24: short last axis
    elif r < 0.27:
        shape[-1] = 1
    n = int(np.prod(shape))
    if kind == "bool":
        p = rng.choice([0.9, 0.6, 0.2])
        data = [rng.random() < p for _ in range(n)]
        return np.asarray(data).reshape(shape)
    data = np.array([rng.uniform(-2, 2) for _ in range(n)], dtype=np.float32).astype(np.float64)
    for t in range(n):
        if rng.random() < rng.choice([0.0, 0.2, 0.5]):
            data[t] = -math.inf
    return data.reshape(shape)


HUGE = 0.02  # share of cases past the engine's query and key blocks (--huge)


def rand_dims(rng):
    if rng.random() < HUGE:  # past QUERY_BLOCK 64 and PV_KEYS 512 (engine/attention.c)
        H = rng.choice([1, 2])
        return (rng.choice([1, 2]), H, rng.choice([1, H]), rng.randint(60, 200),
                rng.randint(400, 700), rng.choice([8, 16, 32]), rng.choice([8, 16, 32]))
    big = rng.random() < 0.08
    H = rng.choice([1, 1, 2, 3, 4, 6, 8])
    Hkv = rng.choice([d for d in range(1, H + 1) if H % d == 0])
    D = rng.choice([1, 2, 3, 4, 5, 8, 16, 32] + ([16, 32, 64] if big else []))
    Dv = D if rng.random() < 0.7 else rng.choice([1, 2, 3, 4, 8, 16])
    B = rng.choice([1, 1, 2, 3])
    Lq = rng.randint(1, 70 if big else 7)
    S = rng.randint(1, 150 if big else 9)
    if big:
        B, H, Hkv = 1, min(H, 2), min(Hkv, 2) if H % min(Hkv, 2) == 0 else 1
        Hkv = Hkv if H % Hkv == 0 else 1
    return B, H, Hkv, Lq, S, D, Dv


def sdpa_case(rng):
    B, H, Hkv, Lq, S, D, Dv = rand_dims(rng)
    amp = rng.choice([0.5, 1.0, 3.0])
    q = f32(np.random.default_rng(rng.getrandbits(32)).normal(0, amp, (B, H, Lq, D)))
    g = np.random.default_rng(rng.getrandbits(32))
    k = f32(g.normal(0, amp, (B, Hkv, S, D)))
    v = f32(g.normal(0, 1, (B, Hkv, S, Dv)))
    c = {"B": B, "H": H, "Hkv": Hkv, "Lq": Lq, "q": q, "k": k, "v": v,
         "is_causal": rng.random() < 0.4, "scale": 0.0, "softcap": 0.0, "amp": amp}
    body = {}
    three_d = rng.random() < 0.35
    if three_d:
        body["q"] = encode_tensor(rng, q.permute(0, 2, 1, 3).reshape(B, Lq, H * D))
        body["k"] = encode_tensor(rng, k.permute(0, 2, 1, 3).reshape(B, S, Hkv * D))
        body["v"] = encode_tensor(rng, v.permute(0, 2, 1, 3).reshape(B, S, Hkv * Dv))
        body["num_heads"] = H
        if Hkv != H or rng.random() < 0.5:
            body["num_kv_heads"] = Hkv
    else:
        body["q"] = encode_tensor(rng, q)
        body["k"] = encode_tensor(rng, k)
        body["v"] = encode_tensor(rng, v)
        if rng.random() < 0.3:
            body["num_heads"] = H
        if rng.random() < 0.3:
            body["num_kv_heads"] = Hkv
    P = 0
    cache = rng.random()
    if cache < 0.25:
        P = rng.choice([0, 1, 2, 3, 4, 5])  # P = 0: ONNX's empty cache before the first step
        pk = f32(g.normal(0, amp, (B, Hkv, P, D)))
        pv = f32(g.normal(0, 1, (B, Hkv, P, Dv)))
        if True:
            c["past_key"], c["past_value"] = pk, pv
            # nested arrays cannot carry an empty axis's neighbours: shape and data
            body["past_key"] = encode_tensor(rng, pk, allow_nested=P > 0)
            body["past_value"] = encode_tensor(rng, pv, allow_nested=P > 0)
    elif cache < 0.45:
        c["kv_lengths"] = [rng.randint(0, S) for _ in range(B)]
        body["kv_lengths"] = c["kv_lengths"]
    Lk = P + S
    if c["is_causal"]:
        body["is_causal"] = True
    if rng.random() < 0.45:
        kind = rng.choice(["bool", "additive"])
        # rank 1 is [Lk], broadcast over [B, H, Lq] (numpy's rule, ONNX's too)
        rank = rng.randint(1, 4) if Lq * Lk < 20000 else rng.randint(1, 2)  # --max-body
        m = rand_mask(rng, B, H, Lq, Lk, kind, rank)
        c["mask"], c["mask_kind"] = m, kind
        body["attn_mask"] = jnum(m.tolist()) if kind == "bool" else \
            encode_tensor(rng, m) if not np.isinf(m).any() or rng.random() < 0.5 else \
            rng.choice([jnum(m.tolist()), {"shape": list(m.shape), "data": jnum(m.ravel().tolist())},
                        {"shape": list(m.shape), "base64": base64.b64encode(
                            m.astype("<f4").tobytes()).decode()}])
    if rng.random() < 0.25:
        c["scale"] = float(np.float32(rng.choice([0.1, 0.25, 1.0, 2.0, rng.uniform(0.01, 1.5)])))
        body["scale"] = c["scale"]
    if rng.random() < 0.25:
        c["softcap"] = float(np.float32(rng.choice([0.5, 1.0, 5.0, 30.0, rng.uniform(0.1, 10)])))
        body["softcap"] = c["softcap"]
    body["weights"] = rng.choice(["none", "none", "per_head", "mean"])
    body["scores"] = rng.choice(["none", "none", "raw", "softcap", "masked", "softmax"])
    if rng.random() < 0.3:
        body["encoding"] = "base64"
    exp = ref_sdpa(c)
    out = exp["output"]
    if three_d:
        out = out.permute(0, 2, 1, 3).reshape(B, Lq, H * Dv)
    want = {"output": out}
    if P or "past_key" in c:
        want["present_key"] = exp["present_key"]
        want["present_value"] = exp["present_value"]
    if body["weights"] == "per_head":
        want["weights"] = exp["views"]["softmax"]
    elif body["weights"] == "mean":
        want["weights"] = exp["views"]["softmax"].mean(dim=1)
    if body["scores"] != "none":
        want["scores"] = exp["views"][body["scores"]]
    # scores grow with |q||k|: allow float32 rounding of a D-term dot product
    atol = 1e-5 * max(1.0, amp * amp * math.sqrt(D) * (c["scale"] or 1 / math.sqrt(D)) * math.sqrt(D))
    return body, want, atol


# ---------------------------------------------------------------------------
# /v1/attention: the layer in float64
# ---------------------------------------------------------------------------

def sinusoidal(p, E, theta):
    return torch.from_numpy(make_fixtures.sinusoidal(np.asarray(p, dtype=np.float64), E, theta))


def rope(x, p, pos):
    """x [..., L, D] rotated at positions p [L] (the fixtures' own rope)."""
    return torch.from_numpy(make_fixtures.rope(x.numpy(), np.asarray(p, dtype=np.float64), pos))


def ref_layer(m, item):
    """One item (unbatched) through the layer: item has xq [Lq,E], xk, xv [Lk,E]
    and options; returns out [Lq,E], probs [H,Lq,Lk], views."""
    E, H, Hkv = m["E"], m["H"], m["Hkv"]
    D = E // H
    xq, xk, xv = item["xq"], item["xk"], item["xv"]
    Lq, Lk = xq.shape[0], xk.shape[0]
    pos = item["pos"]
    kind = pos.get("type", "none")
    off = pos.get("offset", 0)
    qp_list = item.get("qpos")
    kp_list = item.get("kpos")
    if item["self"]:
        kp_list = qp_list
    qp = torch.tensor(qp_list, dtype=F64) if qp_list is not None else off + torch.arange(Lq, dtype=F64)
    kp = torch.tensor(kp_list, dtype=F64) if kp_list is not None else off + torch.arange(Lk, dtype=F64)
    if kind == "sinusoidal":
        th = pos.get("theta", 10000.0)
        sc = pos.get("scaling", 1.0)  # position / scaling, as rope's
        xq = xq + sinusoidal(qp / sc, E, th)
        xk = xk + sinusoidal(kp / sc, E, th)
        xv = xv + sinusoidal(kp / sc, E, th)
    w, b = m["w_in"], m["b_in"]
    wq, wk, wv = w[:H * D], w[H * D:(H + Hkv) * D], w[(H + Hkv) * D:]
    bq, bk, bv = b[:H * D], b[H * D:(H + Hkv) * D], b[(H + Hkv) * D:]
    q = (xq @ wq.T + bq).reshape(Lq, H, D).transpose(0, 1)
    k = (xk @ wk.T + bk).reshape(Lk, Hkv, D).transpose(0, 1)
    v = (xv @ wv.T + bv).reshape(Lk, Hkv, D).transpose(0, 1)
    if kind == "rope":
        q = rope(q, qp, pos)
        k = rope(k, kp, pos)
    kh = torch.arange(H) // (H // Hkv)
    # bias: user mask, visibility, ALiBi
    bias = torch.zeros(1, H, Lq, Lk, dtype=F64)
    if item.get("user") is not None:
        bias = bias + user_bias(item["user_kind"], item["user"], 1, H, Lq, Lk)
    mk = item["mask"]
    length = Lk if mk.get("length") is None else min(Lk, mk["length"])
    br = mk.get("bottom_right", False)
    shift = (length - Lq) if br else 0
    i = torch.arange(Lq)[:, None]
    j = torch.arange(Lk)[None, :]
    qpos = i + shift
    hide = (j >= length).expand(Lq, Lk).clone()
    win = mk.get("window", 0)
    if mk.get("causal"):
        hide |= j > qpos
        if win:
            hide |= ~(qpos - win < j)
    elif win:
        hide |= ~((qpos - win < j) & (j < qpos + win))
    bias[0, :, hide] = -math.inf
    if kind == "alibi":
        # a side without a list beside one with a list: offset + index
        aq = torch.tensor(qp_list, dtype=F64)[:, None] if qp_list is not None else \
            (off + i).to(F64) if kp_list is not None else qpos.to(F64)
        ak = torch.tensor(kp_list, dtype=F64)[None, :] if kp_list is not None else \
            (off + j).to(F64) if qp_list is not None else j.to(F64)
        dist = (aq - ak).abs()
        bias = bias - alibi_slopes(H)[None, :, None, None] * dist[None, None]
    scale = item["scale"] or 1.0 / math.sqrt(D)
    ctx, views = sdpa_core(q[None], k[None, kh], v[None, kh], scale, item["softcap"], bias)
    ctx = ctx[0].transpose(0, 1).reshape(Lq, H * D)
    out = ctx @ m["w_out"].T + m["b_out"]
    return out, {key: t[0] for key, t in views.items()}


def torch_mha_check(m, item, out, probs):
    """Checks the oracle itself against nn.MultiheadAttention where it applies."""
    E, H = m["E"], m["H"]
    mha = torch.nn.MultiheadAttention(E, H, bias=True, batch_first=True).to(F64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(m["w_in"])
        mha.in_proj_bias.copy_(m["b_in"])
        mha.out_proj.weight.copy_(m["w_out"])
        mha.out_proj.bias.copy_(m["b_out"])
        o, w = mha(item["xq"][None], item["xk"][None], item["xv"][None],
                   need_weights=True, average_attn_weights=False)
    err = max((o[0] - out).abs().max().item(), (w[0] - probs).abs().max().item())
    if err > 1e-9:
        raise SystemExit(f"the oracle disagrees with nn.MultiheadAttention by {err}")


def attention_case(rng, stats):
    H = rng.choice([1, 1, 2, 2, 3, 4, 8])
    Hkv = rng.choice([d for d in range(1, H + 1) if H % d == 0]) if rng.random() < 0.4 else H
    D = rng.choice([1, 2, 3, 4, 6, 8, 16])
    E = H * D
    if E > 64:
        D, E = 8, 8 * H
    g = np.random.default_rng(rng.getrandbits(32))
    bias = rng.random() < 0.7
    wsc = 1.0 / math.sqrt(E)
    m = {"E": E, "H": H, "Hkv": Hkv,
         "w_in": f32(g.normal(0, wsc, ((H + 2 * Hkv) * D, E))),
         "w_out": f32(g.normal(0, wsc, (E, E))),
         "b_in": f32(g.normal(0, 0.1, ((H + 2 * Hkv) * D,)) if bias else np.zeros((H + 2 * Hkv) * D)),
         "b_out": f32(g.normal(0, 0.1, (E,)) if bias else np.zeros(E))}
    model = {"d_model": E, "num_heads": H,
             "in_proj_weight": encode_tensor(rng, m["w_in"]),
             "out_proj_weight": encode_tensor(rng, m["w_out"])}
    if Hkv != H or rng.random() < 0.3:
        model["num_kv_heads"] = Hkv
    if bias:
        model["in_proj_bias"] = encode_tensor(rng, m["b_in"])
        model["out_proj_bias"] = encode_tensor(rng, m["b_out"])
    big = rng.random() < 0.06
    huge = E <= 32 and rng.random() < HUGE * 3  # past mha_stream.c's KEY_BLOCK 512
    batched = rng.random() < 0.5
    B = rng.randint(1, 3) if batched else 1
    ragged = batched and B > 1 and rng.random() < 0.5
    Lmax = 700 if huge else 80 if big else 7
    Lqs = [rng.randint(1, Lmax) for _ in range(B)]
    if not ragged:
        Lqs = [Lqs[0]] * B
    cross = rng.random() < 0.35
    amp = rng.choice([0.5, 1.0, 2.0])
    xq = [f32(g.normal(0, amp, (L, E))) for L in Lqs]
    body = {"model": model}
    if cross:
        kragged = ragged and rng.random() < 0.5
        Lks = [rng.randint(1, Lmax) for _ in range(B)]
        if not kragged:
            Lks = [Lks[0]] * B
        xk = [f32(g.normal(0, amp, (L, E))) for L in Lks]
        has_value = rng.random() < 0.6
        xv = [f32(g.normal(0, amp, (L, E))) for L in Lks] if has_value else xk
    else:
        Lks = Lqs
        xk, xv = xq, xq
        has_value = False

    def put(seq, is_ragged):
        if not batched:
            return encode_tensor(rng, seq[0])
        if is_ragged or len(set(t.shape[0] for t in seq)) > 1:
            return jnum([t.numpy().astype(np.float32).tolist() for t in seq])
        return encode_tensor(rng, torch.stack(seq))
    if not cross and rng.random() < 0.15:  # token ids through an inline embedding table
        V = rng.randint(1, 40)
        table = f32(g.normal(0, amp, (V, E)))
        model["vocab_size"] = V
        model["embed_tokens"] = encode_tensor(rng, table)
        ids = [[rng.randrange(V) for _ in range(L)] for L in Lqs]
        xq = [table[torch.tensor(t)] for t in ids]
        xk, xv = xq, xq
        body["tokens"] = ids if batched else ids[0]
    else:
        body["embeddings"] = put(xq, ragged)
    if cross:
        body["key"] = put(xk, True)
        if has_value:
            body["value"] = put(xv, True)
    Lq, Lk = max(Lqs), max(Lks)
    ragged = len(set(Lqs)) > 1 or len(set(Lks)) > 1  # equal lengths by chance are not

    # mask
    mk = {}
    mask_body = None
    user = None
    r = rng.random()
    if r < 0.2:
        mask_body = "causal"
        mk["causal"] = True
    elif r < 0.7:
        mask_body = {}
        if rng.random() < 0.5:
            mk["causal"] = True
            mask_body["causal"] = True
        if rng.random() < 0.4:
            mk["bottom_right"] = True
            mask_body["alignment"] = "bottom_right"
        if rng.random() < 0.3:
            mk["window"] = rng.randint(1, 5)
            mask_body["window"] = mk["window"]
        if rng.random() < 0.3:
            mask_body["lengths"] = [rng.randint(0, Lks[b]) for b in range(B)]
        if rng.random() < 0.4:
            kind = rng.choice(["bool", "additive"])
            rank = rng.choice([2, 3, 4]) if batched and Lq * Lk < 20000 else 2  # --max-body
            # the API's shapes: [Lq, Lk], [B, Lq, Lk] or [B, H, Lq, Lk]
            if rank == 3:
                u = rand_mask(rng, B, 1, Lq, Lk, kind, 4, short=False)[:, 0]
            else:  # /v1/attention takes no short last axis (only /v1/sdpa does)
                u = rand_mask(rng, B, H, Lq, Lk, kind, rank, short=False)
                if rank == 4 and u.shape[0] not in (1, B):
                    u = u[:1]
            user = (kind, u)
            key = "allow" if kind == "bool" else "bias"
            mask_body[key] = jnum(u.tolist()) if kind == "bool" else encode_tensor(
                rng, u, allow_nested=True)
        if not mask_body and rng.random() < 0.5:
            mask_body = "none"
    if mask_body is not None:
        body["mask"] = mask_body

    # positional
    pos = {}
    r = rng.random()
    if r < 0.5:
        kind = rng.choice(["sinusoidal", "rope", "rope", "alibi"])
        if kind == "rope" and D == 1:
            kind = "alibi"
        pos["type"] = kind
        if rng.random() < 0.5 and not (kind == "rope" and D % 2):
            body["positional"] = kind
        else:
            pb = {"type": kind}
            if kind != "alibi" and rng.random() < 0.4:
                pos["theta"] = pb["theta"] = rng.choice([500.0, 10000.0, 1e6, 2.5])
            if kind == "rope":
                if rng.random() < 0.5:
                    pos["style"] = pb["style"] = rng.choice(["interleaved", "half"])
                if rng.random() < 0.3 or D % 2:  # an odd D needs an even rotary_dim
                    pos["rotary_dim"] = pb["rotary_dim"] = rng.choice(
                        [r_ for r_ in range(2 if D % 2 else 0, D + 1, 2)])
                if rng.random() < 0.3:
                    pos["scaling"] = pb["scaling"] = rng.choice([0.5, 2.0, 4.0])
            if kind == "sinusoidal" and rng.random() < 0.3:
                pos["scaling"] = pb["scaling"] = rng.choice([0.5, 2.0, 4.0, 1e-3])
            if rng.random() < 0.3:
                pos["offset"] = pb["offset"] = rng.randint(0, 2000)
            if rng.random() < 0.25:  # a ragged item reads the first Lq_b
                qpl = [float(rng.randint(0, 50)) for _ in range(Lq)]
                pos["qpos"] = pb["positions"] = qpl
            if cross and rng.random() < 0.25:
                kpl = [float(rng.randint(0, 50)) for _ in range(Lk)]
                pos["kpos"] = pb["key_positions"] = kpl
            body["positional"] = pb
    scale = 0.0
    if rng.random() < 0.2:
        scale = float(np.float32(rng.choice([0.125, 0.5, 1.0, rng.uniform(0.05, 2)])))
        body["scale"] = scale
    softcap = 0.0
    if rng.random() < 0.2:
        softcap = float(np.float32(rng.choice([0.5, 2.0, 30.0, rng.uniform(0.2, 5)])))
        body["softcap"] = softcap
    wmode = rng.choice(["none", "per_head", "per_head", "mean", None])
    if wmode is not None:
        body["weights"] = wmode
    else:
        wmode = "per_head"
    sview = rng.choice(["none", "none", "none", "raw", "softcap", "masked", "softmax"])
    if sview != "none" or rng.random() < 0.2:
        body["scores"] = sview
    if rng.random() < 0.3:
        body["encoding"] = "base64"

    # expected, item by item
    outs, probs, views = [], [], []
    lengths = mask_body.get("lengths") if isinstance(mask_body, dict) else None
    for b in range(B):
        item = {"xq": xq[b], "xk": xk[b], "xv": xv[b], "self": not cross,
                "pos": pos, "qpos": pos["qpos"][:Lqs[b]] if "qpos" in pos else None,
                "kpos": pos["kpos"][:Lks[b]] if "kpos" in pos else None,
                "scale": scale, "softcap": softcap,
                "mask": dict(mk, length=(lengths[b] if lengths else None))}
        if user is not None:
            kind_, u = user
            ub = u
            if u.ndim >= 3:
                ub = u[b] if u.shape[0] == B and B > 1 else u[0]
            # trim to this item's own lengths
            ub = ub[..., :Lqs[b], :] if ub.shape[-2] != 1 else ub
            width = ub.shape[-1]
            if width > Lks[b]:
                ub = ub[..., :Lks[b]]
            elif width != 1 and width < Lk and width >= Lks[b]:
                ub = ub[..., :Lks[b]]
            item["user"], item["user_kind"] = ub, kind_
        o, v_ = ref_layer(m, item)
        if b == 0 and not pos and not mk and user is None and not scale and not softcap \
                and Hkv == H and not lengths and stats.counts.get("mha_selfcheck", 0) < 200:
            torch_mha_check(m, item, o, v_["softmax"])
            stats.count("mha_selfcheck")
        outs.append(o)
        probs.append(v_["softmax"])
        views.append(v_)

    def shape_out(items):
        """A ragged batch answers one tensor per item; else [B, ...] or unbatched."""
        if ragged:
            return list(items)
        t = torch.stack(items)
        return t if batched else t[0]
    want = {"output": shape_out(outs)}
    if wmode == "per_head":
        want["weights"] = shape_out(probs)
    elif wmode == "mean":
        want["weights"] = shape_out([p.mean(dim=0) for p in probs])
    if sview != "none":
        want["scores"] = shape_out([v_[sview] for v_ in views])
    atol = 1e-5 * max(1.0, amp * amp * (scale * math.sqrt(D) if scale else 1.0) * 2)
    return body, want, atol, ragged


# ---------------------------------------------------------------------------
# Invalid requests: 4xx JSON, never 5xx
# ---------------------------------------------------------------------------

def invalid_sdpa(rng):
    body, _, _ = sdpa_case(rng)
    mutations = [
        lambda b: b.update(num_heads=7) if isinstance(b["q"], dict) else b.update(num_heads=0),
        lambda b: b.update(num_kv_heads=5),
        lambda b: b.update(scale=0),
        lambda b: b.update(softcap=-1),
        lambda b: b.update(kv_lengths=[10 ** 6]),
        lambda b: b.update(kv_lengths=[-1]),
        lambda b: b.update(past_key=b["k"]) if "past_value" not in b else b.pop("past_value"),
        lambda b: b.update(attn_mask=[[["Infinity"]]]),
        lambda b: b.update(attn_mask=[[[[[True]]]]]),
        lambda b: b.update(attn_mask=[[True, 1.0]]),
        lambda b: b.update(attn_mask=[[]]),
        lambda b: b.update(attn_mask={"shape": [1, 1], "base64": "AAAA"}),
        lambda b: b.update(attn_mask={"shape": [2, 3000], "data": [0.0]}),
        lambda b: b.update(q=[[[[1e39]]]]),
        lambda b: b.update(q={"shape": [1, 1, 1, 1], "base64": base64.b64encode(
            struct.pack("<f", math.nan)).decode()}),
        lambda b: b.update(v=[[[[]]]]),
        lambda b: b.update(weights="all"),
        lambda b: b.update(scores="logits"),
        lambda b: b.update(precision=0),
        lambda b: b.update(precision=4, encoding="base64"),
        lambda b: b.update(is_causal=1),
        lambda b: b.update(extra=True),
        lambda b: b.update(q=[[1.0]]),
        lambda b: b.update(k={"shape": [1, 1, 1], "data": [1.0, 2.0]}),
        lambda b: b.update(kv_lengths=[1], past_key=[[[[1.0]]]], past_value=[[[[1.0]]]]),
        lambda b: b.update(q=[[[[1.0, 2.0]]]], k=[[[[1.0]]]], v=[[[[1.0]]]]),
        lambda b: b.update(q=[[[[3.0e38]]]], k=[[[[3.0e38]]]], v=[[[[1.0]]]], scale=1e30),
        lambda b: b.update(q=[[[[1.0]]]], k=[[[[1.0]]]], v=[[[[1.0]]]],
                           attn_mask=[[-3.0e38]], scale=1e30),
    ]
    rng.choice(mutations)(body)
    return body


def invalid_attention(rng, stats):
    body, _, _, _ = attention_case(rng, stats)
    mutations = [
        lambda b: b.update(mask={"causal": True, "window": 0}),
        lambda b: b.update(mask={"lengths": [10 ** 6] * 5}),
        lambda b: b.update(mask={"allow": [[True]], "bias": [[0.0]]}),
        lambda b: b.update(mask={"allow": [[[[[True]]]]]}),
        lambda b: b.update(mask={"bias": [["NaN"]]}),
        lambda b: b.update(mask={"alignment": "middle"}),
        lambda b: b.update(positional={"type": "rope", "rotary_dim": 3}),
        lambda b: b.update(positional={"type": "rope", "rotary_dim": 10 ** 4}),
        lambda b: b.update(positional={"type": "alibi", "theta": 5.0}),
        lambda b: b.update(positional={"type": "sinusoidal", "style": "half"}),
        lambda b: b.update(positional={"type": "rope", "theta": 1.0}),
        lambda b: b.update(positional={"type": "rope", "positions": [1.0]}),
        lambda b: b.update(positional={"type": "rope", "key_positions": [1.0, 2.0]}),
        lambda b: b.update(positional={"type": "rope", "positions": [-1.0] * 100}),
        lambda b: b.update(positional="none", positions=True),
        lambda b: b.update(positional="alibi", positions=True),
        lambda b: b.update(value=b.get("embeddings", [[0.0]])) if "key" not in b else b.pop("key"),
        lambda b: b.update(key=[[[1.0]]]),
        lambda b: b.update(scale=-1.0),
        lambda b: b.update(softcap=1e31),
        lambda b: b.update(layers="all"),
        lambda b: b.update(heads=[0]),
        lambda b: b.update(model=dict(b["model"], num_kv_heads=b["model"]["num_heads"] + 1)),
        lambda b: b.update(model=dict(b["model"], in_proj_bias=[0.0])),
        lambda b: b.update(model=dict(b["model"], out_proj_weight=[[1.0]])),
        lambda b: b.update(embeddings=[[[]]]),
        lambda b: [b.pop("tokens", None), b.update(embeddings=[[1e39] * b["model"]["d_model"]])],
        lambda b: [b.pop("tokens", None),
                   b.update(embeddings=[[3e38] * b["model"]["d_model"]] * 2, scale=1e30)],
        lambda b: b.update(tokens=[1, 2]),
        lambda b: b.update(text="hello"),
    ]
    rng.choice(mutations)(body)
    return body


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------

def check_answer(stats, kind, body, status, ans, want, atol, ragged):
    if status != 200:
        return f"status {status}: {json.dumps(ans)[:300]}"
    for key, w in want.items():
        if key not in ans:
            return f"{key} missing from the answer"
        if ragged:
            if not isinstance(ans[key], list):
                return f"{key}: not a list of items"
            got = [decode_tensor(x) for x in ans[key]]
            if len(got) != len(w):
                return f"{key}: {len(got)} items, want {len(w)}"
            for b, (gb, wb) in enumerate(zip(got, w)):
                msg = compare(stats, f"{key}[{b}]", gb, wb, atol)
                if msg:
                    return msg
        else:
            msg = compare(stats, key, decode_tensor(ans[key]), w, atol)
            if msg:
                return msg
    for extra in ("weights", "scores", "present_key", "present_value"):
        if extra in ans and extra not in want:
            return f"unexpected {extra} in the answer"
    return None


def main():
    global HUGE
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--url", help="host:port of a running attnd")
    ap.add_argument("--invalid", type=float, default=0.1, help="share of invalid requests")
    ap.add_argument("--save", help="folder for the failing requests")
    ap.add_argument("--max-fail", type=int, default=20)
    ap.add_argument("--huge", type=float, default=0.02, help="share of long sequences")
    a = ap.parse_args()
    HUGE = a.huge
    torch.manual_seed(0)
    proc = None
    if a.url:
        host, port = a.url.rsplit(":", 1)
        port = int(port)
    else:
        proc = attnd.Daemon(["--threads", "2"])
        host, port = proc.host, proc.port
    cl = Client(host, port)
    stats = Stats()
    rng = random.Random(a.seed)
    t0 = time.time()
    try:
        for n in range(a.n):
            case_seed = rng.getrandbits(48)
            crng = random.Random(case_seed)
            r = crng.random()
            if r < a.invalid:
                if crng.random() < 0.5:
                    kind, path, body = "sdpa-invalid", "/v1/sdpa", invalid_sdpa(crng)
                else:
                    kind, path, body = "attention-invalid", "/v1/attention", invalid_attention(crng, stats)
                status, ans = cl.post(path, body)
                stats.count(kind)
                ok = status == 200 or (status is not None and 400 <= status < 500 and isinstance(ans, dict) and "error" in ans)
                msg = None if ok else f"status {status}: {json.dumps(ans)[:300]}"
            elif r < a.invalid + (1 - a.invalid) / 2:
                kind, path = "sdpa", "/v1/sdpa"
                body, want, atol = sdpa_case(crng)
                status, ans = cl.post(path, body)
                stats.count(kind)
                msg = check_answer(stats, kind, body, status, ans, want, atol, False)
            else:
                kind, path = "attention", "/v1/attention"
                body, want, atol, ragged = attention_case(crng, stats)
                status, ans = cl.post(path, body)
                stats.count(kind + ("-ragged" if ragged else ""))
                msg = check_answer(stats, kind, body, status, ans, want, atol, ragged)
            if proc is not None and not proc.alive():
                raise SystemExit(f"attnd died on case seed {case_seed} ({kind})")
            if msg:
                stats.failures.append((kind, case_seed, msg))
                print(f"FAIL {kind} seed={case_seed}: {msg}", flush=True)
                if a.save:
                    os.makedirs(a.save, exist_ok=True)
                    with open(os.path.join(a.save, f"{kind}-{case_seed}.json"), "w") as f:
                        json.dump(body, f)
                if len(stats.failures) >= a.max_fail:
                    break
    finally:
        if proc is not None:
            proc.stop()
            proc.cleanup()
    print(f"{sum(v for k, v in stats.counts.items() if k != 'mha_selfcheck')} requests in "
          f"{time.time() - t0:.0f} s: " + ", ".join(f"{k} {v}" for k, v in sorted(stats.counts.items())))
    print(f"max |err| {stats.max_err:.3g} ({stats.max_where}); {len(stats.failures)} disagreements")
    return 1 if stats.failures else 0


if __name__ == "__main__":
    sys.exit(main())
