"""Plain-PyTorch forward passes of GPT-2, BERT (and RoBERTa) and the Llama family.

Written anew after the semantics of Hugging Face transformers 4.x modeling code
(modeling_gpt2.py, modeling_bert.py, modeling_roberta.py, modeling_llama.py, modeling_mistral.py,
modeling_qwen2.py, modeling_rope_utils.py; Apache-2.0), eager attention, with
output_attentions=True and output_hidden_states=True:

  attentions[l]    [B, H, L, L] post-softmax weights of layer l
  scores[l]        [B, H, L, L] the softmax's input in layer l, as the modeling
                   code forms it: q k^T / sqrt(D) (Llama: q, k after RoPE),
                   finfo(float32).min where the causal / window mask hides a
                   key (GPT-2's torch.where; Llama's additive mask, whose sum
                   with the score rounds to finfo.min), plus BERT's extended
                   padding mask (1 - mask) * finfo.min
  hidden_states[0] the embeddings, hidden_states[l + 1] the output of layer l;
                   the last one has the final norm applied (GPT-2 ln_f, Llama
                   norm); BERT has no final norm.
  projections[l]   (q, k, v) of layer l, each [B, H, L, D], the tensors the
                   scores are taken from: GPT-2 after split_heads, BERT after
                   the query / key / value linears split into heads, Llama
                   with q and k after RoPE and k, v after repeat_kv (H heads:
                   query head h's kv head h // (H / Hkv), repeated)

Every computation is float32 (weights stored as F16/BF16 are upcast first).
Weights are a dict keyed by the base model's names (no "transformer.",
"bert.", "model." prefix); `cfg` is the dict the case builder made (see
make_checkpoints.py), not a config.json.
"""

import math

import torch
import torch.nn.functional as F


def forward(cfg, w, ids, lengths, type_ids=None):
    """Dispatches on cfg["family"]; returns (attentions, hidden_states, scores,
    projections)."""
    if cfg["family"] == "gpt2":
        return gpt2_forward(cfg, w, ids)
    if cfg["family"] == "bert":
        return bert_forward(cfg, w, ids, lengths, type_ids)
    return llama_forward(cfg, w, ids)


def split_heads(x, n_heads, head_dim):
    """[B, L, n D] -> [B, n, L, D]"""
    B, L, _ = x.shape
    return x.view(B, L, n_heads, head_dim).transpose(1, 2)


def merge_heads(x):
    """[B, n, L, D] -> [B, L, n D]"""
    B, n, L, D = x.shape
    return x.transpose(1, 2).contiguous().view(B, L, n * D)


# ---------------------------------------------------------------- GPT-2

def conv1d(x, weight, bias):
    """transformers' Conv1D: weight stored [in, out]; y = bias + x @ weight."""
    size_out = x.size()[:-1] + (weight.size(-1),)
    y = torch.addmm(bias, x.reshape(-1, x.size(-1)), weight)
    return y.view(size_out)


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def gpt2_forward(cfg, w, ids):
    B, L = ids.shape
    E, H, N, eps = cfg["E"], cfg["H"], cfg["N"], cfg["eps"]
    D = E // H
    position_ids = torch.arange(L).unsqueeze(0)
    x = F.embedding(ids, w["wte.weight"]) + F.embedding(position_ids, w["wpe.weight"])
    causal = torch.tril(torch.ones((L, L), dtype=torch.bool)).view(1, 1, L, L)
    hidden, atts, scores, projs = [x], [], [], []
    for l in range(N):
        p = "h.%d." % l
        residual = x
        h = F.layer_norm(x, (E,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
        q, k, v = conv1d(h, w[p + "attn.c_attn.weight"], w[p + "attn.c_attn.bias"]).split(E, dim=2)
        q, k, v = (split_heads(t, H, D) for t in (q, k, v))
        projs.append((q, k, v))
        a = torch.matmul(q, k.transpose(-1, -2))
        if cfg.get("scale_attn", True):
            a = a / torch.full([], v.size(-1) ** 0.5, dtype=a.dtype)
        mask_value = torch.full([], torch.finfo(a.dtype).min, dtype=a.dtype)
        a = torch.where(causal, a, mask_value)
        scores.append(a)
        a = F.softmax(a, dim=-1)
        atts.append(a)
        o = conv1d(merge_heads(torch.matmul(a, v)), w[p + "attn.c_proj.weight"], w[p + "attn.c_proj.bias"])
        x = o + residual
        residual = x
        h = F.layer_norm(x, (E,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
        h = gelu_new(conv1d(h, w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"]))
        h = conv1d(h, w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"])
        x = residual + h
        hidden.append(x)
    hidden[-1] = F.layer_norm(x, (E,), w["ln_f.weight"], w["ln_f.bias"], eps)
    return atts, hidden, scores, projs


# ---------------------------------------------------------------- BERT

def bert_position_ids(cfg, ids):
    """BERT: 0 .. L - 1. RoBERTa (modeling_roberta's
    create_position_ids_from_input_ids, padding_idx = pad_token_id): the
    running count of non-pad ids, times the non-pad mask, plus padding_idx;
    so a pad id sits at padding_idx and the others count on past it."""
    B, L = ids.shape
    if cfg.get("model_type") != "roberta":
        return torch.arange(L).unsqueeze(0)
    pad = cfg["pad"]
    mask = ids.ne(pad).int()
    return (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + pad


def bert_forward(cfg, w, ids, lengths, type_ids):
    B, L = ids.shape
    E, H, N, eps = cfg["E"], cfg["H"], cfg["N"], cfg["eps"]
    D = E // H
    if type_ids is None:
        type_ids = torch.zeros_like(ids)
    attention_mask = (torch.arange(L)[None, :] < torch.tensor(lengths)[:, None]).to(torch.float32)
    # get_extended_attention_mask: [B, 1, 1, L], 0 where visible, finfo.min where padded
    ext = (1.0 - attention_mask[:, None, None, :]) * torch.finfo(torch.float32).min

    def ln(t, name):
        return F.layer_norm(t, (E,), w[name + ".weight"], w[name + ".bias"], eps)

    def lin(t, name):
        return F.linear(t, w[name + ".weight"], w[name + ".bias"])

    position_ids = bert_position_ids(cfg, ids)
    x = F.embedding(ids, w["embeddings.word_embeddings.weight"])
    x = x + F.embedding(type_ids, w["embeddings.token_type_embeddings.weight"])
    x = x + F.embedding(position_ids, w["embeddings.position_embeddings.weight"])
    x = ln(x, "embeddings.LayerNorm")
    hidden, atts, scores, projs = [x], [], [], []
    for l in range(N):
        p = "encoder.layer.%d." % l
        q = split_heads(lin(x, p + "attention.self.query"), H, D)
        k = split_heads(lin(x, p + "attention.self.key"), H, D)
        v = split_heads(lin(x, p + "attention.self.value"), H, D)
        projs.append((q, k, v))
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D)
        s = s + ext
        scores.append(s)
        a = F.softmax(s, dim=-1)
        atts.append(a)
        ctx = merge_heads(torch.matmul(a, v))
        x = ln(lin(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        inter = F.gelu(lin(x, p + "intermediate.dense"))
        x = ln(lin(inter, p + "output.dense") + x, p + "output.LayerNorm")
        hidden.append(x)
    return atts, hidden, scores, projs


# ---------------------------------------------------------------- Llama, Mistral, Qwen2

def rope_inv_freq(cfg):
    """modeling_rope_utils: (inv_freq [D / 2], attention_factor) for default,
    linear and llama3 rope types, in torch float32 as transformers computes it."""
    dim, base = cfg["D"], cfg["rope_theta"]
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    rope = cfg.get("rope") or {"rope_type": "default"}
    kind = rope["rope_type"]
    if kind == "default":
        return inv_freq, 1.0
    if kind == "linear":
        return inv_freq / rope["factor"], 1.0
    if kind == "llama3":
        factor = rope["factor"]
        low_freq_factor = rope["low_freq_factor"]
        high_freq_factor = rope["high_freq_factor"]
        old_context_len = rope["original_max_position_embeddings"]
        low_freq_wavelen = old_context_len / low_freq_factor
        high_freq_wavelen = old_context_len / high_freq_factor
        wavelen = 2 * math.pi / inv_freq
        inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
        smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
        smoothed = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
        is_medium = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
        return torch.where(is_medium, smoothed, inv_freq_llama), 1.0
    raise ValueError("rope type " + kind)


def rope_cos_sin(cfg, L):
    """LlamaRotaryEmbedding.forward for positions 0 .. L - 1: cos, sin [1, L, D]."""
    inv_freq, attention_scaling = rope_inv_freq(cfg)
    position_ids = torch.arange(L).unsqueeze(0)
    inv_freq_expanded = inv_freq[None, :, None].float()
    position_ids_expanded = position_ids[:, None, :].float()
    freqs = (inv_freq_expanded @ position_ids_expanded).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos() * attention_scaling, emb.sin() * attention_scaling


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(x, n_rep):
    """[B, Hkv, L, D] -> [B, Hkv n_rep, L, D]: query head h reads kv head h // n_rep."""
    B, Hkv, L, D = x.shape
    if n_rep == 1:
        return x
    x = x[:, :, None, :, :].expand(B, Hkv, n_rep, L, D)
    return x.reshape(B, Hkv * n_rep, L, D)


def rms_norm(x, weight, eps):
    x = x.to(torch.float32)
    variance = x.pow(2).mean(-1, keepdim=True)
    x = x * torch.rsqrt(variance + eps)
    return weight * x


def decoder_mask(L, window):
    """[L, L] additive mask: 0 where key j is visible from query i, finfo.min
    elsewhere. Causal; with a sliding window, visible iff i - window < j <= i."""
    i = torch.arange(L)[:, None]
    j = torch.arange(L)[None, :]
    hidden = j > i
    if window:
        hidden = hidden | (j <= i - window)
    mask = torch.zeros((L, L), dtype=torch.float32)
    return mask.masked_fill(hidden, torch.finfo(torch.float32).min)


def layer_windows(cfg):
    """Each layer's sliding window, 0 for full attention. Mistral: "window" on
    every layer. Qwen2 (Qwen2Config, modeling_qwen2): the window only when
    use_sliding_window, on the layers layer_types names "sliding_attention",
    which without layer_types are those from max_window_layers on."""
    N = cfg["N"]
    if cfg.get("model_type") != "qwen2":
        return [cfg.get("window", 0)] * N
    window = cfg["window"] if cfg.get("use_sliding_window") else 0
    types = cfg.get("layer_types") or [
        "sliding_attention" if window and l >= cfg["max_window_layers"] else "full_attention"
        for l in range(N)]
    return [window if t == "sliding_attention" else 0 for t in types]


def llama_forward(cfg, w, ids):
    B, L = ids.shape
    H, Hkv, D, N, eps = cfg["H"], cfg["Hkv"], cfg["D"], cfg["N"], cfg["eps"]
    scaling = D ** -0.5
    cos, sin = rope_cos_sin(cfg, L)
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    masks = [decoder_mask(L, W)[None, None] for W in layer_windows(cfg)]

    def lin(t, name):
        return F.linear(t, w[name + ".weight"], w.get(name + ".bias"))

    x = F.embedding(ids, w["embed_tokens.weight"])
    hidden, atts, scores, projs = [x], [], [], []
    for l in range(N):
        p = "layers.%d." % l
        residual = x
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = split_heads(lin(h, p + "self_attn.q_proj"), H, D)
        k = split_heads(lin(h, p + "self_attn.k_proj"), Hkv, D)
        v = split_heads(lin(h, p + "self_attn.v_proj"), Hkv, D)
        q = (q * cos) + (rotate_half(q) * sin)
        k = (k * cos) + (rotate_half(k) * sin)
        k = repeat_kv(k, H // Hkv)
        v = repeat_kv(v, H // Hkv)
        projs.append((q, k, v))
        s = torch.matmul(q, k.transpose(2, 3)) * scaling
        s = s + masks[l]
        scores.append(s)
        a = F.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype)
        atts.append(a)
        o = lin(merge_heads(torch.matmul(a, v)), p + "self_attn.o_proj")
        x = residual + o
        residual = x
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        m = lin(F.silu(lin(h, p + "mlp.gate_proj")) * lin(h, p + "mlp.up_proj"), p + "mlp.down_proj")
        x = residual + m
        hidden.append(x)
    hidden[-1] = rms_norm(x, w["norm.weight"], eps)
    return atts, hidden, scores, projs
