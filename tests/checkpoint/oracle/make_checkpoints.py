#!/usr/bin/python3
"""Writes tests/data/checkpoints/<case>/: small random Hugging Face style
checkpoints (config.json, safetensors, sometimes tokenizer.json) and
expected.json, the attentions and hidden states models.py computes for them
(and, for the cases with "scores": True, each layer's pre-softmax scores and
the q, k, v projections they are taken from).

Usage: make_checkpoints.py OUT_DIR   (make checkpoint-fixtures)

Deterministic: every case draws from its own seeded torch.Generator, and the
files are written in a fixed order, so a rerun gives identical bytes.
"""

import json
import os
import sys

import numpy as np
import torch

import models
import st_write
import tiny_tokenizers

SOURCE = "tests/checkpoint/oracle/make_checkpoints.py"
TORCH_DTYPE = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
DTYPE_NAME = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}


# ---------------------------------------------------------------- random weights

class Draw:
    """Seeded normal draws; names in the order drawn decide the bytes."""

    def __init__(self, seed):
        self.g = torch.Generator().manual_seed(seed)

    def normal(self, shape, std, mean=0.0):
        return torch.randn(shape, generator=self.g) * std + mean

    def norm_weight(self, n):
        return self.normal((n,), 0.1, 1.0)

    def bias(self, n, std=0.05):
        return self.normal((n,), std)


def gpt2_weights(c, r):
    E, F, V, P = c["E"], c["F"], c["V"], c["P"]
    w = {"wte.weight": r.normal((V, E), 0.5), "wpe.weight": r.normal((P, E), 0.3)}
    for l in range(c["N"]):
        p = "h.%d." % l
        w[p + "ln_1.weight"], w[p + "ln_1.bias"] = r.norm_weight(E), r.bias(E)
        # Conv1D [in, out]: the columns are q | k | v
        w[p + "attn.c_attn.weight"] = torch.cat([r.normal((E, E), 0.3), r.normal((E, E), 0.3),
                                                 r.normal((E, E), 0.2)], dim=1)
        w[p + "attn.c_attn.bias"] = r.bias(3 * E)
        w[p + "attn.c_proj.weight"], w[p + "attn.c_proj.bias"] = r.normal((E, E), 0.15), r.bias(E)
        w[p + "ln_2.weight"], w[p + "ln_2.bias"] = r.norm_weight(E), r.bias(E)
        w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"] = r.normal((E, F), 0.2), r.bias(F)
        w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"] = r.normal((F, E), 0.1), r.bias(E)
    w["ln_f.weight"], w["ln_f.bias"] = r.norm_weight(E), r.bias(E)
    return w


def bert_weights(c, r):
    E, F, V, P = c["E"], c["F"], c["V"], c["P"]
    e = "embeddings."
    w = {e + "word_embeddings.weight": r.normal((V, E), 0.5),
         e + "position_embeddings.weight": r.normal((P, E), 0.3),
         e + "token_type_embeddings.weight": r.normal((c["T"], E), 0.3),
         e + "LayerNorm.weight": r.norm_weight(E), e + "LayerNorm.bias": r.bias(E)}
    for l in range(c["N"]):
        p = "encoder.layer.%d." % l
        for name, std in (("query", 0.3), ("key", 0.3), ("value", 0.2)):
            w[p + "attention.self." + name + ".weight"] = r.normal((E, E), std)
            w[p + "attention.self." + name + ".bias"] = r.bias(E)
        w[p + "attention.output.dense.weight"] = r.normal((E, E), 0.15)
        w[p + "attention.output.dense.bias"] = r.bias(E)
        w[p + "attention.output.LayerNorm.weight"] = r.norm_weight(E)
        w[p + "attention.output.LayerNorm.bias"] = r.bias(E)
        w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"] = r.normal((F, E), 0.2), r.bias(F)
        w[p + "output.dense.weight"], w[p + "output.dense.bias"] = r.normal((E, F), 0.1), r.bias(E)
        w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"] = r.norm_weight(E), r.bias(E)
    return w


def llama_weights(c, r):
    E, F, V, H, Hkv, D = c["E"], c["F"], c["V"], c["H"], c["Hkv"], c["D"]
    w = {"embed_tokens.weight": r.normal((V, E), 1.0)}
    for l in range(c["N"]):
        p = "layers.%d." % l
        w[p + "input_layernorm.weight"] = r.norm_weight(E)
        for name, out, std in (("q", H * D, 0.3), ("k", Hkv * D, 0.3), ("v", Hkv * D, 0.2)):
            w[p + "self_attn.%s_proj.weight" % name] = r.normal((out, E), std)
            if c.get("attention_bias") or c.get("qkv_bias"):
                w[p + "self_attn.%s_proj.bias" % name] = r.bias(out, 0.2)
        w[p + "self_attn.o_proj.weight"] = r.normal((E, H * D), 0.15)
        if c.get("attention_bias"):
            w[p + "self_attn.o_proj.bias"] = r.bias(E)
        w[p + "post_attention_layernorm.weight"] = r.norm_weight(E)
        for name, shape, std in (("gate", (F, E), 0.2), ("up", (F, E), 0.2), ("down", (E, F), 0.1)):
            w[p + "mlp.%s_proj.weight" % name] = r.normal(shape, std)
            if c.get("mlp_bias"):
                w[p + "mlp.%s_proj.bias" % name] = r.bias(shape[0])
    w["norm.weight"] = r.norm_weight(E)
    return w


WEIGHTS = {"gpt2": gpt2_weights, "bert": bert_weights, "llama": llama_weights}


# ---------------------------------------------------------------- tensors HF checkpoints carry besides

def extra_tensors(c, r):
    """(name without prefix, tensor, dtype or None for the case's dtype) the
    loader must ignore. Names starting with "/" are written without the prefix."""
    out = []
    E, V = c["E"], c["V"]
    for kind in c.get("extras", ()):
        if kind in ("attn_bias_f32", "attn_bias_bool"):
            P = c["P"]
            tril = torch.tril(torch.ones((P, P))).view(1, 1, P, P)
            dt = "F32" if kind == "attn_bias_f32" else "BOOL"
            for l in range(c["N"]):
                out.append(("h.%d.attn.bias" % l, tril, dt))
        elif kind == "masked_bias":
            for l in range(c["N"]):
                out.append(("h.%d.attn.masked_bias" % l, torch.tensor(-1e4), "F32"))
        elif kind == "pooler":
            out += [("pooler.dense.weight", r.normal((E, E), 0.1), None), ("pooler.dense.bias", r.bias(E), None)]
        elif kind == "cls":
            t = "/cls.predictions.transform."
            out += [("/cls.predictions.bias", r.bias(V), None),
                    (t + "dense.weight", r.normal((E, E), 0.1), None), (t + "dense.bias", r.bias(E), None),
                    (t + "LayerNorm.weight", r.norm_weight(E), None), (t + "LayerNorm.bias", r.bias(E), None),
                    ("/cls.seq_relationship.weight", r.normal((2, E), 0.1), None),
                    ("/cls.seq_relationship.bias", r.bias(2), None)]
        elif kind == "roberta_lm_head":  # RobertaForMaskedLM's head, beside "roberta."
            t = "/lm_head."
            out += [(t + "dense.weight", r.normal((E, E), 0.1), None), (t + "dense.bias", r.bias(E), None),
                    (t + "layer_norm.weight", r.norm_weight(E), None), (t + "layer_norm.bias", r.bias(E), None),
                    (t + "bias", r.bias(V), None)]
        elif kind == "lm_head":
            out.append(("/lm_head.weight", r.normal((V, E), 0.1), None))
        elif kind == "rotary_inv_freq":
            inv_freq, _ = models.rope_inv_freq(c)
            for l in range(c["N"]):
                out.append(("layers.%d.self_attn.rotary_emb.inv_freq" % l, inv_freq, "F32"))
        else:
            raise ValueError(kind)
    return out


# ---------------------------------------------------------------- config.json

def gpt2_config(c):
    return {
        "activation_function": "gelu_new", "architectures": [c["arch"]], "attn_pdrop": 0.1,
        "bos_token_id": c["V"] - 1, "embd_pdrop": 0.1, "eos_token_id": c["V"] - 1,
        "initializer_range": 0.02, "layer_norm_epsilon": c["eps"], "model_type": "gpt2",
        "n_ctx": c["P"], "n_embd": c["E"], "n_head": c["H"], "n_inner": c.get("n_inner"),
        "n_layer": c["N"], "n_positions": c["P"], "reorder_and_upcast_attn": False,
        "resid_pdrop": 0.1, "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True,
        "summary_activation": None, "summary_first_dropout": 0.1, "summary_proj_to_labels": True,
        "summary_type": "cls_index", "summary_use_proj": True, "torch_dtype": DTYPE_NAME[c["dtype"]],
        "transformers_version": "4.44.2", "use_cache": True, "vocab_size": c["V"],
    }


def bert_config(c):
    if c.get("model_type") == "roberta":
        return roberta_config(c)
    return {
        "architectures": [c["arch"]], "attention_probs_dropout_prob": 0.1, "classifier_dropout": None,
        "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": c["E"],
        "initializer_range": 0.02, "intermediate_size": c["F"], "layer_norm_eps": c["eps"],
        "max_position_embeddings": c["P"], "model_type": "bert", "num_attention_heads": c["H"],
        "num_hidden_layers": c["N"], "pad_token_id": 0, "position_embedding_type": "absolute",
        "torch_dtype": DTYPE_NAME[c["dtype"]], "transformers_version": "4.44.2",
        "type_vocab_size": c["T"], "use_cache": True, "vocab_size": c["V"],
    }


def roberta_config(c):
    """distilroberta-base's keys, sized down."""
    return {
        "architectures": [c["arch"]], "attention_probs_dropout_prob": 0.1, "bos_token_id": 0,
        "classifier_dropout": None, "eos_token_id": 2, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
        "hidden_size": c["E"], "initializer_range": 0.02, "intermediate_size": c["F"],
        "layer_norm_eps": c["eps"], "max_position_embeddings": c["P"], "model_type": "roberta",
        "num_attention_heads": c["H"], "num_hidden_layers": c["N"], "pad_token_id": c["pad"],
        "position_embedding_type": "absolute", "torch_dtype": DTYPE_NAME[c["dtype"]],
        "transformers_version": "4.44.2", "type_vocab_size": c["T"], "use_cache": True,
        "vocab_size": c["V"],
    }


def llama_config(c):
    cfg = {
        "architectures": [c["arch"]], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
        "hidden_act": "silu", "hidden_size": c["E"], "initializer_range": 0.02,
        "intermediate_size": c["F"], "max_position_embeddings": c["P"], "model_type": c["model_type"],
        "num_attention_heads": c["H"], "num_hidden_layers": c["N"], "num_key_value_heads": c["Hkv"],
        "rms_norm_eps": c["eps"], "tie_word_embeddings": c["tied"], "use_cache": True,
        "vocab_size": c["V"],
    }
    if c["model_type"] == "llama":
        cfg.update({"attention_bias": bool(c.get("attention_bias")), "mlp_bias": bool(c.get("mlp_bias")),
                    "pretraining_tp": 1})
    if c["model_type"] == "mistral":
        cfg["sliding_window"] = c["window"]
    if c["model_type"] == "qwen2" and c.get("use_sliding_window"):
        cfg.update({"max_window_layers": c["max_window_layers"], "sliding_window": c["window"],
                    "use_sliding_window": True})
    elif c["model_type"] == "qwen2":
        cfg.update({"max_window_layers": c["N"], "sliding_window": c["ignored_window"],
                    "use_sliding_window": False})
    if c.get("head_dim_key"):
        cfg["head_dim"] = c["D"]
    rope = c.get("rope")
    if c.get("v5"):
        params = {"rope_theta": c["rope_theta"], "rope_type": "default"}
        params.update(rope or {})
        cfg.update({"dtype": DTYPE_NAME[c["dtype"]], "rope_parameters": params, "transformers_version": "5.0.0"})
    else:
        scaling = None
        if rope:
            scaling = dict(rope)
            if c.get("rope_type_key") == "type":  # older checkpoints: {"type": "linear", "factor": ...}
                scaling["type"] = scaling.pop("rope_type")
        cfg.update({"rope_scaling": scaling, "rope_theta": c["rope_theta"],
                    "torch_dtype": DTYPE_NAME[c["dtype"]], "transformers_version": "4.46.0"})
    return cfg


CONFIG = {"gpt2": gpt2_config, "bert": bert_config, "llama": llama_config}


# ---------------------------------------------------------------- the cases

GPT2_BASE = {"family": "gpt2", "eps": 1e-5, "P": 16}
BERT_BASE = {"family": "bert", "eps": 1e-12, "P": 16, "T": 2}
LLAMA_BASE = {"family": "llama", "model_type": "llama", "eps": 1e-6, "P": 128, "rope_theta": 10000.0}

CASES = [
    dict(GPT2_BASE, name="gpt2_f32", scores=True, seed=11, dtype="F32", arch="GPT2LMHeadModel", prefix="transformer.",
         E=32, H=4, N=3, V=265, extras=("attn_bias_f32", "masked_bias"), tokenizer="bpe",
         lengths=([9], [4, 9, 1])),
    dict(GPT2_BASE, name="gpt2_f16_noprefix", seed=12, dtype="F16", arch="GPT2Model", prefix="",
         E=48, H=4, N=2, V=100, n_inner=80, extras=("attn_bias_bool",), lengths=([8], [6, 3, 8])),
    dict(BERT_BASE, name="bert_f32", scores=True, seed=21, dtype="F32", arch="BertForPreTraining", prefix="bert.",
         E=32, H=4, N=2, F=64, V=64, extras=("pooler", "cls"), tokenizer="wordpiece", type_ids=True,
         lengths=([9], [5, 9, 2])),
    dict(BERT_BASE, name="roberta_f32", scores=True, seed=23, dtype="F32", arch="RobertaForMaskedLM",
         model_type="roberta", prefix="roberta.", eps=1e-5, P=18, T=1, pad=1, E=32, H=4, N=2, F=64, V=270,
         tokenizer="roberta",
         extras=("roberta_lm_head",), lengths=([9], [5, 9, 2], [16]), pad_inside=True),
    dict(BERT_BASE, name="bert_bf16_gamma", seed=22, dtype="BF16", arch="BertModel", prefix="", eps=1e-5,
         E=48, H=6, N=3, F=96, V=80, gamma_beta=True, lengths=([7], [7, 4, 1])),
    dict(LLAMA_BASE, name="llama_f32", scores=True, seed=31, dtype="F32", arch="LlamaForCausalLM", prefix="model.",
         E=32, H=4, Hkv=2, N=2, F=64, V=96, tied=True, extras=("rotary_inv_freq",),
         lengths=([9], [9, 5, 2])),
    dict(LLAMA_BASE, name="llama_bf16_sharded", seed=32, dtype="BF16", arch="LlamaForCausalLM",
         prefix="model.", E=32, H=4, Hkv=4, N=3, F=64, V=96, tied=False, extras=("lm_head",), shards=2,
         v5=True, head_dim_key=True, rope_theta=100.0, P=256,
         rope={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 64},
         lengths=([9], [3, 9])),
    dict(LLAMA_BASE, name="llama_headdim", seed=33, dtype="F16", arch="LlamaModel", prefix="",
         E=32, H=4, Hkv=2, D=16, N=2, F=48, V=64, tied=False, head_dim_key=True, attention_bias=True,
         mlp_bias=True, rope_theta=1000.0, rope={"rope_type": "linear", "factor": 2.0}, rope_type_key="type",
         lengths=([8], [8, 6, 3])),
    dict(LLAMA_BASE, name="mistral_window", scores=True, seed=41, dtype="F32", arch="MistralForCausalLM",
         model_type="mistral", prefix="model.", eps=1e-5, E=32, H=4, Hkv=1, N=2, F=64, V=64, tied=False,
         extras=("lm_head",), window=3, lengths=([9], [9, 4, 7])),
    dict(LLAMA_BASE, name="qwen2_bias", seed=51, dtype="BF16", arch="Qwen2ForCausalLM", model_type="qwen2",
         prefix="model.", E=48, H=6, Hkv=2, N=2, F=96, V=100, tied=True, qkv_bias=True,
         rope_theta=1000000.0, ignored_window=4, lengths=([9], [2, 9, 6])),
    dict(LLAMA_BASE, name="qwen2_window_layers", scores=True, seed=52, dtype="F32", arch="Qwen2ForCausalLM",
         model_type="qwen2", prefix="model.", E=32, H=4, Hkv=2, N=3, F=64, V=80, tied=True, qkv_bias=True,
         rope_theta=10000.0, use_sliding_window=True, window=3, max_window_layers=1,
         lengths=([10], [10, 4, 7])),
]

TEXTS = {"bpe": "hello there \u00e9!", "wordpiece": "The cats played xyz!"}


def complete(c):
    """Derived sizes: D, F for gpt2, Hkv for bert and gpt2."""
    c = dict(c)
    c.setdefault("Hkv", c["H"])
    c.setdefault("D", c["E"] // c["H"])
    if c["family"] == "gpt2":
        c["F"] = c.get("n_inner") or 4 * c["E"]
    return c


# ---------------------------------------------------------------- writing

def stored_name(c, name):
    """The name in the file: the case's prefix, gamma/beta for old BERT."""
    if name.startswith("/"):
        return name[1:]
    if c.get("gamma_beta") and "LayerNorm." in name:
        name = name.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
    return c["prefix"] + name


def write_checkpoint(c, folder, w, extras):
    tensors = [(stored_name(c, n), t, c["dtype"]) for n, t in w.items()]
    tensors += [(stored_name(c, n), t, dt or c["dtype"]) for n, t, dt in extras]
    if c.get("shards", 1) == 1:
        st_write.write_file(folder + "/model.safetensors", tensors)
        return
    # shard 1: the embeddings and the first half of the layers; shard 2 the
    # rest, the final norm and lm_head
    half = c["N"] // 2 + c["N"] % 2

    def shard_of(name):
        base = name[len(c["prefix"]):] if name.startswith(c["prefix"]) else name
        if base.startswith("layers."):
            return int(int(base.split(".")[1]) >= half)
        return int(base.startswith("norm.") or base.startswith("lm_head."))
    groups = [[], []]
    for t in tensors:
        groups[shard_of(t[0])].append(t)
    st_write.write_sharded(folder, groups)


def fmt(x):
    """Shortest text that reads back as the same float32."""
    return str(np.float32(x))


def dump(v, indent=0):
    """JSON with each innermost list of numbers on one line."""
    pad = "  " * indent
    if isinstance(v, dict):
        items = ['%s  "%s": %s' % (pad, k, dump(x, indent + 1)) for k, x in v.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(v, list) and v and isinstance(v[0], (list, dict)):
        return "[\n" + ",\n".join(pad + "  " + dump(x, indent + 1) for x in v) + "\n" + pad + "]"
    if isinstance(v, list):
        return "[" + ", ".join(fmt(x) if isinstance(x, float) else json.dumps(x) for x in v) + "]"
    return json.dumps(v, ensure_ascii=False)


def run_case(c, w32, items, type_items, text=None):
    """Pads right with the pad id (0; RoBERTa's pad_token_id), runs the batch,
    trims each item to its length."""
    lengths = [len(x) for x in items]
    L = max(lengths)
    pad = c.get("pad", 0)
    ids = torch.tensor([x + [pad] * (L - len(x)) for x in items], dtype=torch.int64)
    tids = None
    if type_items is not None:
        tids = torch.tensor([x + [0] * (L - len(x)) for x in type_items], dtype=torch.int64)
    with torch.no_grad():
        atts, hidden, scores, projs = models.forward(c, w32, ids, lengths, tids)
    run = {}
    if text is not None:
        run["text"] = text
    run["ids"] = items
    if type_items is not None:
        run["type_ids"] = type_items
    run["attentions"] = [[a[b, :, :n, :n].tolist() for b, n in enumerate(lengths)] for a in atts]
    if c.get("scores"):  # finfo(float32).min where a key is hidden, as torch has it
        run["scores"] = [[s[b, :, :n, :n].tolist() for b, n in enumerate(lengths)] for s in scores]
        # what the scores are taken from: [layer]{q, k, v}[item][head][i][d]
        run["projections"] = [{name: [t[b, :, :n, :].tolist() for b, n in enumerate(lengths)]
                               for name, t in zip("qkv", qkv)} for qkv in projs]
    run["hidden"] = [[h[b, :n].tolist() for b, n in enumerate(lengths)] for h in hidden[1:]]
    return run


def make_runs(c, r, w32):
    runs = []
    for lengths in c["lengths"]:
        items = [torch.randint(0, c["V"], (n,), generator=r.g).tolist() for n in lengths]
        if c.get("pad_inside"):  # a pad id inside the first item: its position stays pad
            items[0][len(items[0]) // 2] = c["pad"]
        types = None
        if c.get("type_ids"):
            types = [[0] * (n - n // 2) + [1] * (n // 2) for n in lengths]
        runs.append(run_case(c, w32, items, types))
    if c.get("tokenizer") == "bpe":
        text = TEXTS["bpe"]
        runs.append(run_case(c, w32, [tiny_tokenizers.bpe_encode(text)], None, text))
    elif c.get("tokenizer") == "roberta":
        text = TEXTS["bpe"]
        runs.append(run_case(c, w32, [tiny_tokenizers.roberta_encode(text)], None, text))
    elif c.get("tokenizer") == "wordpiece":
        text = TEXTS["wordpiece"]
        ids = tiny_tokenizers.wordpiece_encode(text)
        runs.append(run_case(c, w32, [ids], [[0] * len(ids)] if c.get("type_ids") else None, text))
    return runs


def check_windows_matter(c, w32):
    """A case with windows on some layers only: against the same weights with
    full attention everywhere, the full layers before the first sliding one
    agree and every sliding layer differs (the fixture tests what it claims)."""
    windows = models.layer_windows(c)
    if not any(windows) or all(windows):
        return
    L = max(max(x) for x in c["lengths"])
    assert L > max(windows), "a sequence longer than the window"
    ids = torch.randint(0, c["V"], (1, L), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        got, _, _, _ = models.forward(c, w32, ids, [L])
        full, _, _, _ = models.forward(dict(c, use_sliding_window=False), w32, ids, [L])
    first = windows.index(next(x for x in windows if x))
    for l, W in enumerate(windows):
        if W:
            assert not torch.equal(got[l], full[l]), "sliding layer %d equals full attention" % l
        elif l < first:
            assert torch.equal(got[l], full[l]), "full layer %d differs" % l


def make_case(spec, out_dir):
    c = complete(spec)
    folder = os.path.join(out_dir, c["name"])
    os.makedirs(folder, exist_ok=True)
    r = Draw(c["seed"])
    w = WEIGHTS[c["family"]](c, r)
    # the checkpoint holds the weights rounded to its dtype; the oracle runs on exactly those
    w = {n: t.to(TORCH_DTYPE[c["dtype"]]).to(torch.float32) for n, t in w.items()}
    check_windows_matter(c, w)
    extras = extra_tensors(c, r)
    write_checkpoint(c, folder, w, extras)
    with open(folder + "/config.json", "w") as f:
        f.write(json.dumps(CONFIG[c["family"]](c), indent=2, sort_keys=True) + "\n")
    if c.get("tokenizer"):
        tok = {"bpe": tiny_tokenizers.bpe_tokenizer_json, "roberta": tiny_tokenizers.roberta_tokenizer_json,
               "wordpiece": tiny_tokenizers.wordpiece_tokenizer_json}[c["tokenizer"]]()
        with open(folder + "/tokenizer.json", "w") as f:
            f.write(json.dumps(tok, indent=2, ensure_ascii=False) + "\n")
    expected = {"case": c["name"], "family": c["family"], "model_type": c.get("model_type", c["family"]),
                "dtype": c["dtype"], "source": SOURCE, "runs": make_runs(c, r, w)}
    with open(folder + "/expected.json", "w") as f:
        f.write(dump(expected) + "\n")
    return c, w


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: make_checkpoints.py OUT_DIR\n")
        return 2
    torch.set_num_threads(1)  # one summation order, run to run
    for spec in CASES:
        make_case(spec, argv[1])
        print("wrote", os.path.join(argv[1], spec["name"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
