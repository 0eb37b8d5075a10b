#!/usr/bin/env python3
"""Communication table (issue 12): trains the default job (config/jobs/shakespeare_char.yaml:
nanoGPT's CPU configuration, 2 workers, tau = 50, 2000 inner steps per worker) on a local
cluster once per mode, each worker behind an emulated link (default 10 Mbit/s each way), and
prints one table per worker count:

  mode | val loss | Δ val vs f32 | bytes up+down per worker per inner step |
  x fewer than data-parallel | after the join | Δ up x fewer than f32 Δ |
  peak bytes per sync / (|theta| x 4 / P) | wall time | ÷ compute-only | network wait %

- bytes: the job's own history (every round's bytes_up + bytes_down at the shepherd: Δs in,
  θ / θ updates / fragments out), divided by workers and by max_iters.
- data-parallel: per inner step each worker sends its f32 gradient and receives f32 θ (or the
  averaged gradient): 2 x |θ| x 4 bytes.
- after the join: the same without round 1, in which a worker that could not draw θ₀ itself
  (streaming; a params file) gets θ in full (f32) once; from round 2 on it gets updates (or
  fragments) only.
- peak bytes per sync: the largest round's Δ bytes per worker, over |θ| x 4 / P (P = 1 unless
  streaming); <= 1 (plus chunk headers) means a sync never carries more than its share.
- wall time: first round's start to last round's end (the final validation estimate is not
  included; every mode evaluates only after its last round).
- network wait %: 1 - (the worker's compute time: steps x ms/step from its round lines) / wall,
  averaged over the workers: the share of the wall time its compute sat idle.
The "compute only" row trains without an emulated link: the wall time communication-free
training would take (loopback costs little).

  bench/comm_table.py                       # every mode, about 25 minutes on 2 cores
  bench/comm_table.py --modes f32,int4 --link-mbit 100 --json table.json
  bench/comm_table.py --workers 2,4 --modes "compute-only,f32,sparseloco 3%"   # one table per count

Loopback only; every process is started and stopped by PID (scripts/chaos.py's Cluster).
"""

import argparse
import json
import os
import re
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from chaos import Cluster  # noqa: E402

SPARSELOCO_OUTER = "  outer_lr: 4.0\n  outer_momentum: 0.0\n"

# mode -> (diloco YAML lines, emulated link?)
MODES = {
    "compute-only": ("", False),
    "f32": ("", True),
    "bf16": ("  compression: {up: bf16, down: bf16}\n", True),
    "int8+EF": ("  compression: {up: int8, down: int8, error_feedback: true}\n", True),
    "int4+EF": ("  compression: {up: int4, down: int4, error_feedback: true}\n", True),
    "streaming P=4 f32": ("  streaming: {fragments: 4}\n", True),
    "streaming P=4 int4+EF overlap": (
        "  streaming: {fragments: 4, overlap_steps: 5}\n  compression: {up: int4, down: int4, error_feedback: true}\n",
        True),
    # Sparse (issue 33): top-k of each block of 4096 at 2 bits, up and down, error feedback on both ends.
    "topk2 3%+EF": ("  compression: {up: topk2, down: topk2, density: 0.03, error_feedback: true}\n", True),
    "topk2 1.5%+EF": ("  compression: {up: topk2, down: topk2, density: 0.015, error_feedback: true}\n", True),
    "streaming P=4 topk2 3%+EF overlap": (
        "  streaming: {fragments: 4, overlap_steps: 5}\n"
        "  compression: {up: topk2, down: topk2, density: 0.03, error_feedback: true}\n", True),
    # Sparse Δs up, the (dense, after outer Nesterov momentum) update down as int4.
    "topk2 3% up + int4 down (EF)": ("  compression: {up: topk2, down: int4, density: 0.03, error_feedback: true}\n", True),
    "topk2 1.5% up + int4 down (EF)": (
        "  compression: {up: topk2, down: int4, density: 0.015, error_feedback: true}\n", True),
    # SparseLoCo's outer step: no outer momentum (error feedback carries what was not sent); with
    # outer_lr 1 the new θ is the plain average of the workers' sparse updates.
    "topk2 3% up+down no-momentum (EF)": (
        "  outer_momentum: 0.0\n  compression: {up: topk2, down: topk2, density: 0.03, error_feedback: true}\n", True),
    "topk2 3% up+down plain-average (EF)": (
        "  outer_lr: 1.0\n  outer_momentum: 0.0\n"
        "  compression: {up: topk2, down: topk2, density: 0.03, error_feedback: true}\n", True),
    "streaming P=4 topk2 3% up + int4 down (EF) overlap": (
        "  streaming: {fragments: 4, overlap_steps: 5}\n"
        "  compression: {up: topk2, down: int4, density: 0.03, error_feedback: true}\n", True),
    # SparseLoCo (scheme: sparseloco, codec/compression.h): topk2 up with error feedback decayed by
    # 0.95, outer step lr 4 without momentum, and down the exact support of the averaged sparse Δs
    # (down_mode union, topk2 values, no shepherd error feedback). The default job names outer_lr
    # and outer_momentum, which a scheme does not override: the modes set them as the scheme would.
    "sparseloco 3%": (SPARSELOCO_OUTER + "  compression: {scheme: sparseloco, density: 0.03}\n", True),
    "sparseloco 1.5%": (SPARSELOCO_OUTER + "  compression: {scheme: sparseloco, density: 0.015}\n", True),
    # Streamed: the scheme's merge takes θ_global's fragment whole (streaming.alpha 0; at the
    # paper's 0.5 error feedback's resent values were also kept locally and lr 4 diverged).
    "streaming P=4 sparseloco 3% overlap": (
        SPARSELOCO_OUTER + "  streaming: {fragments: 4, overlap_steps: 5}\n"
        "  compression: {scheme: sparseloco, density: 0.03}\n", True),
    "streaming P=4 sparseloco 1.5% overlap": (
        SPARSELOCO_OUTER + "  streaming: {fragments: 4, overlap_steps: 5}\n"
        "  compression: {scheme: sparseloco, density: 0.015}\n", True),
}


def job_yaml(base_text, extra, workers):
    """The default job for `workers` workers, evaluated and checkpointed only at its end, plus
    `extra` diloco keys."""
    text = re.sub(r"(?m)^  workers: \d+", f"  workers: {workers}", base_text)
    text = text.replace("path: ../../data/tiny_shakespeare.txt",
                             f"path: {os.path.join(ROOT, 'data/tiny_shakespeare.txt')}")
    text = re.sub(r"(?m)^  checkpoint_every: .*$", "  checkpoint_every: 1000000", text)
    text = re.sub(r"(?m)^  eval_every: .*$", "  eval_every: 1000000", text)
    for key in re.findall(r"(?m)^  ([a-z_]+):", extra):
        # The job's own key (and its more-indented lines) gives way to the mode's.
        text = re.sub(rf"(?m)^  {key}:.*\n(?:    .*\n)*", "", text)
    return re.sub(r"(?m)^diloco:.*\n", lambda m: m.group(0) + extra, text, count=1)


def compute_seconds(log_text):
    """Σ steps x ms/step over a worker's round lines."""
    total = 0.0
    for m in re.finditer(r"round \d+ done: .*?(\d+) steps, loss .*? ([\d.]+) ms/step", log_text):
        total += int(m.group(1)) * float(m.group(2)) / 1000.0
    return total


def run_mode(args, name, extra, link, base_text):
    state = tempfile.mkdtemp(prefix="pcp-comm-")
    args.worker_args = []
    if link:
        args.worker_args = [f"--link_up_mbit={args.link_mbit}", f"--link_down_mbit={args.link_mbit}"]
        if args.link_rtt_ms > 0:
            args.worker_args.append(f"--link_rtt_ms={args.link_rtt_ms}")
    cluster = Cluster(args, state)
    job_file = os.path.join(state, "job.yaml")
    with open(job_file, "w") as f:
        f.write(job_yaml(base_text, extra, args.workers))
    try:
        cluster.start_shepherd()
        for i in range(args.workers):
            cluster.start_supervisor(f"node-{i + 1}")
        job = cluster.ctl("submit", job_file, "--quiet").stdout.strip()
        print(f"== {name}: {job} (state {state})", flush=True)
        status = cluster.wait_job(job, args.max_minutes * 60)
        if status.get("state") != "JOB_STATE_COMPLETED":
            sys.exit(f"comm_table: {name}: job ended as {status.get('state')}: {status.get('reason')}; logs in {state}")
        history = cluster.history(job)
    finally:
        cluster.stop()
    rounds = len(history)
    start = min(int(h["start_unix_ms"]) for h in history) / 1000.0
    end = max(int(h["end_unix_ms"]) for h in history) / 1000.0
    wall = end - start
    up = sum(int(h.get("bytes_up", 0)) for h in history)
    deltas = sum(len(h.get("participants", [])) for h in history)  # Δs received
    down = sum(int(h.get("bytes_down", 0)) for h in history)
    peak_up = max(int(h.get("bytes_up", 0)) for h in history) / args.workers
    # After the join: without round 1 (θ in full, unless drawn), per the share of the tokens.
    tokens = [int(h.get("tokens", 0)) for h in history]
    after_join = (sum(int(h.get("bytes_up", 0)) + int(h.get("bytes_down", 0)) for h in history[1:]),
                  (sum(tokens) - tokens[0]) / max(1, sum(tokens)))
    waits = []
    for i in range(args.workers):
        with open(os.path.join(state, "logs", f"node-{i + 1}.log"), errors="replace") as f:
            waits.append(max(0.0, 1.0 - compute_seconds(f.read()) / wall))
    progress = status.get("progress", {})
    return {"mode": name, "rounds": rounds, "val_loss": progress.get("val_loss"), "wall_s": wall,
            "bytes_up": up, "bytes_down": down, "deltas": deltas, "peak_up_per_worker": peak_up, "after_join": after_join,
            "network_wait": sum(waits) / len(waits), "state": state}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modes", default=",".join(MODES),
                    help="comma-separated, from: " + ", ".join(MODES).replace("%", "%%"))
    ap.add_argument("--custom", action="append", default=[], metavar="NAME=YAML",
                    help="an extra mode: NAME and its diloco YAML lines (\\n for newlines, two-space indent), "
                         "e.g. 'b09=  compression: {scheme: sparseloco, ef_decay: 0.9}'; runs after --modes")
    ap.add_argument("--no-link", action="store_true",
                    help="no emulated link in any mode (losses and bytes only: exploratory runs)")
    ap.add_argument("--job", default=os.path.join(ROOT, "config/jobs/shakespeare_char.yaml"))
    ap.add_argument("--workers", default="2",
                    help="worker counts, comma-separated (e.g. 2,4): one table each, in this order")
    ap.add_argument("--link-mbit", type=float, default=10.0)
    ap.add_argument("--link-rtt-ms", type=float, default=0.0)
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--max-minutes", type=float, default=20.0, help="per mode")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args()
    with open(args.job) as f:
        base_text = f.read()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for spec in args.custom:
        name, sep, yaml_lines = spec.partition("=")
        if not sep or not name.strip():
            sys.exit(f"comm_table: --custom wants NAME=YAML, got '{spec}'")
        MODES[name.strip()] = (yaml_lines.replace("\\n", "\n").rstrip("\n") + "\n", True)
        modes.append(name.strip())
    for m in modes:
        if m not in MODES:
            sys.exit(f"comm_table: unknown mode '{m}' (modes: {', '.join(MODES)})")
    try:
        counts = [int(w) for w in args.workers.split(",") if w.strip()]
    except ValueError:
        sys.exit(f"comm_table: --workers wants worker counts such as 2,4, got '{args.workers}'")
    if not counts or min(counts) < 1:
        sys.exit(f"comm_table: --workers wants worker counts >= 1, got '{args.workers}'")
    tables = {}
    for workers in counts:
        args.workers = workers  # Cluster: CPU threads per worker; run_mode: the job's workers
        tables[str(workers)] = run_table(args, modes, base_text, tables)
    if args.json:
        write_json(args.json, tables, complete=True)


def write_json(path, tables, complete):
    with open(path, "w") as f:
        json.dump({"tables": tables, "complete": complete}, f, indent=1)


def run_table(args, modes, base_text, tables):
    """Every mode at args.workers workers; prints the table and returns its rows (the JSON's
    tables[workers]); the JSON is rewritten after every mode, so a run cut short keeps them."""
    max_iters = int(re.search(r"(?m)^  max_iters: (\d+)", base_text).group(1))
    tau = int(re.search(r"(?m)^  inner_steps: (\d+)", base_text).group(1))
    rows = []
    n_params = None
    table = {"n_params": None, "tau": tau, "workers": args.workers, "rows": rows}
    for m in modes:
        extra, link = MODES[m]
        row = run_mode(args, m, extra, link and not args.no_link, base_text)
        if n_params is None:
            # |θ| from the checkpoint header's parameter count in the shepherd log.
            with open(os.path.join(row["state"], "logs", "shepherd.log"), errors="replace") as f:
                n_params = float(re.search(r"([\d.]+)M parameters", f.read()).group(1)) * 1e6
            table["n_params"] = n_params
        p = int(re.search(r"fragments: (\d+)", extra).group(1)) if "fragments" in extra else 1
        row["bytes_per_step"] = (row["bytes_up"] + row["bytes_down"]) / args.workers / max_iters
        row["x_fewer_than_dp"] = 2 * n_params * 4 / row["bytes_per_step"]
        joined_bytes, joined_share = row["after_join"]
        row["bytes_per_step_after_join"] = joined_bytes / args.workers / (max_iters * joined_share)
        row["x_fewer_after_join"] = 2 * n_params * 4 / row["bytes_per_step_after_join"]
        row["peak_share"] = row["peak_up_per_worker"] / (n_params * 4 / p)
        # Δ up against f32 Δs of the same rounds (each |θ|·4/P bytes): scales, positions, chunk
        # headers and messages included.
        row["up_x_fewer_than_f32"] = row["deltas"] * n_params * 4 / p / max(1, row["bytes_up"])
        rows.append(row)
        if args.json:
            write_json(args.json, {**tables, str(args.workers): table}, complete=False)
        print(f"   {args.workers} workers, {m}: val {row['val_loss']:.4f}, {row['bytes_per_step']:.0f} B/worker/step "
              f"({row['x_fewer_than_dp']:.0f}x fewer than DP), wall {row['wall_s']:.1f} s, "
              f"network wait {100 * row['network_wait']:.1f}%", flush=True)
    rows.sort(key=lambda r: list(MODES).index(r["mode"]))  # the table in MODES' order, whatever the run order
    print(f"\n|θ| = {n_params / 1e6:.3f}M parameters, tau = {tau}, {args.workers} workers, {max_iters} inner steps "
          f"each, link {args.link_mbit:g} Mbit/s each way" + (f", RTT {args.link_rtt_ms:g} ms" if args.link_rtt_ms else ""))
    compute_only = next((r["wall_s"] for r in rows if r["mode"] == "compute-only"), None)
    f32_val = next((r["val_loss"] for r in rows if r["mode"] == "f32"), None)
    print("| mode | val loss | Δ val vs f32 | bytes up+down per worker per inner step | × fewer than data-parallel "
          "| the same after round 1 (the join): × fewer than f32 DiLoCo | Δ up: × fewer than f32 Δ "
          "| peak Δ bytes per sync ÷ (|θ|·4/P) | wall time | ÷ compute-only | network wait % |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        dval = f"{r['val_loss'] - f32_val:+.4f}" if f32_val is not None else "–"
        print(f"| {r['mode']} | {r['val_loss']:.4f} | {dval} | {r['bytes_per_step']:,.0f} | {r['x_fewer_than_dp']:,.0f} "
              f"= {r['x_fewer_than_dp'] / tau:.2f}τ | {r['bytes_per_step_after_join']:,.0f} B: "
              f"{r['x_fewer_after_join'] / tau:.1f} | {r['up_x_fewer_than_f32']:,.1f} | {r['peak_share']:.3f} "
              f"| {r['wall_s']:.1f} s | {r['wall_s'] / compute_only if compute_only else float('nan'):.3f} "
              f"| {100 * r['network_wait']:.1f} |", flush=True)
    return table

if __name__ == "__main__":
    main()
