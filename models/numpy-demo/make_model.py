#!/usr/bin/python3
"""Writes the built-in model numpy-demo: the weights of the numpy demo of
multi-head attention that attnd grew from (a Korean tutorial; README.md here).

The demo's code runs as it is written (numpy's legacy generator, seed 42, the
draws in its order: X, the W_Qs, W_Ks and W_Vs lists, then W_O after the heads'
loop) and its matrices are stored in attnd's one-layer layout, as PyTorch's
MultiheadAttention names them:

  in_proj_weight       [24, 8]  [concat(W_Qs, 1)^T; concat(W_Ks, 1)^T; concat(W_Vs, 1)^T]
  out_proj.weight      [8, 8]   W_O^T            (the demo computes X @ W, PyTorch W x)
  embed_tokens.weight  [4, 8]   X: the embedding of word i is row i

and vocab.txt gives the words their ids in the demo's order, so the text
"나는 맛있는 사과를 먹었다" is the demo's X. Float64 values are stored as
float32 (the nearest), the only change.

usage: make_model.py [DIR]   (DIR defaults to this script's folder)
Needs numpy (Debian's python3-numpy); the output is the same on every run.
"""
import json
import os
import struct
import sys

import numpy as np


def demo_weights():
    """The demo's own draws (shared/seeds/000, "실행해보기"), in its order."""
    np.random.seed(42)
    seq_len, d_model, num_heads = 4, 8, 2
    d_k = d_model // num_heads
    X = np.random.randn(seq_len, d_model)
    W_Qs = [np.random.randn(d_model, d_k) * 0.5 for _ in range(num_heads)]
    W_Ks = [np.random.randn(d_model, d_k) * 0.5 for _ in range(num_heads)]
    W_Vs = [np.random.randn(d_model, d_k) * 0.5 for _ in range(num_heads)]
    W_O = np.random.randn(d_model, d_model) * 0.5  # drawn after the heads' loop
    in_proj = np.concatenate([np.concatenate(W, axis=1).T for W in (W_Qs, W_Ks, W_Vs)])
    return {"embed_tokens.weight": X, "in_proj_weight": in_proj, "out_proj.weight": W_O.T}


def safetensors_bytes(tensors):
    """F32 little-endian, in name order, header padded to 8 bytes."""
    header, data = {}, b""
    for name in sorted(tensors):
        raw = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode("ascii")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(safetensors_bytes(demo_weights()))
    with open(os.path.join(out, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("나는\n맛있는\n사과를\n먹었다\n")


if __name__ == "__main__":
    main()
