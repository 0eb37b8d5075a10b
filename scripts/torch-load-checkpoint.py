#!/usr/bin/python3
"""Loads a PCP GPT checkpoint (pcp-local's ckpt.safetensors, or a cluster job's
checkpoints/round-NNNNNN/ckpt.safetensors) into PyTorch with load_state_dict(strict=True):
the reference GPT of tests/libs/models/gpt_reference.py, which has nanoGPT's module and
state_dict names, built from the checkpoint's own pcp.model config.

  /usr/bin/python3 scripts/torch-load-checkpoint.py out/gpt2_small/ckpt.safetensors
"""
import json
import os
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../tests/libs/models"))
import gpt_reference as g  # noqa: E402


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        meta = json.loads(f.read(n)).get("__metadata__", {})
    if "stablehlo" in meta.get("pcp.model", ""):
        sys.exit(f"{path}: an imported StableHLO model's checkpoint, not the GPT's")
    c = json.loads(meta["pcp.model"])
    c["dtype"] = "float32"
    t0 = time.time()
    sd = g.read_safetensors(path)
    m = g.Gpt(c).float()
    m.load_state_dict(sd, strict=True)
    params = sum(p.numel() for p in m.parameters())
    print(f"loaded {len(sd)} tensors strictly into the reference GPT ({params / 1e6:.2f}M parameters, "
          f"config {json.dumps(c)}) in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
