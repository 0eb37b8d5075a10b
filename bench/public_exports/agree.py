#!/usr/bin/python3
"""Runs one function of an export on PCP's reference interpreter and on a backend with the
same random inputs, and prints how far each result of the backend is from the interpreter's:
for exports that have no oracle of their own (e.g. a backward graph whose arguments are the
forward's saved activations, as bytedance/byteir's BertTiny BW).

  bench/public_exports/agree.py EXPORT.mlir [--backend=cpu] [--tool=...] [--work=DIR]

Float arguments are N(0, 0.1²); integer arguments uniform in [0, 100) (gather starts are
clamped, so any value is a valid index). Exits 1 if any result differs by more than 1e-4
relative to the largest |value| of the interpreter's result.
"""
import argparse
import os
import re
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

_TORCH = {"f32": torch.float32, "i32": torch.int32, "i64": torch.int64, "i1": torch.bool}


def argument_types(text, function):
    """[(shape, dtype)] of @function's arguments, from its signature or its entry block."""
    m = re.search(r"func\.func (?:public |private )?@" + re.escape(function) + r"\((.*?)\)\s*->", text, re.S)
    if m is None:  # generic form: "func.func"() ({ ^bb0(%arg0: tensor<...>, ...):
        m = re.search(r"\^bb0\((.*?)\):", text, re.S)
    types = []
    for dims, dtype in re.findall(r"%[\w]+: tensor<((?:\d+x)*)(\w+)>", m.group(1)):
        types.append(([int(d) for d in dims.split("x") if d], dtype))
    return types


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("export")
    parser.add_argument("--function", default="main")
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--tool", default="build/tools/pcp-stablehlo-run/pcp-stablehlo-run")
    parser.add_argument("--work", default="/tmp/pcp_agree")
    parser.add_argument("--seed", type=int, default=0)
    opts = parser.parse_args()
    os.makedirs(opts.work, exist_ok=True)
    with open(opts.export) as f:
        types = argument_types(f.read(), opts.function)
    g = torch.Generator().manual_seed(opts.seed)
    args = []
    for i, (shape, dtype) in enumerate(types):
        if dtype == "f32":
            t = torch.randn(*shape, generator=g) * 0.1
        elif dtype in ("i32", "i64"):
            t = torch.randint(0, 100, shape, generator=g, dtype=_TORCH[dtype])
        else:
            t = torch.randint(0, 2, shape, generator=g).bool()
        args.append((f"arg{i}", t))
    inputs = os.path.join(opts.work, "in.safetensors")
    safetensors_io.write(inputs, args)
    outs = {}
    for backend in ("interpreter", opts.backend):
        outs[backend] = os.path.join(opts.work, f"{backend}.safetensors")
        subprocess.run([opts.tool, opts.export, f"--inputs={inputs}", f"--outputs={outs[backend]}",
                        f"--function={opts.function}", f"--backend={backend}"], check=True)
    want, got = safetensors_io.read(outs["interpreter"]), safetensors_io.read(outs[opts.backend])
    worst, worst_name = 0.0, ""
    for name, w in want.items():
        diff = (got[name].double() - w.double()).abs().max().item() if w.numel() else 0.0
        rel = diff / max(w.double().abs().max().item(), 1e-30) if w.numel() else 0.0
        if rel >= worst:
            worst, worst_name = rel, name
    print(f"{len(want)} results; worst {opts.backend} vs interpreter: {worst:.3g} relative ({worst_name})")
    print("PASS" if worst <= 1e-4 else "FAIL", "(tolerance 1e-4 relative)")
    return 0 if worst <= 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
