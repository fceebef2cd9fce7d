"""A safetensors writer by hand (no safetensors package), single file or shards.

Format: 8-byte little-endian header length n, n bytes of JSON
{"__metadata__": {"format": "pt"}, name: {"dtype", "shape", "data_offsets": [begin, end]}}
padded with spaces to a multiple of 8, then the data, offsets relative to it.
Tensors are written in name order, contiguously.
"""

import json
import struct

import numpy as np
import torch


def tensor_bytes(t, dtype):
    """Row-major little-endian bytes of t stored as dtype (F32, F16, BF16, BOOL)."""
    t = t.contiguous()
    if dtype == "F32":
        return t.to(torch.float32).numpy().astype("<f4").tobytes()
    if dtype == "F16":
        return t.to(torch.float16).numpy().astype("<f2").tobytes()
    if dtype == "BF16":
        return t.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes()
    if dtype == "BOOL":
        return t.to(torch.bool).numpy().astype(np.uint8).tobytes()
    raise ValueError("dtype " + dtype)


def write_file(path, tensors):
    """tensors: list of (name, tensor, dtype). Returns the bytes of data written."""
    header = {"__metadata__": {"format": "pt"}}
    chunks, offset = [], 0
    for name, t, dtype in sorted(tensors, key=lambda e: e[0]):
        data = tensor_bytes(t, dtype)
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for c in chunks:
            f.write(c)
    return offset


def write_sharded(folder, shards):
    """shards: list of tensor lists, one per file. Writes
    model-0000i-of-0000n.safetensors and model.safetensors.index.json."""
    n = len(shards)
    weight_map, total = {}, 0
    for i, tensors in enumerate(shards):
        fname = "model-%05d-of-%05d.safetensors" % (i + 1, n)
        total += write_file(folder + "/" + fname, tensors)
        for name, _, _ in tensors:
            weight_map[name] = fname
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    with open(folder + "/model.safetensors.index.json", "w") as f:
        f.write(json.dumps(index, indent=2) + "\n")
