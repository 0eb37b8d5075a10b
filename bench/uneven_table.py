#!/usr/bin/env python3
"""Uneven workers (issue 32): trains the default job (config/jobs/shakespeare_char.yaml, its
model and data) with 3 workers on a local cluster once per row, under a mix of worker speeds
(--fault_slow_factor: a worker at speed 1/3 takes 3x its own time per inner step) and, for the
"kills" rows, a SIGKILL of a random worker every ~15 s (its supervisor restarts it), and prints
one table:

  mode | speeds | wall time | time to val 1.90 | time to sync 1,1,1's final val | final val |
  worker idle % | goodput tok/s | rounds | tokens

- Every row trains the same tokens: diloco.rounds x inner_steps x 3 workers x batch x block
  (fixed-tau rows by construction; time-budgeted rows end at that token budget,
  pcp/training/round_budget.h; async rows as that mode counts them).
- wall time: first round's start to last round's end (the job's history); the final
  validation estimate after it is not included.
- time to val 1.90: from the first round's start to the end of the first round whose val loss
  (evaluated every --eval-every rounds, in the background, in every row alike) is <= the target.
- time to sync 1,1,1's final val: the same for the homogeneous synchronous row's final val (when
  that row ran first), and that time over its wall time: issue 32's "reaches the homogeneous
  run's final val in <= 1.4x its wall time".
- worker idle %: 1 - (the worker's busy time: steps x ms/step from its "round N done" lines,
  the slowdown's sleep included) / wall, averaged over the 3 workers.
- goodput: the tokens that went into θ (the history's per-round tokens) / wall.
- The time budget of the time-budgeted rows (--budget-seconds) defaults to inner_steps x the
  speed-1 workers' mean ms/step in the first fixed-tau row run (else 5 s): a fast worker runs
  about tau steps per round, the slow one a third of them.

  bench/uneven_table.py                                   # the rows this build has, ~30 min
  bench/uneven_table.py --modes sync-111,budget-113 --json rows.json
  flock /tmp/pcp-bench.lock bench/uneven_table.py --out bench/results/uneven.md

Rows whose mode the build does not know (async: --async-yaml) fail at submit and are reported
as such. Loopback only; every process is started and stopped by PID (scripts/chaos.py's Cluster).
"""

import argparse
import json
import os
import random
import re
import signal
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from chaos import Cluster, pid_of  # noqa: E402

SLOW = (1.0, 1.0, 3.0)  # slowdown factors: speeds 1, 1, 1/3
# name -> (label, speeds' slowdown factors, diloco YAML lines ("{budget}", "{async}" filled in), kills?)
MODES = {
    "sync-111": ("sync τ=50", (1.0, 1.0, 1.0), "", False),
    "sync-113": ("sync τ=50", SLOW, "", False),
    "budget-113": ("time-budgeted", SLOW, "{budget}", False),
    "async-113": ("async", SLOW, "{async}", False),
    "async-113-kills": ("async, kill every ~15 s", SLOW, "{async}", True),
    "budget-113-kills": ("time-budgeted, kill every ~15 s", SLOW, "{budget}", True),
}


def speeds_text(factors):
    return ",".join("1" if f == 1 else f"1/{f:g}" for f in factors)


def job_yaml(base_text, extra, eval_every):
    """The default job with 3 workers, no checkpoints until its end, val every `eval_every`
    rounds, plus `extra` diloco lines."""
    text = base_text.replace("path: ../../data/tiny_shakespeare.txt",
                             f"path: {os.path.join(ROOT, 'data/tiny_shakespeare.txt')}")
    text = re.sub(r"(?m)^  workers: .*$", "  workers: 3", text)
    text = re.sub(r"(?m)^  checkpoint_every: .*$", "  checkpoint_every: 1000000", text)
    text = re.sub(r"(?m)^  eval_every: .*$", f"  eval_every: {eval_every}", text)
    for key in re.findall(r"(?m)^  (\w+):", extra):
        # The job's own key (with its more-indented lines: a section) gives way to the row's.
        text = re.sub(rf"(?m)^  {key}:.*\n(?:    .*\n)*", "", text)
    return re.sub(r"(?m)^diloco:.*\n", lambda m: m.group(0) + extra, text, count=1)


def busy_seconds(log_text):
    """Σ steps x ms/step over a worker's round lines."""
    total = 0.0
    for m in re.finditer(r"round \d+ done: (\d+) steps, loss .*? ([\d.]+) ms/step", log_text):
        total += int(m.group(1)) * float(m.group(2)) / 1000.0
    return total


def mean_ms_per_step(log_text):
    v = [float(m) for m in re.findall(r"round \d+ done: \d+ steps, loss .*? ([\d.]+) ms/step", log_text)]
    return sum(v) / len(v) if v else None


def run_row(args, name, base_text, budget_s):
    label, factors, extra, kills = MODES[name]
    extra = extra.format(
        budget=f"  time_budget: {{seconds: {budget_s:.3f}, min_steps: {args.min_steps}, max_steps: {args.max_steps}}}\n",
        **{"async": args.async_yaml.replace("\\n", "\n")})
    state = tempfile.mkdtemp(prefix="pcp-uneven-")
    args.worker_args = []
    cluster = Cluster(args, state)
    job_file = os.path.join(state, "job.yaml")
    with open(job_file, "w") as f:
        f.write(job_yaml(base_text, extra, args.eval_every))
    rng = random.Random(args.seed)
    kill_log = []
    load0 = os.getloadavg()[0]
    try:
        cluster.start_shepherd()
        ids = [f"node-{i + 1}" for i in range(3)]
        for sid, factor in zip(ids, factors):
            # (start_supervisor reads args.worker_args as it starts each supervisor.)
            args.worker_args = [f"--fault_slow_factor={factor:g}"] if factor != 1 else []
            cluster.start_supervisor(sid)
        args.worker_args = []
        deadline = time.time() + 120
        while time.time() < deadline:
            w = cluster.workers() or {}
            if all(w.get(i, {}).get("worker_connected") for i in ids):
                break
            time.sleep(0.5)
        r = cluster.ctl("submit", job_file, "--quiet", check=False)
        if r.returncode != 0:
            return {"name": name, "label": label, "speeds": speeds_text(factors), "error": r.stderr.strip()}
        job = r.stdout.strip()
        print(f"== {name}: {job} (state {state}, load {load0:.1f})", flush=True)
        next_kill = time.time() + rng.uniform(0.7 * args.kill_every, 1.3 * args.kill_every)

        def maybe_kill():
            nonlocal next_kill
            if not kills or time.time() < next_kill:
                return
            w = cluster.workers() or {}
            live = [i for i in ids if pid_of(w.get(i, {})) and w[i].get("worker_connected")]
            if live:
                sid = rng.choice(live)
                try:
                    os.kill(pid_of(w[sid]), signal.SIGKILL)
                    kill_log.append((round(time.time(), 1), sid))
                except ProcessLookupError:
                    pass
            next_kill = time.time() + rng.uniform(0.7 * args.kill_every, 1.3 * args.kill_every)

        status = cluster.wait_job(job, args.max_minutes * 60, poll_s=1.0, on_poll=maybe_kill)
        history = cluster.history(job)
    finally:
        cluster.stop()
    row = {"name": name, "label": label, "speeds": speeds_text(factors), "state": state, "kills": len(kill_log),
           "load_start": load0, "load_end": os.getloadavg()[0]}
    if status.get("state") != "JOB_STATE_COMPLETED" or not history:
        row["error"] = f"job ended as {status.get('state')}: {status.get('reason')}; logs in {state}"
        return row
    start = min(int(h["start_unix_ms"]) for h in history) / 1000.0
    end_t = max(int(h["end_unix_ms"]) for h in history) / 1000.0
    wall = end_t - start
    # (seconds from the first round's start to the end of the round evaluated, val loss)
    curve = [(int(h["end_unix_ms"]) / 1000.0 - start, float(h["val_loss"]))
             for h in sorted(history, key=lambda h: int(h["round"])) if h.get("val_loss") is not None]
    idle, ms = [], {}
    for sid in ("node-1", "node-2", "node-3"):
        with open(os.path.join(state, "logs", f"{sid}.log"), errors="replace") as f:
            text = f.read()
        idle.append(max(0.0, 1.0 - busy_seconds(text) / wall))
        ms[sid] = mean_ms_per_step(text)
    tokens = sum(int(h.get("tokens", 0)) for h in history)
    row.update({"rounds": len(history), "wall_s": wall, "to_target_s": time_to(curve, args.target), "val_curve": curve,
                "val_loss": status.get("progress", {}).get("val_loss"), "idle": sum(idle) / len(idle),
                "tokens": tokens, "goodput": tokens / wall, "ms_per_step": ms})
    return row


def time_to(curve, target):
    """Seconds until the first val estimate <= target, or None."""
    return next((t for t, v in curve if v <= target), None)


def fmt_row(r, target, reference):
    """`reference`: the homogeneous sync row (sync-111) when it ran, for the columns that
    compare with it: time to its final val, and that time over its wall time."""
    if "error" in r:
        return f"| {r['label']} | {r['speeds']} | – | – | – | – | – | – | – | – | {r['error'][:100]} |"
    t = f"{r['to_target_s']:.0f} s" if r["to_target_s"] is not None else "not reached"
    ref = "–"
    if reference and "error" not in reference:
        to_ref = time_to(r["val_curve"], reference["val_loss"])
        ref = (f"{to_ref:.0f} s = {to_ref / reference['wall_s']:.2f}×" if to_ref is not None
               else f"not reached ({r['wall_s'] / reference['wall_s']:.2f}× wall)")
    return (f"| {r['label']} | {r['speeds']} | {r['wall_s']:.0f} s | {t} | {ref} | {r['val_loss']:.4f} | "
            f"{100 * r['idle']:.1f} | {r['goodput']:,.0f} | {r['rounds']} | {r['tokens']:,}"
            + (f", {r['kills']} kills" if r.get("kills") else "") + " |")


def reference(rows):
    return next((r for r in rows if r["name"] == "sync-111"), None)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modes", default="sync-111,sync-113,budget-113,async-113,async-113-kills",
                    help="comma-separated rows, from: " + ", ".join(MODES))
    ap.add_argument("--job", default=os.path.join(ROOT, "config/jobs/shakespeare_char.yaml"))
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--target", type=float, default=1.90, help="the val loss 'time to' measures")
    ap.add_argument("--eval-every", type=int, default=2, help="rounds between val estimates (every row)")
    ap.add_argument("--budget-seconds", type=float, default=0, help="0: tau x the first sync row's ms/step")
    ap.add_argument("--min-steps", type=int, default=5)
    ap.add_argument("--max-steps", type=int, default=200)
    ap.add_argument("--async-yaml", default="  mode: async\\n", help="diloco lines of the async rows")
    ap.add_argument("--kill-every", type=float, default=15.0, help="seconds (uniform ±30%%) between kills")
    ap.add_argument("--seed", type=int, default=32)
    ap.add_argument("--max-minutes", type=float, default=25.0, help="per row")
    ap.add_argument("--json", help="also write the rows here")
    ap.add_argument("--out", help="also write the markdown table here")
    args = ap.parse_args()
    args.workers = 3  # Cluster: CPU threads per worker
    with open(args.job) as f:
        base_text = f.read()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for m in modes:
        if m not in MODES:
            sys.exit(f"uneven_table: unknown mode '{m}' (modes: {', '.join(MODES)})")
    tau = int(re.search(r"(?m)^  inner_steps: (\d+)", base_text).group(1))
    budget_s = args.budget_seconds
    rows = []
    for m in modes:
        if MODES[m][2] == "{budget}" and budget_s <= 0:
            fast = [v for r in rows if r["name"].startswith("sync") and "ms_per_step" in r
                    for sid, v in r["ms_per_step"].items() if v and (sid != "node-3" or r["name"] == "sync-111")]
            budget_s = tau * (sum(fast) / len(fast)) / 1000.0 if fast else 5.0
            print(f"   time budget: {budget_s:.2f} s per round", flush=True)
        row = run_row(args, m, base_text, budget_s)
        rows.append(row)
        print("   " + fmt_row(row, args.target, reference(rows)), flush=True)
        if args.json:  # after every row, so that a run cut short keeps the rows it finished
            with open(args.json, "w") as f:
                json.dump({"budget_s": budget_s, "rows": rows, "complete": False}, f, indent=1)
    lines = [f"3 workers, the default job's model and data, {tau} = τ, equal total tokens per row; "
             f"val every {args.eval_every} rounds; time budget {budget_s:.2f} s (min {args.min_steps}, "
             f"max {args.max_steps} steps)",
             "",
             f"| mode | speeds | wall time | time to val {args.target:.2f} "
             "| time to sync 1,1,1's final val (÷ its wall time) | final val | worker idle % "
             "| goodput tok/s | rounds | tokens |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    lines += [fmt_row(r, args.target, reference(rows)) for r in rows]
    loads = [f"{r['name']}: {r['load_start']:.1f} → {r['load_end']:.1f}" for r in rows if "load_start" in r]
    lines += ["", "1-minute load average at each row's start → end: " + "; ".join(loads)]
    print("\n" + "\n".join(lines))
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"budget_s": budget_s, "rows": rows, "complete": True}, f, indent=1)


if __name__ == "__main__":
    main()
