#!/usr/bin/env python3
"""Chaos runner: trains a job on a local PCP cluster while killing its processes, and records
what the cluster did about it.

During one whole job it
  - SIGKILLs a random worker every --worker-kill-every seconds (default 8-15),
  - SIGKILLs the shepherd --shepherd-kills times (default 2) and starts it again after
    --restart-delay seconds, with the same command line and state dir, as systemd's
    Restart=on-failure does,
  - SIGKILLs a supervisor --supervisor-kills times (default 1) and starts it again,
  - SIGSTOPs a worker for --stop-seconds (default: heartbeat timeout + 3 s), --stops times.
It records every fault, how long the shepherd took to notice a killed worker (detection) and
how long until that slot had a live worker again (rejoin), the rounds lost to shepherd
restarts, who took part in each round (from the job's history), that no process outlived
the run and that the final checkpoint loads. With --baseline it first trains the same job
without faults and compares the final validation loss.

  scripts/chaos.py                                   # default job, 2 workers
  scripts/chaos.py --job config/jobs/tiny.yaml --worker-kill-every 2:4 --baseline
  scripts/chaos.py --json chaos.json                 # also write the record as JSON

Everything runs on loopback (127.0.0.1) and stops by itself: at the end of the job, or after
--max-minutes. Processes are started and stopped by PID. Exit status 0 when the job completed
and no process was left behind.
"""

import argparse
import json
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A shepherd and N supervisors (each with its worker) on loopback, by PID."""

    def __init__(self, args, state_dir):
        self.args = args
        self.state = state_dir
        self.logs = os.path.join(state_dir, "logs")
        os.makedirs(self.logs, exist_ok=True)
        b = os.path.abspath(args.build_dir)
        self.bins = {
            "shepherd": os.path.join(b, "services/shepherd/pcp-shepherd"),
            "supervisor": os.path.join(b, "services/supervisor/pcp-supervisor"),
            "worker": os.path.join(b, "services/worker/pcp-worker"),
            "pcpctl": os.path.join(b, "tools/pcpctl/pcpctl"),
            "pcp-local": os.path.join(b, "tools/pcp-local/pcp-local"),
        }
        for name, path in self.bins.items():
            if not os.access(path, os.X_OK):
                sys.exit(f"chaos: missing {path}: build first (scripts/setup.sh)")
        # A fixed port, so that a restarted shepherd is where the workers reconnect to.
        self.address = f"127.0.0.1:{free_port()}"
        self.shepherd = None
        self.supervisors = {}  # id -> Popen
        self.threads = max(1, (os.cpu_count() or 2) // args.workers)

    def _spawn(self, name, argv):
        log = open(os.path.join(self.logs, f"{name}.log"), "ab")
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def start_shepherd(self):
        self.shepherd = self._spawn("shepherd", [
            self.bins["shepherd"], f"--listen={self.address}",
            f"--state_dir={os.path.join(self.state, 'shepherd')}", "--metrics_listen=",
            *getattr(self.args, "shepherd_args", [])])
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.shepherd.poll() is not None:
                sys.exit(f"chaos: pcp-shepherd exited; see {self.logs}/shepherd.log")
            if self.ctl("cluster", check=False).returncode == 0:
                return
            time.sleep(0.2)
        sys.exit("chaos: pcp-shepherd did not serve within 60 s")

    def start_supervisor(self, sid):
        self.supervisors[sid] = self._spawn(sid, [
            self.bins["supervisor"], f"--shepherd={self.address}", f"--supervisor_id={sid}",
            f"--state_dir={os.path.join(self.state, sid)}", f"--worker_binary={self.bins['worker']}",
            "--metrics_listen=",
            "--worker_args=" + ",".join([f"--backend=cpu", f"--threads={self.threads}", *getattr(self.args, "worker_args", [])])])

    def ctl(self, *argv, check=True, timeout=10):
        r = subprocess.run([self.bins["pcpctl"], f"--shepherd={self.address}", "--timeout=5", *argv],
                           capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"pcpctl {' '.join(argv)}: {r.stderr.strip()}")
        return r

    def workers(self):
        """{supervisor_id: WorkerInfo as JSON}, or None while the shepherd does not answer."""
        try:
            r = self.ctl("workers", "--json", check=False, timeout=5)
        except subprocess.TimeoutExpired:
            return None
        if r.returncode != 0:
            return None
        return {w["supervisor_id"]: w for w in json.loads(r.stdout or "{}").get("workers", [])}

    def history(self, job):
        r = self.ctl("history", job, "--json", check=False, timeout=30)
        if r.returncode != 0:
            return []
        return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]

    def wait_job(self, job, seconds, poll_s=2.0, on_poll=None):
        """The job's last `pcpctl status --json` once it has ended (completed, failed or cancelled),
        or the last one seen when `seconds` ran out ({} if none); `on_poll()` runs after each poll."""
        end = time.time() + seconds
        status = {}
        while time.time() < end:
            r = self.ctl("status", job, "--json", check=False)
            if r.returncode == 0:
                status = json.loads(r.stdout)
                if status.get("state") in ("JOB_STATE_COMPLETED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"):
                    break
            if on_poll is not None:
                on_poll()
            time.sleep(poll_s)
        return status

    def resumes(self):
        """Rounds the shepherd resumed from, in order, from its log ("resuming from the
        checkpoint of round N")."""
        try:
            with open(os.path.join(self.logs, "shepherd.log"), errors="replace") as f:
                text = f.read()
        except OSError:
            return []
        return [int(m) for m in re.findall(r"resuming from the checkpoint of round (\d+)", text)]

    def resumed_round(self, seen, timeout=60):
        """The round of the first resume after `seen` earlier ones; -1 if none within timeout."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            r = self.resumes()
            if len(r) > seen:
                return r[seen]
            time.sleep(0.1)
        return -1

    def stop(self):
        for p in list(self.supervisors.values()) + [self.shepherd]:
            if p is not None and p.poll() is None:
                p.terminate()
        for p in list(self.supervisors.values()) + [self.shepherd]:
            if p is None:
                continue
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def leftovers(self):
        """PIDs of pcp processes that still name this run's state dir or shepherd address."""
        r = subprocess.run(["pgrep", "-f", self.address], capture_output=True, text=True)
        mine = {os.getpid()}
        return [int(p) for p in r.stdout.split() if int(p) not in mine]


def pid_of(info):
    return int(info.get("process", {}).get("pid", 0) or 0)


def run_job(args, chaos):
    state = args.state_dir or tempfile.mkdtemp(prefix="pcp-chaos-")
    state = os.path.join(state, "chaos" if chaos else "baseline")
    c = Cluster(args, state)
    rng = random.Random(args.seed)
    record = {"faults": [], "worker_kills": [], "shepherd_kills": [], "state_dir": state}
    lock = threading.Lock()
    done = threading.Event()
    print(f"== {'chaos' if chaos else 'baseline'} run: shepherd {c.address}, state {state}", flush=True)
    try:
        c.start_shepherd()
        ids = [f"chaos-{i + 1}" for i in range(args.workers)]
        for sid in ids:
            c.start_supervisor(sid)
        deadline = time.time() + 120
        while time.time() < deadline:
            w = c.workers() or {}
            if sum(1 for i in ids if w.get(i, {}).get("worker_connected")) == len(ids):
                break
            time.sleep(0.5)
        else:
            sys.exit("chaos: workers did not all connect within 120 s")
        job = c.ctl("submit", os.path.abspath(args.job), "--quiet").stdout.strip()
        print(f"job {job} submitted; {len(ids)} workers", flush=True)
        record["t0"] = time.time()

        # Observer: polls the worker table; resolves detection and rejoin of each worker kill.
        def observe():
            while not done.is_set():
                w = c.workers()
                now = time.time()
                if w is not None:
                    with lock:
                        for k in record["worker_kills"]:
                            info = w.get(k["supervisor"], {})
                            if k.get("detected_s") is None and not info.get("worker_connected"):
                                k["detected_s"] = round(now - k["t"], 3)
                            if k.get("rejoined_s") is None and info.get("worker_connected") \
                                    and pid_of(info) not in (0, k["pid"]):
                                k["rejoined_s"] = round(now - k["t"], 3)
                                k.setdefault("detected_s", k["rejoined_s"])
                time.sleep(0.1)

        observer = threading.Thread(target=observe, daemon=True)
        observer.start()

        rounds = None
        plan = []
        if chaos:
            # Spread the rarer faults over the job, by rounds completed.
            status = c.ctl("status", job, "--json").stdout
            rounds = int(json.loads(status)["progress"].get("total_rounds", 1))
            for i in range(args.shepherd_kills):
                plan.append(((i + 1) * rounds // (args.shepherd_kills + 1), "shepherd"))
            for i in range(args.supervisor_kills):
                plan.append(((2 * i + 1) * rounds // (2 * args.supervisor_kills + 2), "supervisor"))
            for i in range(args.stops):
                plan.append(((i + 1) * rounds // (args.stops + 2) + 1, "stop"))
            plan.sort()
        lo, hi = (float(x) for x in args.worker_kill_every.split(":"))
        next_kill = time.time() + rng.uniform(lo, hi)
        end = time.time() + args.max_minutes * 60
        final = None
        while time.time() < end:
            r = c.ctl("status", job, "--json", check=False)
            if r.returncode == 0:
                j = json.loads(r.stdout)
                if j.get("state") in ("JOB_STATE_COMPLETED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"):
                    final = j
                    break
                done_rounds = int(j.get("progress", {}).get("round", 0) or 0)
            else:
                done_rounds = None
            now = time.time()
            if chaos and done_rounds is not None and plan and done_rounds >= plan[0][0]:
                _, kind = plan.pop(0)
                fault(c, kind, rng, record, lock, ids, job, args)
            elif chaos and now >= next_kill and done_rounds is not None:
                w = c.workers() or {}
                live = [i for i in ids if pid_of(w.get(i, {})) and w[i].get("worker_connected")]
                if live:
                    sid = rng.choice(live)
                    pid = pid_of(w[sid])
                    finished = int(w[sid].get("rounds_completed", 0) or 0) > 0
                    try:
                        os.kill(pid, signal.SIGKILL)
                        with lock:
                            record["worker_kills"].append(
                                {"supervisor": sid, "pid": pid, "t": now, "had_finished_a_round": finished})
                        print(f"  t+{now - c_start(record):.0f}s SIGKILL worker {sid} (pid {pid})", flush=True)
                    except ProcessLookupError:
                        pass
                next_kill = now + rng.uniform(lo, hi)
            time.sleep(0.5)
        done.set()
        observer.join()
        history = c.history(job)
        record["job"] = job
        record["final"] = final
        record["history"] = history
        record["rounds"] = rounds
        ckpt = (final or {}).get("checkpoint_path", "")
        if ckpt:
            r = subprocess.run([c.bins["pcp-local"], "sample", ckpt, "--max_new_tokens=8"],
                               capture_output=True, text=True)
            record["checkpoint_loads"] = r.returncode == 0
    finally:
        done.set()
        c.stop()
    record["leftover_pids"] = c.leftovers()
    return record


def c_start(record):
    record.setdefault("t0", time.time())
    return record["t0"]


def fault(c, kind, rng, record, lock, ids, job, args):
    now = time.time()
    if kind == "shepherd":
        before = c.history(job)
        last = max((int(r.get("round", 0)) for r in before), default=0)
        resumes_before = len(c.resumes())
        c.shepherd.kill()
        c.shepherd.wait()
        print(f"  t+{now - c_start(record):.0f}s SIGKILL shepherd (last round recorded {last})", flush=True)
        time.sleep(args.restart_delay)
        c.start_shepherd()
        up = time.time()
        # Every worker back on its stream, and where the job resumed.
        while time.time() < up + 120:
            w = c.workers() or {}
            if sum(1 for i in ids if w.get(i, {}).get("worker_connected")) == len(ids):
                break
            time.sleep(0.2)
        back = time.time()
        entry = {"t": now, "last_round": last, "serving_after_s": round(up - now, 3),
                 "workers_back_after_s": round(back - now, 3)}
        entry["resumed_at_round"] = c.resumed_round(resumes_before)
        entry["rounds_lost"] = max(0, last - entry["resumed_at_round"]) if entry["resumed_at_round"] >= 0 else None
        record["shepherd_kills"].append(entry)
        print(f"    shepherd serving after {entry['serving_after_s']} s, workers back after "
              f"{entry['workers_back_after_s']} s, resumed at round {entry['resumed_at_round']}", flush=True)
    elif kind == "supervisor":
        sid = rng.choice(ids)
        c.supervisors[sid].kill()
        c.supervisors[sid].wait()
        print(f"  t+{now - c_start(record):.0f}s SIGKILL supervisor {sid}", flush=True)
        time.sleep(args.restart_delay)
        c.start_supervisor(sid)
        record["faults"].append({"kind": "supervisor_kill", "supervisor": sid, "t": now})
    elif kind == "stop":
        w = c.workers() or {}
        live = [i for i in ids if pid_of(w.get(i, {}))]
        if not live:
            return
        sid = rng.choice(live)
        pid = pid_of(w[sid])
        os.kill(pid, signal.SIGSTOP)
        print(f"  t+{now - c_start(record):.0f}s SIGSTOP worker {sid} for {args.stop_seconds} s", flush=True)
        detected = None
        while time.time() < now + args.stop_seconds:
            if detected is None and not (c.workers() or {}).get(sid, {}).get("worker_connected", True):
                detected = round(time.time() - now, 3)
            time.sleep(0.2)
        os.kill(pid, signal.SIGCONT)
        record["faults"].append({"kind": "worker_stop", "supervisor": sid, "t": now,
                                 "seconds": args.stop_seconds, "detected_s": detected})


def median_max(values):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return f"median {statistics.median(values):.2f} s, max {max(values):.2f} s (n={len(values)})"


def summary(rec, workers, baseline=None):
    hist = rec.get("history", [])
    kept = sum(len(r.get("participants", [])) for r in hist)
    possible = len(hist) * workers
    kills = rec["worker_kills"]
    finished = [k for k in kills if k["had_finished_a_round"]]
    val = (rec.get("final") or {}).get("progress", {}).get("val_loss")
    lines = [
        f"job {rec.get('job')}: {(rec.get('final') or {}).get('state', 'not finished')}",
        f"kills: {len(kills)} worker SIGKILL, {len(rec['shepherd_kills'])} shepherd SIGKILL, "
        f"{sum(1 for f in rec['faults'] if f['kind'] == 'supervisor_kill')} supervisor SIGKILL, "
        f"{sum(1 for f in rec['faults'] if f['kind'] == 'worker_stop')} worker SIGSTOP",
        f"worker kill detected: {median_max([k.get('detected_s') for k in kills])}",
        f"worker rejoined (slot live again): {median_max([k.get('rejoined_s') for k in kills])}",
        f"  of workers that had finished a round: {median_max([k.get('rejoined_s') for k in finished])}",
        f"SIGSTOP detected: {median_max([f.get('detected_s') for f in rec['faults'] if f['kind'] == 'worker_stop'])}",
        f"rounds lost to shepherd restarts: {sum(k['rounds_lost'] or 0 for k in rec['shepherd_kills'])} "
        f"({', '.join(str(k['rounds_lost']) for k in rec['shepherd_kills']) or '-'})",
        f"worker-rounds kept: {kept} of {possible} ({100.0 * kept / possible if possible else 0:.1f}%)",
        f"processes left behind: {len(rec['leftover_pids'])}",
        f"final checkpoint loads: {rec.get('checkpoint_loads', 'no checkpoint')}",
        f"final val loss: {val}",
    ]
    if baseline is not None:
        bval = (baseline.get("final") or {}).get("progress", {}).get("val_loss")
        lines.append(f"clean run's final val loss: {bval}")
        if val is not None and bval:
            lines.append(f"  chaos vs clean: {100.0 * (val - bval) / bval:+.2f}%")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--job", default=os.path.join(ROOT, "config/jobs/shakespeare_char.yaml"))
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    p.add_argument("--state-dir", default="", help="keep state and logs here (default: a new temp dir)")
    p.add_argument("--worker-kill-every", default="8:15", help="seconds between worker kills, MIN:MAX")
    p.add_argument("--shepherd-kills", type=int, default=2)
    p.add_argument("--supervisor-kills", type=int, default=1)
    p.add_argument("--stops", type=int, default=1)
    p.add_argument("--stop-seconds", type=float, default=6.0, help="> the shepherd's heartbeat timeout (3 s)")
    p.add_argument("--restart-delay", type=float, default=1.0, help="systemd's RestartSec")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-minutes", type=float, default=60)
    p.add_argument("--baseline", action="store_true", help="first run the job without faults")
    p.add_argument("--json", default="", help="write the whole record here")
    args = p.parse_args()
    baseline = run_job(args, chaos=False) if args.baseline else None
    rec = run_job(args, chaos=True)
    print("== chaos record")
    print(summary(rec, args.workers, baseline))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"chaos": rec, "baseline": baseline}, f, indent=1)
    ok = (rec.get("final") or {}).get("state") == "JOB_STATE_COMPLETED" and not rec["leftover_pids"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
