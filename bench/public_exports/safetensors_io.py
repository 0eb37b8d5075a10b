"""Minimal safetensors reading and writing for the public-export oracles (stdlib + torch).

The format: an 8-byte little-endian header length N, N bytes of JSON naming each tensor's
dtype, shape and [begin, end) byte offsets into the data section that follows.
"""
import json
import struct

import torch

_DTYPES = {torch.float32: "F32", torch.int32: "I32", torch.int64: "I64", torch.bool: "BOOL"}
_TORCH = {v: k for k, v in _DTYPES.items()}


def write(path, named):
    """named: list of (name, tensor) in file order."""
    header, blobs, offset = {}, [], 0
    for name, t in named:
        raw = t.contiguous().numpy().tobytes()
        header[name] = {"dtype": _DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)


def read(path):
    """{name: tensor}."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        t = torch.frombuffer(bytearray(body[b:end]), dtype=_TORCH[e["dtype"]]) if end > b else torch.empty(0)
        out[name] = t.reshape(e["shape"])
    return out
