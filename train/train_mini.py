"""Trains `mini`, attnd's built-in GPT-2-family model whose heads learned something.

    /usr/bin/python3 train/train_mini.py --out models/mini      (make train-mini)

Deterministic from --seed on one machine and thread count. Writes a Hugging Face
folder the daemon loads like any other (`--model mini=models/mini`):
  config.json          GPT2Config as transformers 4.x writes it
  model.safetensors    F32 weights with GPT-2's names (Conv1D weights [in, out])
  tokenizer.json       the byte-level BPE tokenizer trained first (train/bpe.py)
  training.csv         step, minutes, losses and the two head scores as it went

Corpus: the fortune cookies of Debian's `fortunes` package
(/usr/share/games/fortunes/*.u8, BSD licence; see docs/mini-model.md), one
document per fortune, joined by <|endoftext|>; 1 in 20 fortunes held out.

Rows are 128-token windows. Copying only pays where text repeats, and plain text
repeats rarely within 128 tokens, so repeats are mixed in (see ROW_MIX):
  - 35 rows in 100 copy a stretch of their own text (20-50 tokens) to a later
    place in the row, as the issue's recipe did;
  - 25 in 100 carry a stretch of uniformly random tokens (10-40) that comes back
    later in the row: only an induction head predicts its second copy, and every
    token's embedding, rare bytes included, gets trained;
  - 25 in 100 are a run of 20-64 uniformly random tokens repeated to the end of
    the row (the probe's pattern, periodic): there copying is all there is to
    learn, which is what makes the heads form in minutes;
  - the rest (15 in 100) are plain text.
The model is GPT-2's forward pass of tests/checkpoint/oracle/models.py (the
PyTorch oracle the daemon's checkpoint code is compared with), so what is trained
is exactly what the daemon computes.
"""

import argparse
import csv
import glob
import json
import math
import os
import shutil
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "checkpoint", "oracle"))
import bpe  # noqa: E402
import models  # noqa: E402  (gpt2_forward)
import st_write  # noqa: E402
import heads  # noqa: E402

CORPUS = "/usr/share/games/fortunes/*.u8"
WPE_SCALE = 0.5
ROW_MIX = {"own_repeat": 0.35, "random_repeat": 0.25, "random_rows": 0.25}


def read_fortunes(pattern):
    """Every fortune of every file, in file order; a line '%' ends one."""
    paths = sorted(glob.glob(pattern))
    if not paths:
        sys.exit("no fortunes at %s: install Debian's fortunes package "
                 "(sudo apt-get install fortunes; make train-mini does)" % pattern)
    docs = []
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            docs += [d.strip("\n") for d in f.read().split("\n%\n") if d.strip()]
    return docs


def token_stream(tok, docs):
    ids = []
    for d in docs:
        ids += tok.encode(d)
        ids.append(tok.eot)
    return np.array(ids, dtype=np.int64)


def sinusoidal(positions, E):
    """[positions, E] the sinusoidal encoding of "Attention Is All You Need"
    (the seeds' own): sin at even dims, cos at odd, wavelengths up to 10000."""
    pos = torch.arange(positions, dtype=torch.float32).unsqueeze(1)
    div = torch.exp(torch.arange(0, E, 2, dtype=torch.float32) * (-math.log(10000.0) / E))
    pe = torch.zeros(positions, E)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe


def init_weights(cfg, gen, std=0.02, wpe_scale=WPE_SCALE):
    """GPT-2's initialisation: N(0, 0.02), residual projections scaled by
    1/sqrt(2 n_layer), LayerNorms at (1, 0); except the learned positions,
    which start as a sinusoidal encoding scaled by WPE_SCALE: "attend to the
    position before" is then one rotation away for a head to learn, where
    random positions must first be sorted out. Returns {name: Parameter}."""
    E, F_, N = cfg["E"], cfg["F"], cfg["N"]
    proj_std = std / math.sqrt(2 * N)

    def normal(shape, s):
        return torch.randn(shape, generator=gen) * s

    w = {"wte.weight": normal((cfg["vocab"], E), std),
         "wpe.weight": wpe_scale * sinusoidal(cfg["positions"], E),
         "ln_f.weight": torch.ones(E), "ln_f.bias": torch.zeros(E)}
    for l in range(N):
        p = "h.%d." % l
        w.update({p + "ln_1.weight": torch.ones(E), p + "ln_1.bias": torch.zeros(E),
                  p + "attn.c_attn.weight": normal((E, 3 * E), std),
                  p + "attn.c_attn.bias": torch.zeros(3 * E),
                  p + "attn.c_proj.weight": normal((E, E), proj_std),
                  p + "attn.c_proj.bias": torch.zeros(E),
                  p + "ln_2.weight": torch.ones(E), p + "ln_2.bias": torch.zeros(E),
                  p + "mlp.c_fc.weight": normal((E, F_), std),
                  p + "mlp.c_fc.bias": torch.zeros(F_),
                  p + "mlp.c_proj.weight": normal((F_, E), proj_std),
                  p + "mlp.c_proj.bias": torch.zeros(E)})
    return {k: torch.nn.Parameter(v) for k, v in w.items()}


def make_batch(stream, rows, L, vocab_plain, rng):
    """[rows, L + 1] token ids: windows of the stream with repeats mixed in."""
    starts = rng.integers(0, len(stream) - L - 1, size=rows)
    batch = np.stack([stream[s:s + L + 1] for s in starts])
    for r in range(rows):
        u = rng.random()
        if u < ROW_MIX["own_repeat"]:
            n = int(rng.integers(20, 51))
            src = int(rng.integers(0, L + 1 - 2 * n))
            dst = int(rng.integers(src + n, L + 2 - n))
            batch[r, dst:dst + n] = batch[r, src:src + n].copy()
        elif u < ROW_MIX["own_repeat"] + ROW_MIX["random_repeat"]:
            n = int(rng.integers(10, 41))
            span = rng.integers(0, vocab_plain, size=n)
            a = int(rng.integers(0, L + 1 - 2 * n))
            b = int(rng.integers(a + n, L + 2 - n))
            batch[r, a:a + n] = span
            batch[r, b:b + n] = span
        elif u < ROW_MIX["own_repeat"] + ROW_MIX["random_repeat"] + ROW_MIX["random_rows"]:
            n = int(rng.integers(20, 65))
            batch[r] = np.resize(rng.integers(0, vocab_plain, size=n), L + 1)
    return torch.from_numpy(batch)


def lm_loss(cfg, w, batch):
    """Mean next-token cross-entropy; the head is tied to wte, as GPT-2's."""
    _, hidden, _, _ = models.gpt2_forward(cfg, w, batch[:, :-1])
    logits = hidden[-1] @ w["wte.weight"].t()
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1))


def lr_at(step, steps, peak, warmup):
    if step < warmup:
        return peak * (step + 1) / warmup
    t = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


def write_folder(out, cfg, w, tok):
    os.makedirs(out, exist_ok=True)
    config = {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
        "vocab_size": cfg["vocab"], "n_positions": cfg["positions"], "n_ctx": cfg["positions"],
        "n_embd": cfg["E"], "n_layer": cfg["N"], "n_head": cfg["H"], "n_inner": cfg["F"],
        "activation_function": "gelu_new", "layer_norm_epsilon": cfg["eps"],
        "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0,
        "initializer_range": 0.02, "scale_attn_weights": True,
        "bos_token_id": tok.eot, "eos_token_id": tok.eot,
        "tie_word_embeddings": True, "torch_dtype": "float32",
        "transformers_version": "4.46.0",
    }
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    st_write.write_file(os.path.join(out, "model.safetensors"),
                        [(k, v.detach(), "F32") for k, v in w.items()])
    bpe.write_tokenizer_json(tok, os.path.join(out, "tokenizer.json"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="models/mini")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=8000,
                    help="the learning-rate schedule's length; training stops earlier at --stop-at")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--init-std", type=float, default=0.08)
    ap.add_argument("--wpe-scale", type=float, default=WPE_SCALE)
    ap.add_argument("--stop-at", default="0.85,0.6",
                    help="stop once the best previous-token and induction scores reach these")
    ap.add_argument("--mix", default="",
                    help="own_repeat,random_repeat,random_rows fractions (default ROW_MIX)")
    args = ap.parse_args()

    if args.mix:
        ROW_MIX.update(zip(("own_repeat", "random_repeat", "random_rows"),
                           map(float, args.mix.split(","))))
    stop_prev, stop_ind = map(float, args.stop_at.split(","))
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    t0 = time.monotonic()

    docs = read_fortunes(CORPUS)
    held = docs[::20]
    train_docs = [d for i, d in enumerate(docs) if i % 20]
    tok = bpe.Tokenizer(bpe.train(train_docs, args.vocab))
    train_ids, val_ids = token_stream(tok, train_docs), token_stream(tok, held)
    print("corpus: %d fortunes, %d train / %d held-out tokens, vocab %d (%.1f s)"
          % (len(docs), len(train_ids), len(val_ids), tok.eot + 1, time.monotonic() - t0),
          flush=True)

    cfg = {"family": "gpt2", "vocab": tok.eot + 1, "positions": 128, "E": 128, "H": 4,
           "N": 2, "F": 512, "eps": 1e-5}
    w = init_weights(cfg, gen, args.init_std, args.wpe_scale)
    # no decay on the embeddings: a token rarely seen keeps its random vector,
    # which still tells it apart, instead of shrinking to nothing
    decay = [p for k, p in w.items() if p.dim() == 2 and k != "wte.weight"]
    other = [p for k, p in w.items() if p.dim() != 2 or k == "wte.weight"]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05},
                             {"params": other, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.98))
    val_batch = make_batch(val_ids, 32, 128, tok.eot, np.random.default_rng(args.seed + 1))
    probe = heads.repeated_tokens(tok.eot, 16, 50, np.random.default_rng(args.seed + 2))

    # a run writes beside --out and moves its files in at the end, so one
    # stopped early leaves --out (the committed models/mini, which make
    # embeds in attnd) as it was
    work = args.out.rstrip("/") + ".partial"
    log_path = os.path.join(work, "training.csv")
    shutil.rmtree(work, ignore_errors=True)  # a stopped run's, not this one's
    os.makedirs(work)
    with open(log_path, "w", newline="") as f:
        log = csv.writer(f)
        log.writerow(["step", "minutes", "train_loss", "val_loss", "prev_token", "induction"])
        avg = None
        for step in range(args.steps + 1):
            if step % args.eval_every == 0 or step == args.steps:
                with torch.no_grad():
                    val = lm_loss(cfg, w, val_batch).item()
                    atts, _, _, _ = models.gpt2_forward(cfg, w, probe)
                    prev, ind = heads.best_scores(atts, 50)
                row = [step, round((time.monotonic() - t0) / 60, 2),
                       round(avg, 4) if avg else "", round(val, 4), round(prev, 3), round(ind, 3)]
                log.writerow(row)
                f.flush()
                print("step %5d  %5.1f min  train %s  val %.3f  prev-token %.3f  induction %.3f"
                      % (step, row[1], row[2], val, prev, ind), flush=True)
                write_folder(work, cfg, w, tok)  # the latest weights, always
                if prev >= stop_prev and ind >= stop_ind:
                    break
            if step == args.steps:
                break
            for g in opt.param_groups:
                g["lr"] = lr_at(step, args.steps, args.lr, 100)
            loss = lm_loss(cfg, w, make_batch(train_ids, args.batch, 128, tok.eot, rng))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(list(w.values()), 1.0)
            opt.step()
            avg = loss.item() if avg is None else 0.98 * avg + 0.02 * loss.item()
    os.makedirs(args.out, exist_ok=True)
    for name in sorted(os.listdir(work)):
        os.replace(os.path.join(work, name), os.path.join(args.out, name))
    os.rmdir(work)
    print("wrote %s in %.1f min" % (args.out, (time.monotonic() - t0) / 60))


if __name__ == "__main__":
    main()
