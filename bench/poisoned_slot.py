#!/usr/bin/env python3
"""Data follows the work (issue 32 item 3; docs/diloco.md, "Data follows the work"): trains the
default job (config/jobs/shakespeare_char.yaml, its model, data and seeds) with 3 workers on 3
slots, once clean and once with node-3 started with --fault_delta=scale:1000 (every Δ x 1000),
which screening refuses and quarantines after diloco.screening.quarantine_after rounds; then
prints one row per run:

  run | orphan_slots | final val | wall time | Δs used | slots (rounds done, cursor)

With orphan_slots: takeover the quarantined worker's slot is trained by the two honest workers
(its shard, from its cursor), so the poisoned run uses about the clean run's Δs and data; with
idle (--rows ...,poisoned-idle) that third of the data is never trained.

  flock /tmp/pcp-bench.lock bench/poisoned_slot.py                  # clean, poisoned: ~15 min
  bench/poisoned_slot.py --rows poisoned,poisoned-idle --json out.json

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

# name -> (node-3's worker flags, orphan_slots)
ROWS = {
    "clean": ([], "takeover"),
    "poisoned": (["--fault_delta=scale:1000"], "takeover"),
    "poisoned-idle": (["--fault_delta=scale:1000"], "idle"),
}


def job_yaml(base_text, orphan_slots):
    text = base_text.replace("path: ../../data/tiny_shakespeare.txt",
                             f"path: {os.path.join(ROOT, 'data/tiny_shakespeare.txt')}")
    text = re.sub(r"(?m)^  workers: .*$", "  workers: 3", text)
    text = re.sub(r"(?m)^  orphan_slots: .*$", f"  orphan_slots: {orphan_slots}", text)
    return text


def slots_of(state_dir):
    """The final checkpoint's slots: [(supervisor id, rounds done, cursor)]."""
    for root, _, files in os.walk(os.path.join(state_dir, "shepherd")):
        if "LATEST" in files:
            with open(os.path.join(root, "LATEST")) as f:
                latest = f.read().strip()
            with open(os.path.join(root, latest, "state.json")) as f:
                state = json.load(f)
            return [(s["supervisor_id"], int(s["rounds_done"]), int(s["sampler_cursor"])) for s in state["slots"]]
    return []


def run_row(args, name, base_text):
    node3_flags, orphan_slots = ROWS[name]
    state = tempfile.mkdtemp(prefix="pcp-poisoned-")
    cluster = Cluster(args, state)
    job_file = os.path.join(state, "job.yaml")
    with open(job_file, "w") as f:
        f.write(job_yaml(base_text, orphan_slots))
    load0 = os.getloadavg()[0]
    try:
        cluster.start_shepherd()
        ids = ["node-1", "node-2", "node-3"]
        for sid in ids:
            args.worker_args = node3_flags if sid == "node-3" else []
            cluster.start_supervisor(sid)
        args.worker_args = []
        deadline = time.time() + 120
        while time.time() < deadline:
            w = cluster.workers() or {}
            if all(w.get(i, {}).get("worker_connected") for i in ids):
                break
            time.sleep(0.5)
        job = cluster.ctl("submit", job_file, "--quiet").stdout.strip()
        print(f"== {name}: {job} (state {state}, load {load0:.1f})", flush=True)
        status = cluster.wait_job(job, args.max_minutes * 60)
        history = cluster.history(job)
    finally:
        cluster.stop()
    row = {"name": name, "orphan_slots": orphan_slots, "state": state, "load_start": load0,
           "load_end": os.getloadavg()[0]}
    if status.get("state") != "JOB_STATE_COMPLETED" or not history:
        row["error"] = f"job ended as {status.get('state')}: {status.get('reason')}; logs in {state}"
        return row
    start = min(int(h["start_unix_ms"]) for h in history) / 1000.0
    end_t = max(int(h["end_unix_ms"]) for h in history) / 1000.0
    slots = slots_of(state)
    row.update({"val_loss": status.get("progress", {}).get("val_loss"), "wall_s": end_t - start,
                "used": sum(s[1] for s in slots), "slots": slots,
                "refused": status.get("progress", {}).get("deltas_refused", 0)})
    return row


def fmt_row(r):
    if "error" in r:
        return f"| {r['name']} | {r['orphan_slots']} | – | – | – | {r['error'][:120]} |"
    slots = ", ".join(f"{sid}: ({done}, {cursor})" for sid, done, cursor in r["slots"])
    return (f"| {r['name']} | {r['orphan_slots']} | {r['val_loss']:.4f} | {r['wall_s']:.0f} s | {r['used']} "
            f"({r['refused']} refused) | {slots} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default="clean,poisoned", help="comma-separated, from: " + ", ".join(ROWS))
    ap.add_argument("--job", default=os.path.join(ROOT, "config/jobs/shakespeare_char.yaml"))
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--max-minutes", type=float, default=30.0, help="per row")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args()
    args.workers = 3  # Cluster: CPU threads per worker
    with open(args.job) as f:
        base_text = f.read()
    names = [n.strip() for n in args.rows.split(",") if n.strip()]
    for n in names:
        if n not in ROWS:
            sys.exit(f"poisoned_slot: unknown row '{n}' (rows: {', '.join(ROWS)})")
    rows = []
    for n in names:
        rows.append(run_row(args, n, base_text))
        print("   " + fmt_row(rows[-1]), flush=True)
    lines = ["| run | orphan_slots | final val | wall time | Δs used | slots (rounds done, cursor) |",
             "|---|---|---|---|---|---|"] + [fmt_row(r) for r in rows]
    lines += ["", "1-minute load average at each row's start → end: " +
              "; ".join(f"{r['name']}: {r['load_start']:.1f} → {r['load_end']:.1f}" for r in rows)]
    print("\n" + "\n".join(lines))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
