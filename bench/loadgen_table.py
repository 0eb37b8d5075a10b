#!/usr/bin/env python3
"""Scale table (issue 14): one shepherd against M simulated workers (tools/pcp-loadgen) for
each (M, |theta|) of a grid, and one summary line per cell:

  M | |theta| | round overhead median / max (s) | outer step (ms) | shepherd peak RSS (MiB) |
  goal (MiB) | shepherd CPU s / round | shepherd egress MB/s | ingress MB/s

- Each cell starts a fresh pcp-shepherd (real binary, loopback, its own temporary state dir,
  scripts/chaos.py's Cluster), writes random u16 token data (train.bin / val.bin, tokens below
  the model's vocabulary) and submits a GPT job of that size with workers = min_workers = M,
  tau = --tau inner steps, --rounds rounds, evaluation and checkpoints only at the end
  (--checkpoint-every N: a checkpoint every N rounds, for the idle-hub measurement)
  (eval_iters 1, batch 1), then runs pcp-loadgen with --compute_s of simulated compute.
- Sizes (GPT, no bias, lm_head tied, block 64):
    1M   = n_layer 4,  n_embd 128, n_head 4,  vocab 2048   (1,057,920 parameters)
    10M  = n_layer 5,  n_embd 384, n_head 6,  vocab 3072   (10,055,808)
    124M = n_layer 12, n_embd 768, n_head 12, vocab 50304  (123,636,480: GPT-2 small's shape
           with a 64-token block)
- overhead (loadgen side): from the last simulated worker's delta sent to the first theta
  chunk of the next round received: the shepherd's aggregation, outer step and theta send.
  The last round has none (no next round).
- outer step: the shepherd's own RoundRecord.outer_step_s (median over the rounds).
- peak RSS: the largest VmHWM of the shepherd seen during the run (/proc/PID/status). The goal
  is 4 x |theta| x 4 B + 256 MiB (theta, momentum, the running sum, one more, plus the
  process). The jobs use diloco.aggregation auto: buffered (every worker's delta kept until
  the round ends, about (8 + M) x |theta| x 4 B as measured before streaming aggregation) while
  the round's deltas fit 256 MiB, else streaming (--aggregation forces one).
- CPU s / round: the shepherd's utime + stime per round (median).
- egress / ingress: the shepherd's theta out (= loadgen bytes in) and delta in (= loadgen bytes
  out) per second of the round (median over rounds).

Streaming DiLoCo (--fragments P > 1): the jobs get diloco.streaming {fragments: P,
overlap_steps: --overlap-steps} with inner_steps = tau x P, so every round is still tau steps
and syncs one fragment (|theta| / P values each way per worker); the simulated workers get the
next round's StartRound ahead and send each fragment delta while the next round computes.

Cells whose estimated shepherd memory (shepherd_estimate: the measured peaks),
passes --memory-limit-gib (default: 60 % of this machine's memory, which others share) are
skipped with the reason printed, and pcp-loadgen stops a run whose shepherd RSS passes the
same limit.

  bench/loadgen_table.py                                  # the whole grid
  bench/loadgen_table.py --workers 32 --params 10M        # one cell
  bench/loadgen_table.py --workers 8,32 --params 1M,10M --compute-s 2 --json table.json
  bench/loadgen_table.py --workers 32 --params 10M --fragments 4 --aggregation streaming

Loopback only; every process is started and stopped by PID.
"""

import argparse
import array
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from chaos import Cluster  # noqa: E402

MIB = 1 << 20
BLOCK = 64
# name -> (n_layer, n_embd, n_head, vocab)
SIZES = {
    "1M": (4, 128, 4, 2048),
    "10M": (5, 384, 6, 3072),
    "124M": (12, 768, 12, 50304),
}


def parameters(size):
    """GPT without biases, lm_head tied to wte (pcp/training/job_memory.h)."""
    n_layer, c, _, v = SIZES[size]
    return v * c + BLOCK * c + n_layer * (12 * c * c + 2 * c) + c


def streams(aggregation, m, p):
    """Whether the shepherd sums the deltas as they arrive (pcp/diloco/delta_sum.h StreamsDeltas)."""
    return aggregation == "streaming" or (aggregation == "auto" and m * p * 4 > 256 * MIB)


def shepherd_estimate(m, p, aggregation="auto"):
    """Buffered: one delta per worker, theta, momentum, a snapshot and what else it holds per
    parameter (the measured peaks fit (8 + M) x |theta| x 4 B + 256 MiB, e.g. 7.8 GiB at M = 8,
    |theta| = 124M). Streaming: no delta per worker (measured: 8.2 x |theta| x 4 B + 256 MiB at
    M = 8, 124M), + the process."""
    per_param = 9 if streams(aggregation, m, p) else 8 + m
    return per_param * p * 4 + 256 * MIB


def goal(p):
    return 4 * p * 4 + 256 * MIB


def machine_memory():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    return 0


def write_tokens(path, n, vocab, rng):
    a = array.array("H", (rng.randrange(vocab) for _ in range(n)))
    with open(path, "wb") as f:
        a.tofile(f)


def job_yaml(m, size, args, data_dir):
    n_layer, c, h, v = SIZES[size]
    streaming = ""
    inner_steps = args.tau
    if args.fragments > 1:
        # Each round is tau steps and syncs one fragment: H = tau x P.
        inner_steps = args.tau * args.fragments
        streaming = f",\n         streaming: {{fragments: {args.fragments}, overlap_steps: {args.overlap_steps}}}"
    return (f"name: loadgen_{m}x{size}\n"
            f"model: {{vocab_size: {v}, block_size: {BLOCK}, n_layer: {n_layer}, n_head: {h}, n_embd: {c}}}\n"
            f"data: {{path: {os.path.join(data_dir, 'train.bin')}, format: bin}}\n"
            "optimizer: {lr: 1.0e-3, min_lr: 1.0e-4, warmup_iters: 0}\n"
            f"training: {{max_iters: {args.rounds * args.tau}, batch_size: 1, eval_iters: 1, seed: 1337}}\n"
            f"diloco: {{workers: {m}, min_workers: {m}, inner_steps: {inner_steps}, rounds: {args.rounds},\n"
            f"         checkpoint_every: {args.checkpoint_every}, eval_every: 1000000, round_deadline_s: 600, aggregation: {args.aggregation}"
            f"{streaming}}}\n")


def median_max(values):
    return (statistics.median(values), max(values)) if values else (None, None)


def med(values):
    return statistics.median(values) if values else None


def summarize(m, size, report, limit_note=""):
    rows = report.get("rounds", [])
    p = report.get("parameters") or parameters(size)
    overhead = [r["overhead_s"] for r in rows if r.get("overhead_s") is not None]
    outer = [r["outer_step_ms"] for r in rows if r.get("outer_step_ms") is not None]
    hwm = [r["hwm_bytes"] for r in rows if r.get("hwm_bytes") is not None]
    rss = [r["rss_bytes"] for r in rows if r.get("rss_bytes") is not None]
    cpu = [r["cpu_s"] for r in rows if r.get("cpu_s") is not None]
    # Rounds with traffic (a window that closed at the run's end may be nearly empty).
    egress = [r["in_bytes_per_s"] / 1e6 for r in rows if r.get("bytes_in", 0) > 0]
    ingress = [r["out_bytes_per_s"] / 1e6 for r in rows if r.get("bytes_out", 0) > 0]
    o_med, o_max = median_max(overhead)
    peak = max(hwm + rss) if (hwm or rss) else None
    return {
        "workers": m, "params": size, "parameters": p, "rounds": len(rows),
        "workers_per_round": [r.get("workers") for r in rows],
        "overhead_median_s": o_med, "overhead_max_s": o_max,
        "outer_step_ms": med(outer),
        "peak_rss_mib": peak / MIB if peak else None,
        "goal_mib": goal(p) / MIB,
        "cpu_s_per_round": med(cpu),
        "egress_mbs": med(egress), "ingress_mbs": med(ingress),
        "end": report.get("end_reason", "") + (f" ({report['error']})" if report.get("error") else "") + limit_note,
    }


def run_cell(args, m, size, limit):
    p = parameters(size)
    need = shepherd_estimate(m, p, args.aggregation)
    if need > limit:
        return {"workers": m, "params": size, "parameters": p,
                "skipped": f"estimated shepherd memory {need / (1 << 30):.1f} GiB "
                           f"is over the limit of {limit / (1 << 30):.1f} GiB"}
    state = tempfile.mkdtemp(prefix=f"pcp-loadgen-{m}x{size}-")
    data = os.path.join(state, "data")
    os.makedirs(data)
    rng = random.Random(1337)
    v = SIZES[size][3]
    # Enough tokens for every worker's shard (block + 1 at least) and a validation batch.
    write_tokens(os.path.join(data, "train.bin"), max(200000, m * 4 * (BLOCK + 1)), v, rng)
    write_tokens(os.path.join(data, "val.bin"), 20000, v, rng)
    job = os.path.join(state, "job.yaml")
    with open(job, "w") as f:
        f.write(job_yaml(m, size, args, data))
    cargs = argparse.Namespace(build_dir=args.build_dir, workers=1, shepherd_args=[
        f"--data_roots={data}", f"--shepherd_memory_bytes={limit}", f"--worker_memory_bytes={limit}",
        f"--log_level={args.shepherd_log_level}"] + list(args.shepherd_arg))
    cluster = Cluster(cargs, state)
    report_path = os.path.join(state, "report.json")
    report = {}
    note = ""
    try:
        cluster.start_shepherd()
        cmd = [os.path.join(os.path.abspath(args.build_dir), "tools/pcp-loadgen/pcp-loadgen"),
               f"--shepherd={cluster.address}", f"--workers={m}", f"--job={job}", f"--compute_s={args.compute_s}",
               f"--shepherd_pid={cluster.shepherd.pid}", f"--json={report_path}", f"--rounds={args.rounds}",
               f"--max_seconds={args.max_seconds}", f"--max_shepherd_rss_gib={limit / (1 << 30):.3f}",
               "--log_level=warn"]
        print(f"== M={m} |theta|={size} ({p:,} parameters): {' '.join(cmd)}", flush=True)
        t0 = time.time()
        r = subprocess.run(cmd, timeout=args.max_seconds + 120)
        print(f"== pcp-loadgen exited {r.returncode} after {time.time() - t0:.0f} s", flush=True)
        if os.path.exists(report_path):
            with open(report_path) as f:
                report = json.load(f)
        if cluster.shepherd.poll() is not None:
            note = f"; the shepherd exited ({cluster.shepherd.returncode}): see {cluster.logs}/shepherd.log"
    finally:
        cluster.stop()
        if args.keep:
            print(f"== kept {state}")
        else:
            shutil.rmtree(state, ignore_errors=True)
    return summarize(m, size, report, note)


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def print_table(cells, args, limit):
    print()
    print(f"# bench/loadgen_table.py: compute {args.compute_s} s/round, tau {args.tau}, {args.rounds} rounds per cell, "
          f"memory limit {limit / (1 << 30):.1f} GiB, nproc {os.cpu_count()}, aggregation {args.aggregation}"
          + (f", streaming DiLoCo: {args.fragments} fragments, overlap {args.overlap_steps} steps" if args.fragments > 1 else ""))
    print("# overhead: loadgen side, last delta sent -> first theta chunk of the next round; "
          "egress = shepherd theta out, ingress = delta in")
    head = (f"{'M':>4} {'|theta|':>7} {'overhead med/max s':>19} {'outer ms':>9} {'peak RSS MiB':>12} "
            f"{'goal MiB':>9} {'CPU s/rnd':>9} {'egress MB/s':>11} {'ingress MB/s':>12}  workers/round")
    print(head)
    for c in cells:
        if "skipped" in c:
            print(f"{c['workers']:>4} {c['params']:>7}  skipped: {c['skipped']}")
            continue
        om = f"{fmt(c['overhead_median_s'], '.3f')}/{fmt(c['overhead_max_s'], '.3f')}"
        print(f"{c['workers']:>4} {c['params']:>7} {om:>19} {fmt(c['outer_step_ms'], '.1f'):>9} "
              f"{fmt(c['peak_rss_mib'], '.0f'):>12} {fmt(c['goal_mib'], '.0f'):>9} {fmt(c['cpu_s_per_round'], '.2f'):>9} "
              f"{fmt(c['egress_mbs'], '.1f'):>11} {fmt(c['ingress_mbs'], '.1f'):>12}  "
              f"{','.join(str(w) for w in c['workers_per_round'])}  {c['end']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", default="8,32,128,256", help="comma-separated M values")
    ap.add_argument("--params", default="1M,10M,124M", help=f"comma-separated sizes: {', '.join(SIZES)}")
    ap.add_argument("--compute-s", type=float, default=2.0, help="simulated compute per round (pcp-loadgen --compute_s)")
    ap.add_argument("--rounds", type=int, default=4, help="rounds per cell")
    ap.add_argument("--tau", type=int, default=2, help="inner steps per round (only the RoundResult's counts)")
    ap.add_argument("--max-seconds", type=float, default=900, help="pcp-loadgen --max_seconds per cell")
    ap.add_argument("--memory-limit-gib", type=float, default=0,
                    help="skip cells over this estimate, stop runs over it (default: 60%% of this machine)")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--checkpoint-every", type=int, default=1000000,
                    help="the job's diloco.checkpoint_every (default: only the final checkpoint)")
    ap.add_argument("--aggregation", default="auto", choices=["auto", "streaming", "buffered"],
                    help="the jobs' diloco.aggregation (auto: streaming once the deltas pass 256 MiB)")
    ap.add_argument("--fragments", type=int, default=1,
                    help="Streaming DiLoCo: P fragments, one synced per round (1 = plain DiLoCo)")
    ap.add_argument("--overlap-steps", type=int, default=0,
                    help="Streaming DiLoCo: diloco.streaming.overlap_steps (below --tau)")
    ap.add_argument("--shepherd-log-level", default="warn")
    ap.add_argument("--shepherd-arg", action="append", default=[],
                    help="another pcp-shepherd flag for every cell (repeatable), e.g. --shepherd-arg=--config=shepherd.yaml")
    ap.add_argument("--json", help="also write the cells as JSON here")
    ap.add_argument("--keep", action="store_true", help="keep each cell's state dir (logs, report.json)")
    args = ap.parse_args()
    sizes = [s.strip() for s in args.params.split(",") if s.strip()]
    for s in sizes:
        if s not in SIZES:
            sys.exit(f"loadgen_table: --params: unknown size {s!r} (known: {', '.join(SIZES)})")
    try:
        ms = [int(x) for x in args.workers.split(",") if x.strip()]
    except ValueError:
        sys.exit(f"loadgen_table: --workers: not a list of numbers: {args.workers!r}")
    if any(m < 1 for m in ms) or args.rounds < 2 or args.tau < 1:
        sys.exit("loadgen_table: --workers must be >= 1, --rounds >= 2, --tau >= 1")
    if args.fragments < 1 or args.overlap_steps < 0 or (args.fragments > 1 and args.overlap_steps >= args.tau):
        sys.exit("loadgen_table: --fragments must be >= 1 and --overlap-steps in [0, --tau)")
    loadgen = os.path.join(os.path.abspath(args.build_dir), "tools/pcp-loadgen/pcp-loadgen")
    if not os.access(loadgen, os.X_OK):
        sys.exit(f"loadgen_table: missing {loadgen}: build it first (cmake --build build --target pcp-loadgen)")
    limit = int((args.memory_limit_gib * (1 << 30)) if args.memory_limit_gib > 0 else machine_memory() * 0.6)
    cells = []
    for size in sizes:
        for m in ms:
            cell = run_cell(args, m, size, limit)
            if "skipped" in cell:
                print(f"== M={m} |theta|={size}: skipped: {cell['skipped']}", flush=True)
            cells.append(cell)
    print_table(cells, args, limit)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"compute_s": args.compute_s, "rounds": args.rounds, "tau": args.tau,
                       "fragments": args.fragments, "overlap_steps": args.overlap_steps, "aggregation": args.aggregation,
                       "memory_limit_bytes": limit, "nproc": os.cpu_count(), "cells": cells}, f, indent=1)


if __name__ == "__main__":
    main()
