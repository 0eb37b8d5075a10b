"""Reads and writes safetensors files with numpy only, for the example and test scripts.

  import safetensors_io
  params = safetensors_io.read_safetensors("llama_2l.safetensors")               # {name: ndarray}
  inputs = safetensors_io.read_safetensors("in.safetensors", torch.from_numpy)   # {name: Tensor}
  safetensors_io.write_safetensors("out.safetensors", {"loss": loss})            # or [(name, x)]

Reading keeps each tensor's dtype (F32, F64, I32 or I64) and shape and skips __metadata__; the
arrays are writable copies. Writing stores every value as F32, in the given order, with the
header as compact JSON padded with spaces to a multiple of 8 bytes: the same input gives the
same bytes. A value is a numpy array (or anything np.asarray takes) or a torch tensor (anything
with detach(): detached and converted with .float().numpy()), so this module needs no torch.
Scripts in this folder import it directly; others add this folder to sys.path first.
"""
import json
import struct

import numpy as np

_NP = {"F32": np.float32, "F64": np.float64, "I32": np.int32, "I64": np.int64}


def read_safetensors(path, convert=None):
    """{name: convert(array)} for every tensor of the file at `path` (the arrays if no convert)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        arr = np.frombuffer(data[base + begin:base + end], dtype=_NP[info["dtype"]])
        arr = arr.reshape(info["shape"]).copy()
        out[name] = convert(arr) if convert is not None else arr
    return out


def write_safetensors(path, tensors):
    """Writes `tensors` ({name: value} or [(name, value)]) to `path` as F32."""
    items = tensors.items() if isinstance(tensors, dict) else tensors
    header, blobs, offset = {}, [], 0
    for name, value in items:
        arr = value.detach().float().numpy() if hasattr(value, "detach") else np.asarray(value)
        raw = np.ascontiguousarray(arr, dtype=np.float32).tobytes()  # (ascontiguousarray makes 0-d 1-d: shape from arr)
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)
