#!/usr/bin/python3
"""Checks the committed fixtures against a second formulation.

Usage: self_check.py CHECKPOINT_DIR

For every case it reads the files back as a loader would (its own safetensors
reader, config.json parsed as transformers does, prefixes and gamma/beta found
from the names), runs each item ALONE (no padding) through a float64 numpy
model written differently from models.py (per-head loops, query head h reading
kv head h // (H / Hkv) instead of repeat_kv, RoPE as an explicit rotation of
the channel pairs (i, i + D/2), masks as index tests, erf/tanh GELU by
formula), and compares with expected.json. It also checks that every
attention row sums to 1 and is zero where masked, and that a rerun of the
generator gives byte-identical files. Where a run keeps "projections" (each
layer's q, k, v), they are compared with the float64 model's per-head q, k, v
(Llama's q, k rotated, kv head h // (H / Hkv) for query head h), and the
file's own scores must be scale * q_i . k_j of the file's own q and k wherever
key j is visible, and finfo(float32).min exactly where it is not.
"""

import filecmp
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOL_ATT = 2e-5   # absolute, on weights in [0, 1]
TOL_HID = 2e-4   # relative to max(1, |value|)
TOL_PROJ = 1e-5  # q, k, v against the float64 model, relative to max(1, |value|)
TOL_QK = 1e-5    # scores against scale * q . k of the file's q, k, relative to max(1, |score|)


# ---------------------------------------------------------------- reading

def read_safetensors(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    assert n % 8 == 0, path
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            assert info == {"format": "pt"}
            continue
        a, b = info["data_offsets"]
        raw = body[a:b]
        if info["dtype"] == "F32":
            x = np.frombuffer(raw, "<f4").astype(np.float64)
        elif info["dtype"] == "F16":
            x = np.frombuffer(raw, "<f2").astype(np.float64)
        elif info["dtype"] == "BF16":
            x = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        elif info["dtype"] == "BOOL":
            x = np.frombuffer(raw, np.uint8).astype(np.float64)
        else:
            raise ValueError(info["dtype"])
        assert x.size == int(np.prod(info["shape"])), name
        out[name] = x.reshape(info["shape"])
    return out


def read_weights(folder):
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        wm = json.load(open(index))["weight_map"]
        w = {}
        for f in sorted(set(wm.values())):
            part = read_safetensors(os.path.join(folder, f))
            assert all(wm[n] == f for n in part), f
            w.update(part)
        assert set(w) == set(wm)
        return w
    return read_safetensors(os.path.join(folder, "model.safetensors"))


def canonical(w, family, model_type):
    """Strips the head model's prefix and renames gamma/beta."""
    prefix = {"gpt2": "transformer.", "bert": "bert.", "llama": "model."}[family]
    if model_type == "roberta":
        prefix = "roberta."
    out = {}
    for n, t in w.items():
        if n.startswith(prefix):
            n = n[len(prefix):]
        if n.endswith("LayerNorm.gamma"):
            n = n[:-5] + "weight"
        elif n.endswith("LayerNorm.beta"):
            n = n[:-4] + "bias"
        out[n] = t
    return out


def parse_config(cfg):
    """The sizes transformers derives from config.json."""
    mt = cfg["model_type"]
    if mt == "gpt2":
        E = cfg["n_embd"]
        return {"family": "gpt2", "E": E, "H": cfg["n_head"], "N": cfg["n_layer"],
                "eps": cfg["layer_norm_epsilon"], "scale": cfg.get("scale_attn_weights", True)}
    if mt in ("bert", "roberta"):
        assert cfg["hidden_act"] == "gelu" and cfg.get("position_embedding_type", "absolute") == "absolute"
        return {"family": "bert", "E": cfg["hidden_size"], "H": cfg["num_attention_heads"],
                "N": cfg["num_hidden_layers"], "eps": cfg["layer_norm_eps"],
                "pad": cfg.get("pad_token_id", 1) if mt == "roberta" else None}
    E, H = cfg["hidden_size"], cfg["num_attention_heads"]
    p = {"family": "llama", "E": E, "H": H, "N": cfg["num_hidden_layers"],
         "Hkv": cfg.get("num_key_value_heads") or H, "D": cfg.get("head_dim") or E // H,
         "eps": cfg["rms_norm_eps"]}
    if "rope_parameters" in cfg:  # transformers 5.x
        rope = dict(cfg["rope_parameters"])
        p["theta"] = rope.pop("rope_theta")
    else:
        rope = dict(cfg.get("rope_scaling") or {"rope_type": "default"})
        p["theta"] = cfg.get("rope_theta", 10000.0)
    rope["rope_type"] = rope.get("rope_type", rope.get("type"))
    p["rope"] = rope
    p["windows"] = [0] * p["N"]
    if mt == "mistral":
        p["windows"] = [cfg.get("sliding_window") or 0] * p["N"]
    if mt == "qwen2":  # Qwen2Config: the window only with use_sliding_window
        window = cfg.get("sliding_window", 4096) if cfg.get("use_sliding_window") else None
        types = cfg.get("layer_types") or [
            "sliding_attention" if window is not None and l >= cfg.get("max_window_layers", 28)
            else "full_attention" for l in range(p["N"])]
        p["windows"] = [window if t == "sliding_attention" else 0 for t in types]
    return p


# ---------------------------------------------------------------- float64 formulation

def layer_norm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def softmax_rows(s, visible):
    out = np.zeros_like(s)
    for i in range(s.shape[0]):
        js = [j for j in range(s.shape[1]) if visible(i, j)]
        e = np.exp(s[i, js] - s[i, js].max())
        out[i, js] = e / e.sum()
    return out


def visible_matrix(L, visible):
    return np.array([[bool(visible(i, j)) for j in range(L)] for i in range(L)])


def attend(q, k, v, scale, visible):
    """q [L, D], k, v [L, D] of one head -> (weights [L, L], out [L, D])."""
    a = softmax_rows(np.einsum("id,jd->ij", q, k) * scale, visible)
    return a, a @ v


def gpt2_ref(p, w, ids):
    E, H, L = p["E"], p["H"], len(ids)
    D = E // H
    x = w["wte.weight"][ids] + w["wpe.weight"][:L]
    atts, hid, projs = [], [], []
    for l in range(p["N"]):
        g = lambda n: w["h.%d.%s" % (l, n)]
        h = layer_norm(x, g("ln_1.weight"), g("ln_1.bias"), p["eps"])
        qkv = h @ g("attn.c_attn.weight") + g("attn.c_attn.bias")  # Conv1D [in, out]
        heads, outs, qs, ks, vs = [], [], [], [], []
        scale = 1 / math.sqrt(D) if p["scale"] else 1.0
        for hh in range(H):
            q = qkv[:, hh * D:(hh + 1) * D]
            k = qkv[:, E + hh * D:E + (hh + 1) * D]
            v = qkv[:, 2 * E + hh * D:2 * E + (hh + 1) * D]
            a, o = attend(q, k, v, scale, lambda i, j: j <= i)
            heads.append(a)
            outs.append(o)
            qs.append(q), ks.append(k), vs.append(v)
        projs.append((np.stack(qs), np.stack(ks), np.stack(vs), scale, visible_matrix(L, lambda i, j: j <= i)))
        x = x + np.concatenate(outs, 1) @ g("attn.c_proj.weight") + g("attn.c_proj.bias")
        h = layer_norm(x, g("ln_2.weight"), g("ln_2.bias"), p["eps"])
        u = h @ g("mlp.c_fc.weight") + g("mlp.c_fc.bias")
        u = 0.5 * u * (1 + np.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u ** 3)))
        x = x + u @ g("mlp.c_proj.weight") + g("mlp.c_proj.bias")
        atts.append(np.stack(heads))
        hid.append(x)
    hid[-1] = layer_norm(x, w["ln_f.weight"], w["ln_f.bias"], p["eps"])
    return atts, hid, projs


def bert_ref(p, w, ids, types):
    E, H, L = p["E"], p["H"], len(ids)
    D = E // H
    e = lambda n: w["embeddings." + n]
    pos = list(range(L))
    if p["pad"] is not None:  # RoBERTa: count the non-pad ids on from the pad id
        pos, n = [], 0
        for t in ids:
            n += t != p["pad"]
            pos.append(p["pad"] if t == p["pad"] else p["pad"] + n)
    x = e("word_embeddings.weight")[ids] + e("position_embeddings.weight")[pos] \
        + e("token_type_embeddings.weight")[types]
    x = layer_norm(x, e("LayerNorm.weight"), e("LayerNorm.bias"), p["eps"])
    erf = np.vectorize(math.erf)
    atts, hid, projs = [], [], []
    for l in range(p["N"]):
        g = lambda n: w["encoder.layer.%d.%s" % (l, n)]
        lin = lambda t, n: t @ g(n + ".weight").T + g(n + ".bias")
        q, k, v = (lin(x, "attention.self." + n) for n in ("query", "key", "value"))
        heads, outs, qs, ks, vs = [], [], [], [], []
        for hh in range(H):
            sl = slice(hh * D, (hh + 1) * D)
            a, o = attend(q[:, sl], k[:, sl], v[:, sl], 1 / math.sqrt(D), lambda i, j: True)
            heads.append(a)
            outs.append(o)
            qs.append(q[:, sl]), ks.append(k[:, sl]), vs.append(v[:, sl])
        projs.append((np.stack(qs), np.stack(ks), np.stack(vs), 1 / math.sqrt(D),
                      visible_matrix(L, lambda i, j: True)))
        x = layer_norm(x + lin(np.concatenate(outs, 1), "attention.output.dense"),
                       g("attention.output.LayerNorm.weight"), g("attention.output.LayerNorm.bias"), p["eps"])
        u = lin(x, "intermediate.dense")
        u = 0.5 * u * (1 + erf(u / math.sqrt(2)))
        x = layer_norm(x + lin(u, "output.dense"), g("output.LayerNorm.weight"), g("output.LayerNorm.bias"),
                       p["eps"])
        atts.append(np.stack(heads))
        hid.append(x)
    return atts, hid, projs


def inv_freq64(p):
    D, rope = p["D"], p["rope"]
    f = np.array([p["theta"] ** (-(2 * i) / D) for i in range(D // 2)])
    if rope["rope_type"] == "linear":
        f = f / rope["factor"]
    elif rope["rope_type"] == "llama3":
        old = rope["original_max_position_embeddings"]
        lo, hi, fac = rope["low_freq_factor"], rope["high_freq_factor"], rope["factor"]
        out = []
        for fi in f:
            wl = 2 * math.pi / fi
            if wl < old / hi:
                out.append(fi)
            elif wl > old / lo:
                out.append(fi / fac)
            else:
                s = (old / wl - lo) / (hi - lo)
                out.append((1 - s) * fi / fac + s * fi)
        f = np.array(out)
    else:
        assert rope["rope_type"] == "default", rope
    return f


def rotate(x, f):
    """x [L, D]: channel pair (i, i + D/2) at position t turned by t f[i]."""
    L, D = x.shape
    y = x.copy()
    for t in range(L):
        for i in range(D // 2):
            c, s = math.cos(t * f[i]), math.sin(t * f[i])
            a, b = x[t, i], x[t, i + D // 2]
            y[t, i], y[t, i + D // 2] = a * c - b * s, b * c + a * s
    return y


def llama_ref(p, w, ids):
    H, Hkv, D = p["H"], p["Hkv"], p["D"]
    f = inv_freq64(p)

    def rms(x, g):
        return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + p["eps"]) * g

    x = w["embed_tokens.weight"][ids]
    L = len(ids)
    atts, hid, projs = [], [], []
    for l in range(p["N"]):
        W = p["windows"][l]
        visible = lambda i, j, W=W: j <= i and (not W or j > i - W)
        g = lambda n: w["layers.%d.%s" % (l, n)]
        lin = lambda t, n: t @ g(n + ".weight").T + (g(n + ".bias") if "layers.%d.%s.bias" % (l, n) in w else 0)
        h = rms(x, g("input_layernorm.weight"))
        q, k, v = (lin(h, "self_attn.%s_proj" % n) for n in "qkv")
        heads, outs, qs, ks, vs = [], [], [], [], []
        for hh in range(H):
            kv = hh // (H // Hkv)
            qh = rotate(q[:, hh * D:(hh + 1) * D], f)
            kh = rotate(k[:, kv * D:(kv + 1) * D], f)
            vh = v[:, kv * D:(kv + 1) * D]
            a, o = attend(qh, kh, vh, D ** -0.5, visible)
            heads.append(a)
            outs.append(o)
            qs.append(qh), ks.append(kh), vs.append(vh)
        projs.append((np.stack(qs), np.stack(ks), np.stack(vs), D ** -0.5, visible_matrix(L, visible)))
        x = x + lin(np.concatenate(outs, 1), "self_attn.o_proj")
        h = rms(x, g("post_attention_layernorm.weight"))
        gate = lin(h, "mlp.gate_proj")
        x = x + lin(gate / (1 + np.exp(-gate)) * lin(h, "mlp.up_proj"), "mlp.down_proj")
        atts.append(np.stack(heads))
        hid.append(x)
    hid[-1] = rms(x, w["norm.weight"])
    return atts, hid, projs


# ---------------------------------------------------------------- checks

def check_case(folder):
    cfg = json.load(open(os.path.join(folder, "config.json")))
    exp = json.load(open(os.path.join(folder, "expected.json")))
    p = parse_config(cfg)
    w = canonical(read_weights(folder), p["family"], cfg["model_type"])
    if cfg["model_type"] == "llama":
        has_bias = any(n.endswith("self_attn.o_proj.bias") for n in w)
        assert has_bias == bool(cfg.get("attention_bias")), "attention_bias vs tensors"
    worst_a = worst_h = worst_p = worst_s = 0.0
    n_proj = 0
    for run in exp["runs"]:
        if "projections" in run:
            assert "scores" in run and len(run["projections"]) == p["N"], "projections: one per layer"
            n_proj += 1
        for b, ids in enumerate(run["ids"]):
            if p["family"] == "gpt2":
                atts, hid, projs = gpt2_ref(p, w, ids)
            elif p["family"] == "bert":
                types = run.get("type_ids", [[0] * len(x) for x in run["ids"]])[b]
                atts, hid, projs = bert_ref(p, w, ids, types)
            else:
                atts, hid, projs = llama_ref(p, w, ids)
            for l in range(p["N"]):
                ea = np.array(run["attentions"][l][b])
                eh = np.array(run["hidden"][l][b])
                assert ea.shape == atts[l].shape and eh.shape == hid[l].shape
                assert np.all(np.abs(ea.sum(-1) - 1) < 1e-5), "rows sum to 1"
                assert np.all((atts[l] == 0) <= (ea == 0)), "zero where masked"
                if "scores" in run:
                    worst_a = max(worst_a, check_scores(np.array(run["scores"][l][b]), ea))
                if "projections" in run:
                    pr = run["projections"][l]
                    assert sorted(pr) == ["k", "q", "v"], "projections: q, k, v"
                    for name, ref in zip("qkv", projs[l][:3]):
                        got = np.array(pr[name][b])
                        assert got.shape == ref.shape, "projections %s [H][n][D]" % name
                        worst_p = max(worst_p, (np.abs(got - ref) / np.maximum(1, np.abs(ref))).max())
                    worst_s = max(worst_s, check_qk(np.array(run["scores"][l][b]), np.array(pr["q"][b]),
                                                    np.array(pr["k"][b]), projs[l][3], projs[l][4]))
                worst_a = max(worst_a, np.abs(ea - atts[l]).max())
                worst_h = max(worst_h, (np.abs(eh - hid[l]) / np.maximum(1, np.abs(hid[l]))).max())
        if "text" in run:
            assert len(run["ids"]) == 1
    ok = worst_a < TOL_ATT and worst_h < TOL_HID and worst_p < TOL_PROJ and worst_s < TOL_QK
    proj = ""
    if n_proj:
        proj = "  q/k/v max rel diff %.2e  scores vs q.k %.2e (%d runs)" % (worst_p, worst_s, n_proj)
    print("%-20s %s  attention max |diff| %.2e  hidden max rel diff %.2e%s" % (
        exp["case"], "ok  " if ok else "FAIL", worst_a, worst_h, proj))
    return ok


def check_qk(es, q, k, scale, visible):
    """A run's scores [H, L, L] against its own q, k [H, L, D]: finfo(float32).min
    exactly where the key is hidden, scale * q_i . k_j (in float64) where it is
    visible. Returns the largest difference relative to max(1, |score|)."""
    assert es.shape == (q.shape[0], q.shape[1], k.shape[1]), "scores vs q, k shapes"
    hidden = es.astype(np.float32) == np.finfo(np.float32).min  # the file's -3.4028235e+38
    assert np.all(hidden == ~visible[None]), "finfo.min exactly where hidden"
    ref = np.einsum("hid,hjd->hij", q, k) * scale
    diff = np.abs(es - ref) / np.maximum(1, np.abs(ref))
    return diff[np.broadcast_to(visible[None], diff.shape)].max()


def check_scores(es, ea):
    """A run's scores [H, L, L] against its weights: finfo(float32).min (or
    less) exactly where the weight is hidden, and their softmax, in float64,
    the weights. Returns the largest difference."""
    hidden = es <= np.finfo(np.float32).min
    assert es.shape == ea.shape and np.all(hidden <= (ea == 0)), "hidden scores weigh 0"
    s = np.where(hidden, -np.inf, es)
    e = np.exp(s - s.max(-1, keepdims=True))
    return np.abs(e / e.sum(-1, keepdims=True) - ea).max()


def check_rerun(folder):
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, os.path.join(HERE, "make_checkpoints.py"), tmp], check=True,
                       stdout=subprocess.DEVNULL)
        same = True
        for case in sorted(os.listdir(tmp)):
            files = sorted(os.listdir(os.path.join(tmp, case)))
            match, mismatch, errors = filecmp.cmpfiles(os.path.join(tmp, case), os.path.join(folder, case),
                                                       files, shallow=False)
            if mismatch or errors:
                print("rerun differs:", case, mismatch, errors)
                same = False
    print("rerun byte-identical:", same)
    return same


def main(argv):
    folder = argv[1] if len(argv) > 1 else "tests/data/checkpoints"
    cases = sorted(d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d)))
    ok = all([check_case(os.path.join(folder, c)) for c in cases])
    ok = check_rerun(folder) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
