#!/usr/bin/env python3
"""The table of bench/gpu/run.sh: reads OUT/figures.jsonl (pcp_vulkan_bench --json lines and
bench/torch_gpt_step.py lines tagged by run.sh), OUT/steps.tsv and the test logs, writes
OUT/results.md and prints it. Standard library only (runs with any python3).

Columns: PyTorch f32 | PyTorch bf16 | PCP f32 | PCP bf16 | PCP f16 | ratio, where ratio is
PCP bf16's time / PyTorch bf16's (the issue's goal: <= 1.0), and in parentheses PCP f16's (the
precision that runs on tensor cores through VK_NV_cooperative_matrix). Matmul rows give TFLOPS and the
percentage of the GPU's peak (f32 columns against the plain f32 peak, 16-bit columns against
the dense tensor-core peak); train-step rows give ms/step, achieved TFLOPS and MFU (model
FLOPs as nanoGPT's estimate_mfu counts them, 6N + 12·L·H·Q·T per token, against the dense
bf16 tensor-core peak, as nanoGPT reports MFU for every precision).

A convergence run (run.sh --convergence) gets a table of f32's and bf16's losses. A second
table sets each figure run as a variant, one of the Vulkan backend's switches off or an option
on (figures whose workload is "BASE@VARIANT", e.g. nanogpt@tile64, nanogpt@fused_attention),
beside the default run's: default / variant below 1 means the default is faster.
"""
import argparse
import json
import os
import re
import sys

# Dense peaks in TFLOPS (vendor datasheets): (plain f32, bf16/f16 tensor cores).
PEAKS = [
    ("H200", 66.9, 989.4),
    ("H100 PCIe", 51.2, 756.0),
    ("H100", 66.9, 989.4),
    ("A100", 19.5, 312.0),
    ("L40S", 91.6, 362.1),
    ("L4", 30.3, 121.0),
    ("A10", 31.2, 125.0),
]


def peaks_for(name):
    for key, f32, tc in PEAKS:
        if key.lower() in (name or "").lower():
            return f32, tc
    return None, None


def gpt_flops_per_step(c):
    """nanoGPT's estimate_mfu numerator for one step (non-embedding count keeps wte, tied)."""
    L, H, C, T, V = c["n_layer"], c["n_head"], c["n_embd"], c["block_size"], c["vocab_size"]
    bias = c.get("bias", False)
    per_layer = 12 * C * C + (2 * C if not bias else 4 * C) + (9 * C if bias else 0)
    n = V * C + L * per_layer + (C if not bias else 2 * C)  # + final LayerNorm; wpe excluded
    tokens = c["batch_size"] * T
    return (6 * n + 12 * L * H * (C // H) * T) * tokens, n


def load(out):
    figs = []
    path = os.path.join(out, "figures.jsonl")
    if os.path.exists(path):
        for line in open(path):
            line = line.strip()
            if line.startswith("{"):
                try:
                    figs.append(json.loads(line))
                except ValueError:
                    pass
    return figs


def tests(out):
    rows = []
    logs = os.path.join(out, "logs")
    steps = {}
    if os.path.exists(os.path.join(out, "steps.tsv")):
        for line in open(os.path.join(out, "steps.tsv")):
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 3:
                steps[parts[0]] = (parts[1], parts[2])
    for name in ["vulkan_backend_test", "vulkan_dot_tile_test", "vulkan_half_buffer_test", "vulkan_attention_test",
                 "backend_conformance_test", "gpt_train_step_test", "mixed_precision_test",
                 "cooperative_matrix_test", "vulkan_row_kernel_test", "vulkan_reduction_test", "vulkan_map_group_test",
                 "vulkan_upload_test"]:
        log = os.path.join(logs, name + ".log")
        if not os.path.exists(log):
            rows.append((name, "not run", ""))
            continue
        text = open(log, errors="replace").read()
        passed = re.search(r"\[  PASSED  \] (\d+) test", text)
        skipped = re.search(r"\[  SKIPPED \] (\d+) test", text)
        failed = re.findall(r"\[  FAILED  \] (\S+)", text)
        rc, secs = steps.get(name, ("?", "?"))
        if rc == "skipped":
            rows.append((name, "skipped (the budget was spent)", ""))
            continue
        what = "%s passed" % (passed.group(1) if passed else "0")
        if skipped:
            what += ", %s skipped" % skipped.group(1)
        if failed:
            what += ", FAILED: " + " ".join(sorted(set(f for f in failed if not f.isdigit()))[:8])
        if rc not in ("0", "?"):
            what += " (exit %s%s)" % (rc, ", timed out" if rc in ("124", "137") else "")
        rows.append((name, what, "%s s" % secs))
    return rows


def fmt(v, digits=2):
    return "—" if v is None else ("%.*f" % (digits, v))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--gpu", default="")
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    figs = load(a.out)
    gpu = a.gpu
    vk_dev = next((f["device"] for f in figs if f.get("backend") == "vulkan"), "")
    torch_dev = next((f.get("device_name") for f in figs if f.get("kind") == "torch"), "")
    f32_peak, tc_peak = peaks_for(gpu or vk_dev or torch_dev)

    def pick(kind, backend, precision, workload=None):
        for f in figs:
            if f.get("kind") != kind or f.get("precision") != precision:
                continue
            if backend and f.get("backend") != backend:
                continue
            if workload is not None and f.get("workload", "") != workload:
                continue
            return f
        return None

    def torch_pick(workload, precision):
        for f in figs:
            if f.get("kind") == "torch" and f.get("workload") == workload and f.get("precision") == precision:
                return f
        return None

    lines = []
    title = "GPU run" + (" (smoke: tiny shapes, not figures)" if a.smoke else "")
    lines.append("# %s: %s" % (title, gpu or vk_dev or torch_dev or "no GPU seen"))
    lines.append("")
    lines.append("Vulkan device: %s" % (vk_dev or "none (PCP's Vulkan figures not run)"))
    if torch_dev:
        t = next(f for f in figs if f.get("kind") == "torch")
        lines.append("PyTorch: %s on %s (%s)" % (t.get("torch"), t.get("device"), torch_dev))
    lines.append("Peaks used: %s" % ("f32 %.1f TFLOPS, bf16/f16 tensor cores %.1f TFLOPS (dense, datasheet)" %
                                     (f32_peak, tc_peak) if f32_peak else "unknown GPU: no % of peak, no MFU"))
    lines.append("")
    lines.append("| workload | PyTorch f32 | PyTorch bf16 | PCP f32 | PCP bf16 | PCP f16 | ratio: PCP bf16 (f16) time / PyTorch bf16 |")
    lines.append("| --- | --- | --- | --- | --- | --- | --- |")

    # Matmul.
    mm = {p: pick("matmul", "vulkan", p, "") for p in ("f32", "bf16", "f16")}
    tm = {p: torch_pick("matmul", p) for p in ("f32", "bf16")}
    n = next((f["n"] for f in list(mm.values()) + list(tm.values()) if f), None)

    def mm_cell(f, peak):
        if not f:
            return "not run"
        tf = f["tflops"]
        pct = " (%.1f %%)" % (100 * tf / peak) if peak else ""
        return "%s TFLOPS%s, %.3f ms" % (fmt(tf, 2 if tf >= 0.1 else 5), pct, f["ms"])

    def ratio_cell(ours_bf16, ours_f16, theirs_bf16, key):
        if not theirs_bf16:
            return "—"
        r = lambda f: fmt(f[key] / theirs_bf16[key], 3) if f else "—"
        return "%s (%s)" % (r(ours_bf16), r(ours_f16))

    lines.append("| matmul %s | %s | %s | %s | %s | %s | %s |" % (
        n or "", mm_cell(tm["f32"], f32_peak), mm_cell(tm["bf16"], tc_peak), mm_cell(mm["f32"], f32_peak),
        mm_cell(mm["bf16"], tc_peak), mm_cell(mm["f16"], tc_peak), ratio_cell(mm["bf16"], mm["f16"], tm["bf16"], "ms")))

    # Train steps.
    for workload, label in (("nanogpt", "nanoGPT shakespeare_char"), ("gpt2", "GPT-2 small")):
        ours = {p: pick("gpt", "vulkan", p, workload) for p in ("f32", "bf16", "f16")}
        theirs = {p: torch_pick(workload, p) for p in ("f32", "bf16")}
        shape = next((f for f in ours.values() if f), None)
        if shape is None:
            shape = None
        flops = gpt_flops_per_step(shape)[0] if shape else None

        def step_cell(ms, loss):
            if ms is None:
                return "not run"
            s = "%.2f ms" % ms
            if flops:
                tf = flops / (ms * 1e9)
                s += ", %s TFLOPS" % fmt(tf, 2 if tf >= 0.1 else 5)
                if tc_peak:
                    s += ", MFU %.1f %%" % (100 * tf / tc_peak)
            if loss is not None:
                s += ", loss %.4f" % loss
            return s

        cells = [step_cell(theirs[p]["ms_per_step"] if theirs[p] else None, theirs[p].get("loss") if theirs[p] else None)
                 for p in ("f32", "bf16")]
        cells += [step_cell(ours[p]["ms_per_step"] if ours[p] else None, ours[p].get("loss") if ours[p] else None)
                  for p in ("f32", "bf16", "f16")]
        ratio = ratio_cell(ours["bf16"], ours["f16"], theirs["bf16"], "ms_per_step")
        desc = label
        if shape:
            desc += " (%d×%d×%d, block %d, batch %d, vocab %d)" % (shape["n_layer"], shape["n_head"], shape["n_embd"],
                                                                 shape["block_size"], shape["batch_size"],
                                                                 shape["vocab_size"])
        lines.append("| %s ms/step | %s | %s | %s | %s | %s | %s |" % (desc, *cells, ratio))
    lines.append("")
    lines.append("PCP bf16 / f16 round every product's inputs and output to bf16 / f16 (f32 accumulate, f32 master "
                 "weights; pcp/autodiff/mixed_precision.h); f16 products run on tensor cores where the Vulkan driver "
                 "offers VK_NV_cooperative_matrix, bf16 ones on the f32 shaders. PyTorch bf16 is torch.autocast. "
                 "Losses: after the timed steps on fixed random tokens; PCP's columns should agree with each other "
                 "(PyTorch's reference keeps PyTorch's default initialisation, so its losses differ).")
    lines.append("")
    # A convergence run (run.sh --convergence): f32 and bf16 trained the same iterations.
    conv = {f["precision"]: f for f in figs if f.get("kind") == "convergence"}
    if conv:
        lines.append("| convergence (%s) | iterations reached | train loss | val loss | ms/step |" % (
            "nanoGPT shakespeare_char GPU config, Vulkan"))
        lines.append("| --- | --- | --- | --- | --- |")
        for p in ("f32", "bf16"):
            c = conv.get(p)
            lines.append("| %s | %s | %s | %s | %s |" % (
                p, "%d of %d" % (c["iters"], c["target_iters"]) if c else "not run", fmt(c["train_loss"], 4) if c else "—",
                fmt(c["val_loss"], 4) if c else "—", fmt(c.get("ms_per_step"), 1) if c else "—"))
        if "f32" in conv and "bf16" in conv:
            d = conv["bf16"]["val_loss"] - conv["f32"]["val_loss"]
            same = conv["bf16"]["iters"] == conv["f32"]["iters"] == conv["f32"]["target_iters"]
            lines.append("")
            lines.append("bf16 val − f32 val = %+.4f (goal: within 0.02%s)" % (
                d, "" if same else "; not both at the target iteration"))
        lines.append("")
    # The variants: each default figure beside the same run with one of this backend's choices
    # flipped.
    variants = [f for f in figs if f.get("backend") == "vulkan" and "@" in f.get("workload", "")]
    if variants:
        lines.append("| variant | workload | precision | default | variant | default / variant |")
        lines.append("| --- | --- | --- | --- | --- | --- |")
        for v in variants:
            base, switch = v["workload"].split("@", 1)
            key = "ms" if v["kind"] == "matmul" else "ms_per_step"
            d = pick(v["kind"], "vulkan", v["precision"], "" if v["kind"] == "matmul" else base)
            lines.append("| %s | %s | %s | %s | %s | %s |" % (
                switch, base, v["precision"], fmt(d[key] if d else None, 3) + " ms", fmt(v[key], 3) + " ms",
                fmt(d[key] / v[key], 3) if d else "—"))
        lines.append("")
    lines.append("| test | result | time |")
    lines.append("| --- | --- | --- |")
    for name, what, secs in tests(a.out):
        lines.append("| %s | %s | %s |" % (name, what, secs))
    lines.append("")
    if os.path.exists(os.path.join(a.out, "steps.tsv")):
        lines.append("Steps (name, exit code, seconds): " + "; ".join(
            " ".join(l.split()) for l in open(os.path.join(a.out, "steps.tsv")) if l.strip()))
    text = "\n".join(lines) + "\n"
    open(os.path.join(a.out, "results.md"), "w").write(text)
    sys.stdout.write(text)
    # Exit 1 when a test failed, so a caller sees it; missing pieces are not failures.
    return 1 if any("FAILED" in w for _, w, _ in tests(a.out)) else 0


if __name__ == "__main__":
    sys.exit(main())
