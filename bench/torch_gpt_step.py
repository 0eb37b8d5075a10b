#!/usr/bin/python3
"""PyTorch side of train_step_bench and of the GPU run (bench/gpu/run.sh): times nanoGPT's
training step on the same model.

One step = forward + backward + clip_grad_norm_ + torch.optim.AdamW (nanoGPT's param groups:
weight decay on >= 2-D parameters only), with PyTorch's defaults. The model is the PyTorch
reference of the parity test (tests/libs/models/gpt_reference.py), so both sides run the same
architecture.

Usage: torch_gpt_step.py CONFIG_JSON [--device cpu|cuda] [--precision f32|bf16]
       torch_gpt_step.py --matmul N [--device cpu|cuda] [--precision f32|bf16]
       torch_gpt_step.py --suite RUNS [--device cpu|cuda]
CONFIG_JSON: {vocab_size, block_size, n_layer, n_head, n_embd, bias, batch_size, threads,
              warmup, steps}
--device cuda   runs on the GPU (timed between torch.cuda.synchronize() calls); without CUDA it
                says so on stderr and runs on the CPU ("device" in the output tells which ran).
--precision     f32 (the default: float32 throughout, TF32 off, as PyTorch's defaults) or bf16
                (torch.autocast to bfloat16 around the forward and loss: f32 master weights,
                f32 AdamW, as nanoGPT trains on GPUs).
--matmul N      times C = A @ B for N x N matrices instead (A, B of the precision's dtype)
                and prints {"ms", "tflops", ...}.
--suite RUNS    several runs in one process (one import of torch), RUNS a JSON list of
                {"workload": NAME, "precision": P, "matmul": N} or {"workload": NAME,
                "precision": P, "config": CONFIG}; prints one JSON line per run with "kind":
                "torch" and its "workload" ("error" instead of figures if it failed).
Prints one JSON line: {"ms_per_step", "peak_rss_kb", "threads", "torch", "device",
"device_name", "precision", "loss"}.
"""
import argparse
import json
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "libs", "models"))
import torch  # noqa: E402
import gpt_reference  # noqa: E402


def pick_device(name):
    if name == "cuda" and not torch.cuda.is_available():
        print("torch_gpt_step: CUDA is not available (torch %s); running on the CPU" % torch.__version__,
              file=sys.stderr)
        return torch.device("cpu")
    return torch.device(name)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def device_name(device):
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return "cpu"


def autocast(device, precision):
    if precision == "bf16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return torch.autocast(device_type=device.type, enabled=False)


def time_matmul(n, device, precision):
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    g = torch.Generator().manual_seed(0)
    a = torch.rand((n, n), generator=g).sub_(0.5).to(device=device, dtype=dtype)
    b = torch.rand((n, n), generator=g).sub_(0.5).to(device=device, dtype=dtype)
    c = a @ b
    sync(device)
    runs, start = 0, time.perf_counter()
    while runs < 3 or (runs < 200 and time.perf_counter() - start < 0.5):
        c = a @ b
        runs += 1
        if runs % 10 == 0:
            sync(device)
    sync(device)
    ms = (time.perf_counter() - start) * 1000 / runs
    del c
    return {"ms": ms, "tflops": 2.0 * n ** 3 / (ms * 1e9), "n": n, "runs": runs}


def time_gpt(c, device, precision):
    torch.set_num_threads(c["threads"])
    torch.manual_seed(1337)
    model = gpt_reference.Gpt(dict(c, dtype="float32")).float().to(device)
    decay = [q for q in model.parameters() if q.dim() >= 2]
    no_decay = [q for q in model.parameters() if q.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.99))
    b, t, v = c["batch_size"], c["block_size"], c["vocab_size"]
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, v, (b, t), generator=g).to(device)
    y = torch.randint(0, v, (b, t), generator=g).to(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)

    def step():
        with autocast(device, precision):
            loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    for _ in range(c["warmup"]):
        step()
    sync(device)
    start = time.perf_counter()
    for _ in range(c["steps"]):
        loss = step()
    sync(device)
    ms = (time.perf_counter() - start) * 1000 / c["steps"]
    out = {"ms_per_step": ms, "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
           "threads": c["threads"], "loss": float(loss)}
    if device.type == "cuda":
        out["peak_gpu_mib"] = torch.cuda.max_memory_allocated(device) / 2 ** 20
    del model, opt, x, y
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", nargs="?", help="CONFIG_JSON")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--precision", default="f32", choices=["f32", "bf16"])
    p.add_argument("--matmul", type=int, default=0, help="time an N x N matrix product instead")
    p.add_argument("--suite", default="", help="a JSON list of runs in one process (see the top)")
    a = p.parse_args()
    device = pick_device(a.device)
    torch.backends.cuda.matmul.allow_tf32 = False  # f32 means f32 (PyTorch's default, made explicit)
    common = {"torch": torch.__version__, "device": device.type, "device_name": device_name(device)}
    if a.suite:
        for run in json.loads(a.suite):
            precision = run.get("precision", "f32")
            tag = {"kind": "torch", "workload": run["workload"], "precision": precision}
            try:
                if "matmul" in run:
                    figs = time_matmul(run["matmul"], device, precision)
                else:
                    figs = time_gpt(run["config"], device, precision)
                print(json.dumps(dict(tag, **figs, **common)), flush=True)
            except Exception as e:  # one failed run (e.g. out of memory) must not lose the others
                print(json.dumps(dict(tag, error="%s: %s" % (type(e).__name__, e), **common)), flush=True)
        return
    common["precision"] = a.precision
    if a.matmul > 0:
        print(json.dumps(dict(time_matmul(a.matmul, device, a.precision), **common)))
        return
    if a.config is None:
        p.error("CONFIG_JSON (or --matmul N, or --suite RUNS) is required")
    print(json.dumps(dict(time_gpt(json.loads(a.config), device, a.precision), **common)))


if __name__ == "__main__":
    main()
