#!/usr/bin/env bash
# Replays issue 31's attacks against a real pcp-shepherd on loopback, bounded in count and
# time, and prints one row per attack: what the shepherd did and whether it serves after.
# Rows so far:
#   fd-128, fd-1024   descriptor exhaustion: the shepherd's open-file limit set to 128 / 1024
#                     (prlimit on the running process, as `ulimit -n`), idle TCP connections
#                     opened until 100 past it (200 / 1,100), held 1 s, closed. gRPC 1.51
#                     stops accepting for good after the failed accept4; the listener
#                     watchdog must make the shepherd exit 1 (docs/operations.md#listener-watchdog).
#
# Usage: scripts/attack.sh [--no-watchdog] [ROW...]     (default: every row)
#   --no-watchdog   run the shepherd with listener_probe_interval_ms: 0 (shows the bug)
# Needs the build (BUILD_DIR, default build/: pcp-shepherd, pcpctl), python3 and prlimit.
# Exit status: 0 when no row left a shepherd that runs but serves nothing, else 1.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
SHEPHERD=$BUILD_DIR/services/shepherd/pcp-shepherd
PCPCTL=$BUILD_DIR/tools/pcpctl/pcpctl
PROBE_MS=500
ROWS=()
for arg in "$@"; do
  case $arg in
    --no-watchdog) PROBE_MS=0 ;;
    fd-128|fd-1024) ROWS+=("$arg") ;;
    *) echo "attack.sh: unknown argument '$arg' (rows: fd-128 fd-1024)" >&2; exit 2 ;;
  esac
done
[[ ${#ROWS[@]} -gt 0 ]] || ROWS=(fd-128 fd-1024)
for bin in "$SHEPHERD" "$PCPCTL"; do
  [[ -x "$bin" ]] || { echo "attack.sh: missing $bin: build first" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/pcp-attack-XXXXXX)
PID=""
cleanup() {
  if [[ -n "$PID" ]] && kill -0 "$PID" 2>/dev/null; then kill -KILL "$PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# Opens N idle connections to 127.0.0.1:PORT (2 s timeout each, stops at the first that
# fails), holds them 1 s, closes them; prints how many were open.
flood() {
  /usr/bin/python3 - "$1" "$2" <<'EOF'
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
socks = []
for _ in range(n):
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect(("127.0.0.1", port))
    except OSError:
        s.close()
        break
    socks.append(s)
time.sleep(1)
for s in socks:
    s.close()
print(len(socks))
EOF
}

status=0
printf '%-8s %-6s %-11s %-13s %-26s %s\n' row limit connections failed_accept shepherd serves_after
for row in "${ROWS[@]}"; do
  limit=${row#fd-}
  dir=$WORK/$row
  mkdir -p "$dir"
  "$SHEPHERD" --listen=127.0.0.1:0 --state_dir="$dir/state" --metrics_listen= --address_file="$dir/address" \
    --listener_probe_interval_ms=$PROBE_MS --listener_probe_failures=3 >"$dir/stdout" 2>"$dir/log" &
  PID=$!
  for _ in $(seq 100); do [[ -s "$dir/address" ]] && break; sleep 0.1; done
  [[ -s "$dir/address" ]] || { echo "attack.sh: $row: the shepherd did not start:" >&2; tail "$dir/log" >&2; exit 1; }
  address=$(cat "$dir/address")
  prlimit --pid "$PID" --nofile="$limit:$limit"
  start=$(date +%s%N)
  opened=$(flood "${address##*:}" $((limit + 100)))
  failed=no
  grep -q 'Failed accept4' "$dir/log" && failed=yes
  outcome=""
  for _ in $(seq 100); do  # up to 10 s for the watchdog
    if ! kill -0 "$PID" 2>/dev/null; then break; fi
    sleep 0.1
  done
  if kill -0 "$PID" 2>/dev/null; then
    outcome="still running"
  else
    code=0
    wait "$PID" || code=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    outcome=$(printf 'exited %d after %d.%d s' "$code" $((ms / 1000)) $((ms % 1000 / 100)))
    PID=""
    # What Restart= does: the same port and state, a fresh process.
    "$SHEPHERD" --listen="$address" --state_dir="$dir/state" --metrics_listen= \
      --listener_probe_interval_ms=$PROBE_MS >>"$dir/stdout" 2>>"$dir/log.restart" &
    PID=$!
    sleep 1
    outcome="$outcome, restarted"
  fi
  if "$PCPCTL" --shepherd="$address" --timeout=3 cluster >/dev/null 2>&1; then
    serves=yes
  else
    serves=NO
    status=1
  fi
  printf '%-8s %-6s %-11s %-13s %-26s %s\n' "$row" "$limit" "$opened" "$failed" "$outcome" "$serves"
  kill -TERM "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || true
  PID=""
done
exit $status
