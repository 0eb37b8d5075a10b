#!/usr/bin/python3
"""Saves a PNG of a PCP job's loss curve, from the job's own history or from Prometheus.

From the history (every round the shepherd recorded; no Prometheus needed): the JSON lines
of `pcpctl history --json JOB` (a file, or - for stdin), or the CSV of `pcpctl history --csv`
or of `pcp-local train` (out_dir/history.csv). Two panels: loss against rounds (steps for
pcp-local) and against tokens processed:

  pcpctl history --json job-0001 | scripts/plot-loss.py --history - --out loss.png
  scripts/plot-loss.py --history out/history.csv --out local-loss.png

From Prometheus (live, cluster-wide; any job its shepherd scrape saw, at scrape resolution:
rounds shorter than the scrape interval are missed), e.g. with
scripts/run-local-cluster.sh --prometheus:

  scripts/plot-loss.py --prometheus 127.0.0.1:9090 --job-id job-0001 --out loss.png
  scripts/plot-loss.py --prometheus 127.0.0.1:9090 --since 2h          # every job seen

It queries /api/v1/query_range for pcp_shepherd_train_loss and pcp_shepherd_val_loss (and
pcp_shepherd_rounds_completed_total, to put rounds on the x axis). Both draw with
matplotlib (Debian's python3-matplotlib; run with /usr/bin/python3); `pcpctl plot` draws
the same from the history without Python. Exit status: 0 = PNG written, 1 = no loss data,
2 = bad arguments, an unreadable history, or Prometheus unreachable.
"""
import csv
import io
import argparse
import json
import math
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def parse_duration(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd]?)", text)
    if not m:
        raise argparse.ArgumentTypeError(f"bad duration '{text}' (e.g. 90s, 30m, 2h)")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


def query_range(base, expr, start, end, step):
    params = urllib.parse.urlencode({"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"})
    url = f"{base}/api/v1/query_range?{params}"
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            doc = json.load(response)
    except urllib.error.HTTPError as e:  # 400: a bad expression; the body says why
        doc = json.load(e)
    if doc.get("status") != "success":
        raise RuntimeError(f"{expr}: {doc.get('error', doc)}")
    return doc["data"]["result"]


def by_job(result):
    """{job_id: [(t, value), ...]} with NaN samples dropped."""
    out = {}
    for series in result:
        job = series["metric"].get("job_id", "?")
        points = [(float(t), float(v)) for t, v in series["values"] if not math.isnan(float(v))]
        out.setdefault(job, []).extend(points)
    for points in out.values():
        points.sort()
    return out


def completed_rounds(points):
    """Counter samples [(t, c)] -> {t: rounds completed}, continuing across counter resets
    (a restarted shepherd counts from 0 again)."""
    out, offset, prev = {}, 0.0, None
    for t, c in points:
        if prev is not None and c < prev:
            offset += prev
        prev = c
        out[t] = c + offset
    return out


def per_round(points, completed):
    """The loss value in force after each completed round: [(round, value), ...], or None
    without round data. The shepherd sets the loss and counts the round at the same moment."""
    if not completed:
        return None
    round_at = completed_rounds(completed)
    last = {}
    for t, v in points:
        r = round_at.get(t)
        if r is not None and r > 0:
            last[int(r)] = v
    return sorted(last.items()) or None


def read_history(path):
    """[{round, tokens_total, train_loss, val_loss}] from JSON lines or CSV (pcpctl history)."""
    text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    rows = []
    if text.lstrip().startswith("{"):
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError as e:
                    raise ValueError(f"{path}:{n}: not a JSON line: {e}") from e
    else:
        rows = list(csv.DictReader(io.StringIO(text)))

    def num(row, key):
        v = row.get(key)
        return float(v) if v not in (None, "") else None

    return [{"round": num(r, "round") or 0.0, "tokens": num(r, "tokens_total") or 0.0,
             "train": num(r, "train_loss"), "val": num(r, "val_loss")} for r in rows]


def plot_history(args):
    try:
        records = read_history(args.history)
    except (OSError, ValueError) as e:
        print(f"plot-loss: {e}", file=sys.stderr)
        return 2
    if not any(r["train"] is not None or r["val"] is not None for r in records):
        print(f"plot-loss: no loss in {args.history}", file=sys.stderr)
        return 1
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(1, 2, figsize=(13, 5), dpi=110)
    for ax, key, label in ((axes[0], "round", "round"), (axes[1], "tokens", "tokens processed")):
        for name, style in (("train", "-"), ("val", "--")):
            pts = [(r[key], r[name]) for r in records if r[name] is not None]
            if pts:
                xs, ys = zip(*pts)
                ax.plot(xs, ys, style, marker="o" if name == "val" else None, markersize=3, label=f"{name} loss")
        ax.set_xlabel(label)
        if key == "round":
            ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set_ylabel("loss (cross-entropy, nats/token)")
        ax.grid(True, alpha=0.3)
        ax.legend()
    train = [r["train"] for r in records if r["train"] is not None]
    if train:
        print(f"train: {len(train)} points, first {train[0]:.4f}, last {train[-1]:.4f}, min {min(train):.4f}")
    fig.suptitle(args.title or f"PCP loss (history: {args.history})")
    fig.tight_layout()
    fig.savefig(args.out)
    print(f"wrote {args.out}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = ap.add_mutually_exclusive_group(required=True)
    source.add_argument("--history", help="pcpctl history --json/--csv output, or pcp-local's history.csv (- = stdin)")
    source.add_argument("--prometheus", help="HOST:PORT or URL of Prometheus")
    ap.add_argument("--job-id", default="", help="one job (default: every job_id in the range)")
    ap.add_argument("--since", type=parse_duration, default=parse_duration("6h"),
                    help="how far back from --end (default 6h)")
    ap.add_argument("--start", type=float, help="unix time; overrides --since")
    ap.add_argument("--end", type=float, help="unix time (default: now)")
    ap.add_argument("--out", default="loss.png", help="PNG to write (default loss.png)")
    ap.add_argument("--title", default="", help="plot title")
    args = ap.parse_args()
    if args.history:
        return plot_history(args)

    base = args.prometheus if "://" in args.prometheus else f"http://{args.prometheus}"
    end = args.end if args.end is not None else time.time()
    start = args.start if args.start is not None else end - args.since
    if end <= start:
        ap.error("--end must be after --start")
    # At most ~5000 points per series (Prometheus allows 11000), never finer than 0.1 s.
    step = max(0.1, round((end - start) / 5000, 1))
    selector = f'{{job_id="{args.job_id}"}}' if args.job_id else ""
    # The grid is start, start + step, ...: one more step so the last samples are on it.
    end += step

    try:
        train = by_job(query_range(base, f"pcp_shepherd_train_loss{selector}", start, end, step))
        val = by_job(query_range(base, f"pcp_shepherd_val_loss{selector}", start, end, step))
        rounds = by_job(query_range(base, f"pcp_shepherd_rounds_completed_total{selector}", start, end, step))
    except (OSError, RuntimeError, ValueError) as e:
        print(f"plot-loss: cannot query {base}: {e}", file=sys.stderr)
        return 2
    if not any(train.values()) and not any(val.values()):
        print(f"plot-loss: no pcp_shepherd_train_loss/val_loss{selector} samples between "
              f"{time.ctime(start)} and {time.ctime(end)} at {base}", file=sys.stderr)
        return 1

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, ax = plt.subplots(figsize=(9, 5), dpi=110)
    x_is_round = True
    for job in sorted(set(train) | set(val)):
        for name, data, style in (("train", train.get(job, []), "-"), ("val", val.get(job, []), "--")):
            if not data:
                continue
            pts = per_round(data, rounds.get(job))
            if pts is None:
                x_is_round = False
                t0 = data[0][0]
                pts = [((t - t0) / 60, v) for t, v in data]
            xs, ys = zip(*pts)
            ax.plot(xs, ys, style, marker="o" if len(xs) <= 60 else None, markersize=3,
                    label=f"{name} {job}")
            print(f"{job} {name}: {len(xs)} points, first {ys[0]:.4f}, last {ys[-1]:.4f}, min {min(ys):.4f}")
    ax.set_xlabel("rounds completed" if x_is_round else "minutes since first sample")
    if x_is_round:
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.set_ylabel("loss (cross-entropy, nats/token)")
    ax.set_title(args.title or f"PCP loss{' — ' + args.job_id if args.job_id else ''} (from Prometheus {base})")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
