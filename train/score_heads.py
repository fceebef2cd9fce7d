"""Scores every head of a trained folder (models/mini) as train/heads.py defines
the scores, on two probes, and prints the table docs/mini-model.md shows:

  random    16 rows of 50 uniformly random token ids, each repeated once (the
            probe of the training log; tests/daemon/check_mini_heads.c draws 8
            other rows with its own generator and seed);
  fortunes  16 stretches of 50 tokens of the held-out fortunes (1 in 20, never
            trained on), each repeated once: copying real text it has not seen.

    /usr/bin/python3 train/score_heads.py models/mini
"""
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "checkpoint", "oracle"))
import bpe  # noqa: E402
import heads  # noqa: E402
import models  # noqa: E402
import train_mini  # noqa: E402


def load_folder(folder):
    """(cfg for models.gpt2_forward, weights) from config.json and model.safetensors."""
    with open(os.path.join(folder, "config.json")) as f:
        c = json.load(f)
    with open(os.path.join(folder, "model.safetensors"), "rb") as f:
        raw = f.read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    w = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        a, b = meta["data_offsets"]
        w[name] = torch.from_numpy(np.frombuffer(raw[8 + n + a:8 + n + b], dtype="<f4")
                                   .copy().reshape(meta["shape"]))
    cfg = {"family": "gpt2", "E": c["n_embd"], "H": c["n_head"], "N": c["n_layer"],
           "eps": c["layer_norm_epsilon"]}
    return cfg, w, c["vocab_size"]


def fortune_probe(tok, rows, n, rng):
    held = train_mini.read_fortunes(train_mini.CORPUS)[::20]
    stream = train_mini.token_stream(tok, held)
    starts = rng.integers(0, len(stream) - n, size=rows)
    first = np.stack([stream[s:s + n] for s in starts])
    return torch.from_numpy(np.concatenate([first, first], axis=1))


def main():
    folder = sys.argv[1]
    cfg, w, vocab = load_folder(folder)
    with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
        merges = [tuple(m.split(" ")) for m in json.load(f)["model"]["merges"]]
    tok = bpe.Tokenizer(merges)
    probes = {"random": heads.repeated_tokens(vocab - 1, 16, 50, np.random.default_rng(3)),
              "fortunes": fortune_probe(tok, 16, 50, np.random.default_rng(4))}
    table = {}
    with torch.no_grad():
        for name, ids in probes.items():
            atts, _, _, _ = models.gpt2_forward(cfg, w, ids)
            table[name] = [heads.scores(a, 50) for a in atts]
    print("| layer | head | previous-token (random) | induction (random) | sink (random) "
          "| previous-token (fortunes) | induction (fortunes) |")
    print("|---|---|---|---|---|---|---|")
    for l in range(cfg["N"]):
        for h in range(cfg["H"]):
            r, t = table["random"][l], table["fortunes"][l]
            print("| %d | %d | %.3f | %.3f | %.3f | %.3f | %.3f |" % (
                l, h, r[0][h], r[1][h], r[2][h], t[0][h], t[1][h]))


if __name__ == "__main__":
    main()
