#!/usr/bin/env bash
# Replays issue 31's attacks against real pcp-shepherd processes on loopback, bounded in
# count and time, and prints one row per attack:
#
#   row | verdict | pid | rss MB before>after | series before>after | state KiB before>after
#       | s+g (submit+get after) | response
#
# pid: "same" when the shepherd under attack is the process it was before (fd rows: the
# watchdog makes it exit 1 and the row restarts it, as Restart=on-failure would); series:
# /metrics sample lines; state: bytes under its state_dir; submit+get: a normal SubmitJob
# then GetJob (pcpctl submit, pcpctl status) on the shepherd after the attack.
#
# Rows (default: all, in this order):
#   fd-128, fd-1024   descriptor exhaustion: the shepherd's open-file limit set to 128 / 1024
#                     (prlimit on the running process, as `ulimit -n`), idle TCP connections
#                     opened until 100 past it, held 1 s, closed. gRPC 1.51 stops accepting
#                     for good after the failed accept4; the listener watchdog must make the
#                     shepherd exit 1 (docs/operations.md#listener-watchdog)
#   methods           5,000 calls to made-up 2,000-character methods (raw HTTP/2, no
#                     credential): refused, and the metric series count stays the same
#   token-files       malformed token files (two lines, the token given as the path,
#                     non-printable, 1 MiB) to pcpctl and pcp-supervisor: no abort (134),
#                     the token never in their output
#   submit-cancel     CYCLES (300) submit/cancel cycles of 200 KiB job files: state bounded,
#                     then a restart of the shepherd, timed until it serves
#   hardlink          a job whose data file is a hard link, inside the data root, to a file
#                     outside it: refused
#   metadata-1        one call each with a 9 KiB, 64 KiB, 1 MiB and 16 MiB header (raw HTTP/2,
#                     the client ignores the server's limit), first on a new connection and
#                     after the SETTINGS exchange: the latter refused (max_metadata_bytes), the
#                     16 MiB ones always; RSS bounded (a repeat does not add to it)
#   metadata-8        8 connections at once, a 16 MiB header each, twice
#   metrics-endpoint  /metrics answers on its configured address (127.0.0.1) and on no other
#   reflection-v1     grpc.reflection.v1 answers (UNIMPLEMENTED: clients fall back to v1alpha,
#                     which answers) without a credential, never UNAUTHENTICATED
#   role              a viewer token's SubmitJob: PERMISSION_DENIED
#   bad-token         an unknown token: UNAUTHENTICATED, the token not repeated
#   yaml-bomb         a 'billion laughs' job file: refused, RSS bounded
#   data-root         data paths outside the data roots (/etc/passwd, ../../): refused
#   tls               an mTLS shepherd: a plaintext client, no client certificate, a
#                     certificate of another CA, a client with the wrong CA: each refused, said
#                     precisely by pcpctl, and counted in pcp_shepherd_tls_refusals_total
#
# Usage: scripts/attack.sh [--no-watchdog] [ROW...]
#   --no-watchdog   fd rows: run the shepherd with listener_probe_interval_ms: 0 (shows the bug)
# Environment: BUILD_DIR (default build/), CYCLES (submit-cancel, default 300).
# Needs the build (pcp-shepherd, pcpctl, pcp-supervisor), python3, prlimit, openssl.
# Exit status: 0 when every row passes, else 1. Every process is started and stopped by PID.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
SHEPHERD=$BUILD_DIR/services/shepherd/pcp-shepherd
PCPCTL=$BUILD_DIR/tools/pcpctl/pcpctl
SUPERVISOR=$BUILD_DIR/services/supervisor/pcp-supervisor
H2="python3 $ROOT/scripts/attack_h2.py"
CYCLES=${CYCLES:-300}
PROBE_MS=500
ALL_ROWS=(fd-128 fd-1024 methods token-files submit-cancel hardlink metadata-1 metadata-8 metrics-endpoint
          reflection-v1 role bad-token yaml-bomb data-root tls)
ROWS=()
for arg in "$@"; do
  case $arg in
    --no-watchdog) PROBE_MS=0 ;;
    -*) echo "attack.sh: unknown option '$arg'" >&2; exit 2 ;;
    *)
      [[ " ${ALL_ROWS[*]} " == *" $arg "* ]] || { echo "attack.sh: unknown row '$arg' (rows: ${ALL_ROWS[*]})" >&2; exit 2; }
      ROWS+=("$arg") ;;
  esac
done
[[ ${#ROWS[@]} -gt 0 ]] || ROWS=("${ALL_ROWS[@]}")
for bin in "$SHEPHERD" "$PCPCTL" "$SUPERVISOR"; do
  [[ -x "$bin" ]] || { echo "attack.sh: missing $bin: build first" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/pcp-attack-XXXXXX)
PIDS=()  # every shepherd this script started
cleanup() {
  for p in "${PIDS[@]}"; do
    if kill -0 "$p" 2>/dev/null; then kill -KILL "$p" 2>/dev/null || true; fi
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

# ---- credentials and files shared by the rows
ADMIN_TOKEN="adm-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
VIEWER_TOKEN="view-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf '%s\n' "$ADMIN_TOKEN" >"$WORK/admin.token"
printf '%s\n' "$VIEWER_TOKEN" >"$WORK/viewer.token"
sha() { printf %s "$1" | sha256sum | cut -d' ' -f1; }
TOKENS="[{name: ops, sha256: $(sha "$ADMIN_TOKEN"), roles: [admin]}, {name: grafana, sha256: $(sha "$VIEWER_TOKEN"), roles: [viewer]}]"
DATA=$WORK/data
mkdir -p "$DATA" "$WORK/outside"
head -c 16384 "$ROOT/data/tiny_shakespeare.txt" >"$DATA/small.txt"
# A small valid job, padded with comment lines to $2 bytes.
job_file() {
  local path=$1 bytes=${2:-0} line
  printf 'model: {n_layer: 1, n_head: 2, n_embd: 16, block_size: 16}\ntraining: {batch_size: 2, eval_iters: 2}\ndata: {path: %s}\n' \
    "$DATA/small.txt" >"$path"
  line="# $(head -c 1021 /dev/zero | tr '\0' x)"
  if ((bytes > 0)); then
    awk -v n=$((bytes / 1024 - 1)) -v l="$line" 'BEGIN { for (i = 0; i < n; i++) print l }' >>"$path"
  fi
}
job_file "$WORK/job.yaml"

# ---- one shepherd: start_shepherd DIR [FLAG...] sets PID ADDR PORT MPORT for it
start_shepherd() {
  local dir=$1
  shift
  mkdir -p "$dir"
  rm -f "$dir/address"
  "$SHEPHERD" --listen="${LISTEN:-127.0.0.1:0}" --state_dir="$dir/state" --metrics_listen=127.0.0.1:0 \
    --metrics_address_file="$dir/metrics_address" --address_file="$dir/address" --data_roots="$DATA" \
    --set "auth.tokens=$TOKENS" --listener_probe_interval_ms=$PROBE_MS --listener_probe_failures=3 "$@" \
    >>"$dir/stdout" 2>>"$dir/log" &
  PID=$!
  PIDS+=("$PID")
  for _ in $(seq 200); do [[ -s "$dir/address" ]] && break; sleep 0.05; done
  [[ -s "$dir/address" ]] || { echo "attack.sh: the shepherd in $dir did not start:" >&2; tail "$dir/log" >&2; exit 1; }
  ADDR=$(cat "$dir/address")
  PORT=${ADDR##*:}
  MPORT=$(cut -d: -f2 <"$dir/metrics_address")
}
stop_shepherd() {
  kill -TERM "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || true
}

rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
metrics() { python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$1/metrics', timeout=5).read().decode())" 2>/dev/null; }
series() { metrics "$MPORT" | grep -vc '^#' || true; }
state_kib() { du -sk "$1/state" 2>/dev/null | cut -f1; }
ctl() { "$PCPCTL" --shepherd="$ADDR" --timeout=10 "$@"; }
# A normal SubmitJob and GetJob (then the job is cancelled, so the queue does not fill).
normal_ok() {
  local id
  id=$(ctl --token_file="$WORK/admin.token" --quiet submit "$WORK/job.yaml" 2>>"$WORK/normal.err") || { echo NO; return; }
  if ctl --token_file="$WORK/admin.token" status "$id" >/dev/null 2>>"$WORK/normal.err"; then
    ctl --token_file="$WORK/admin.token" cancel "$id" >/dev/null 2>&1 || true
    echo yes
  else
    echo NO
  fi
}
mb() { awk -v k="$1" 'BEGIN {printf "%.0f", k / 1024}'; }

# ---- the table
printf '%-16s | %-7s | %-9s | %-9s | %-9s | %-11s | %-5s | %s\n' row verdict pid "rss MB" series "state KiB" \
  "s+g" response
status=0
# Prints the row from the before/after values; FAIL when OK is not 1, the PID changed (unless
# RESTARTED), the normal calls fail, or RSS grew by more than RSS_BOUND_MB (default 64).
report() {
  local row=$1 response=$2 pid_note=$3 normal=$4 verdict=PASS
  ((${OK:-0} == 1)) || verdict=FAIL
  [[ $pid_note == same || $pid_note == restarted* ]] || verdict=FAIL
  [[ $normal == yes ]] || verdict=FAIL
  (((RSS_AFTER - RSS_BEFORE) / 1024 <= ${RSS_BOUND_MB:-64})) || verdict=FAIL
  [[ $verdict == PASS ]] || status=1
  printf '%-16s | %-7s | %-9s | %-9s | %-9s | %-11s | %-5s | %s\n' "$row" "$verdict" "$pid_note" \
    "$(mb "$RSS_BEFORE")>$(mb "$RSS_AFTER")" "$SERIES_BEFORE>$SERIES_AFTER" "$STATE_BEFORE>$STATE_AFTER" "$normal" \
    "$response"
}
before() { RSS_BEFORE=$(rss_kib "$PID"); SERIES_BEFORE=$(series); STATE_BEFORE=$(state_kib "$1"); START_PID=$PID; }
after() {
  RSS_AFTER=$(rss_kib "$PID"); SERIES_AFTER=$(series); STATE_AFTER=$(state_kib "$1")
  if [[ $PID == "$START_PID" ]] && kill -0 "$PID" 2>/dev/null; then PID_NOTE=same; else PID_NOTE=CHANGED; fi
}

# The shepherd most rows attack; started on first use.
MAIN=$WORK/main
main_shepherd() {
  if [[ -z ${MAIN_PID:-} ]] || ! kill -0 "$MAIN_PID" 2>/dev/null; then
    # The production probe interval (10 s): the rows below are not about the watchdog.
    PROBE_MS=10000 start_shepherd "$MAIN"
    MAIN_PID=$PID MAIN_ADDR=$ADDR MAIN_PORT=$PORT MAIN_MPORT=$MPORT
  fi
  PID=$MAIN_PID ADDR=$MAIN_ADDR PORT=$MAIN_PORT MPORT=$MAIN_MPORT
}

# Opens N idle connections to 127.0.0.1:PORT (2 s timeout each, stops at the first that
# fails), holds them 1 s, closes them; prints how many were open.
flood() {
  python3 - "$1" "$2" <<'EOF'
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

row_fd() {
  local row=$1 limit=${1#fd-} dir=$WORK/$1 opened failed=no outcome code ms start
  start_shepherd "$dir"
  before "$dir"
  prlimit --pid "$PID" --nofile="$limit:$limit"
  start=$(date +%s%N)
  opened=$(flood "$PORT" $((limit + 100)))
  grep -q 'Failed accept4' "$dir/log" && failed=yes
  for _ in $(seq 100); do  # up to 10 s for the watchdog
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
  done
  OK=0
  if kill -0 "$PID" 2>/dev/null; then
    outcome="still running"
    PID_NOTE=same
    ctl --token_file="$WORK/admin.token" cluster >/dev/null 2>&1 && OK=1
  else
    code=0
    wait "$PID" || code=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    outcome=$(printf 'exited %d after %d.%d s' "$code" $((ms / 1000)) $((ms % 1000 / 100)))
    # What Restart= does: the same port, state and metrics port, a fresh process.
    LISTEN=$ADDR start_shepherd "$dir"
    ((code == 1)) && OK=1
    PID_NOTE="restarted"
  fi
  RSS_AFTER=$(rss_kib "$PID"); SERIES_AFTER=$(series); STATE_AFTER=$(state_kib "$dir")
  report "$row" "$opened connections, failed accept4: $failed; $outcome" "$PID_NOTE" "$(normal_ok)"
  stop_shepherd
}

refused_other() {
  metrics "$MPORT" | grep '^pcp_shepherd_auth_refusals_total{' | grep 'service="other"' | grep 'reason="no_credential"' |
    awk '{print $2}'
}

row_methods() {
  main_shepherd
  local refused_before refused_after response
  before "$MAIN"
  refused_before=$(refused_other)
  response=$($H2 methods "$PORT" 5000 2000) || true
  refused_after=$(refused_other)
  after "$MAIN"
  OK=0
  [[ $response == "grpc-status 16 x5000" && $SERIES_AFTER == "$SERIES_BEFORE" ]] && OK=1
  report methods "$response (UNAUTHENTICATED); refusals{other,no_credential} ${refused_before:-?}>${refused_after:-?}" \
    "$PID_NOTE" "$(normal_ok)"
}

row_token_files() {
  main_shepherd
  local dir=$WORK/tokens secret="tok-$(head -c 9 /dev/urandom | od -An -tx1 | tr -d ' \n')" kind src out code
  local codes=() leaks=0 aborts=0
  mkdir -p "$dir"
  printf '%s\n%s\n' "$secret" "$secret-2" >"$dir/two-lines"
  printf '%s\001x\n' "$secret" >"$dir/non-printable"
  { printf '%s' "$secret"; head -c 1048576 /dev/zero | tr '\0' a; } >"$dir/huge"
  before "$MAIN"
  for kind in two-lines as-path non-printable huge; do
    if [[ $kind == as-path ]]; then src=$secret; else src=$dir/$kind; fi
    code=0
    out=$("$PCPCTL" --shepherd="$ADDR" --timeout=5 --token_file="$src" cluster 2>&1) || code=$?
    codes+=("pcpctl:$code")
    ((code == 134 || code >= 128)) && aborts=$((aborts + 1))
    [[ $out == *"$secret"* ]] && leaks=$((leaks + 1))
    code=0
    out=$(timeout 10 "$SUPERVISOR" --shepherd="$ADDR" --supervisor_id=node-1 --state_dir="$dir/sup-$kind" \
      --worker_binary=/bin/true --metrics_listen= --token="file:$src" 2>&1) || code=$?
    codes+=("sup:$code")
    ((code == 134 || code >= 124)) && aborts=$((aborts + 1))
    [[ $out == *"$secret"* ]] && leaks=$((leaks + 1))
  done
  after "$MAIN"
  OK=0
  ((aborts == 0 && leaks == 0)) && OK=1
  report token-files "exit codes $(IFS=,; echo "${codes[*]}"); aborts $aborts; token printed $leaks of 8" \
    "$PID_NOTE" "$(normal_ok)"
}

row_submit_cancel() {
  main_shepherd
  local i id big=$WORK/big.yaml ms start response ok_cycles=0
  job_file "$big" 204800
  before "$MAIN"
  for i in $(seq "$CYCLES"); do
    id=$(ctl --token_file="$WORK/admin.token" --quiet submit "$big" 2>/dev/null) || continue
    ctl --token_file="$WORK/admin.token" cancel "$id" >/dev/null 2>&1 && ok_cycles=$((ok_cycles + 1))
  done
  after "$MAIN"
  # A restart reads the whole state: timed until it serves.
  kill -TERM "$PID"
  wait "$PID" 2>/dev/null || true
  start=$(date +%s%N)
  PROBE_MS=10000 LISTEN=$ADDR start_shepherd "$MAIN"
  for _ in $(seq 1500); do  # 30 s at most
    ctl --token_file="$WORK/admin.token" --timeout=1 cluster >/dev/null 2>&1 && break
    sleep 0.02
  done
  ms=$((($(date +%s%N) - start) / 1000000))
  MAIN_PID=$PID
  RSS_AFTER=$(rss_kib "$PID")
  OK=0
  # Bounded: 100 job files kept (max_finished_job_yamls) plus records, and a restart in < 5 s.
  ((ok_cycles == CYCLES && STATE_AFTER < 100 * 210 + CYCLES * 16 + 4096 && ms < 5000)) && OK=1
  response="$ok_cycles/$CYCLES cycles of 200 KiB; restart serves after $((ms / 1000)).$((ms % 1000 / 10)) s"
  report submit-cancel "$response" "restarted" "$(normal_ok)"
}

# Submits $1 (a job file) with the admin token; sets RESPONSE to pcpctl's line, CODE to its status.
submit_as_admin() {
  CODE=0
  RESPONSE=$(ctl --token_file="${2:-$WORK/admin.token}" --quiet submit "$1" 2>&1) || CODE=$?
  RESPONSE=$(printf '%s' "$RESPONSE" | head -n 1 | sed "s|$WORK|\$WORK|g")
}

row_hardlink() {
  main_shepherd
  printf 'root:x:0:0:secret outside the data root\n' >"$WORK/outside/secret.txt"
  ln -f "$WORK/outside/secret.txt" "$DATA/link.txt"
  sed "s|$DATA/small.txt|$DATA/link.txt|" "$WORK/job.yaml" >"$WORK/hardlink.yaml"
  before "$MAIN"
  submit_as_admin "$WORK/hardlink.yaml"
  after "$MAIN"
  OK=0
  # One message for every refused path (docs/operations.md#admission-and-limits).
  ((CODE == 1)) && [[ $RESPONSE == *refused* ]] && OK=1
  report hardlink "$RESPONSE" "$PID_NOTE" "$(normal_ok)"
}

# Oversized headers, sent raw (no gRPC client sends them: it checks the server's limit).
# "first": on a new connection before the SETTINGS exchange, as an attacker sends them (gRPC
# 1.51 then applies only HTTP/2's 16 MiB); "settled": after it, as gRPC clients call (then
# max_metadata_bytes, 8 KiB, applies). Bounded means: repeating the attack does not grow RSS
# further (by at most 16 MiB); what one attack costs at its peak is the RSS column.
row_metadata() {
  main_shepherd
  local row=$1 response="" size first settled got rss_mid
  before "$MAIN"
  OK=1
  if [[ $row == metadata-1 ]]; then
    for size in 9216 65536 1048576 16777216; do
      first=$($H2 metadata "$PORT" "$size" 1 --token "$ADMIN_TOKEN") || true
      settled=$($H2 metadata "$PORT" "$size" 1 --settled --token "$ADMIN_TOKEN") || true
      response+="$((size / 1024)) KiB: first ${first#grpc-status }, settled ${settled#grpc-status }; "
      [[ $settled == "grpc-status 8 x1" ]] || OK=0
    done
    rss_mid=$(rss_kib "$PID")
    got=$($H2 metadata "$PORT" 16777216 1 --token "$ADMIN_TOKEN") || true
    got=$($H2 metadata "$PORT" 16777216 1 --token "$ADMIN_TOKEN") || true
    [[ $got == "grpc-status 8 x1" ]] || OK=0
  else
    got=$($H2 metadata "$PORT" 16777216 8 --token "$ADMIN_TOKEN") || true
    response="8 x 16 MiB at once: $got"
    [[ $got != *"grpc-status 0"* ]] || OK=0
    rss_mid=$(rss_kib "$PID")
    got=$($H2 metadata "$PORT" 16777216 8 --token "$ADMIN_TOKEN") || true
    response+="; again: $got"
    [[ $got != *"grpc-status 0"* ]] || OK=0
  fi
  after "$MAIN"
  # One 16 MiB header at a time: a repeat adds nothing; 8 at once: reported (gRPC 1.51 reads
  # each whole before judging it), bounded by the row's 256 MB (8 x 16 MiB, twice).
  if [[ $row == metadata-1 ]]; then (((RSS_AFTER - rss_mid) / 1024 <= 16)) || OK=0; fi
  response="${response%; }; repeated: RSS $(mb "$rss_mid")>$(mb "$RSS_AFTER") MB"
  RSS_BOUND_MB=256 report "$row" "${response}" "$PID_NOTE" "$(normal_ok)"
}

row_metrics_endpoint() {
  main_shepherd
  local other response code=0 tried=()
  before "$MAIN"
  OK=1
  metrics "$MPORT" | grep -q '^pcp_build_info' || OK=0
  # Any other address of this machine: 127.0.0.2 (loopback, but not the bound one) and the
  # non-loopback ones, if any.
  for other in 127.0.0.2 $(hostname -I 2>/dev/null || true); do
    if python3 -c "import socket; socket.create_connection(('$other', $MPORT), timeout=2)" 2>/dev/null; then
      OK=0
      tried+=("$other:open")
    else
      tried+=("$other:refused")
    fi
  done
  after "$MAIN"
  response="127.0.0.1:$MPORT serves /metrics; $(IFS=,; echo "${tried[*]}")"
  report metrics-endpoint "$response" "$PID_NOTE" "$(normal_ok)"
}

row_reflection() {
  main_shepherd
  local v1 v1alpha
  before "$MAIN"
  v1=$($H2 call "$PORT" /grpc.reflection.v1.ServerReflection/ServerReflectionInfo) || true
  v1alpha=$($H2 call "$PORT" /grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo) || true
  after "$MAIN"
  OK=0
  [[ $v1 == "grpc-status 12 x1" || $v1 == "grpc-status 0 x1" ]] && [[ $v1alpha == "grpc-status 0 x1" ]] && OK=1
  report reflection-v1 "v1: $v1 (UNIMPLEMENTED: fall back), v1alpha: $v1alpha" "$PID_NOTE" "$(normal_ok)"
}

row_role() {
  main_shepherd
  before "$MAIN"
  submit_as_admin "$WORK/job.yaml" "$WORK/viewer.token"
  after "$MAIN"
  OK=0
  ((CODE == 1)) && grep -q "PermissionDenied\|may not\|PERMISSION_DENIED\|role" <<<"$RESPONSE" && OK=1
  report role "viewer SubmitJob: $RESPONSE" "$PID_NOTE" "$(normal_ok)"
}

row_bad_token() {
  main_shepherd
  local guess="guess-$ADMIN_TOKEN"
  printf '%s\n' "$guess" >"$WORK/guess.token"
  before "$MAIN"
  submit_as_admin "$WORK/job.yaml" "$WORK/guess.token"
  after "$MAIN"
  OK=0
  ((CODE == 1)) && [[ $RESPONSE != *"$guess"* ]] && grep -q "not known\|UNAUTHENTICATED\|token" <<<"$RESPONSE" && OK=1
  report bad-token "$RESPONSE" "$PID_NOTE" "$(normal_ok)"
}

row_yaml_bomb() {
  main_shepherd
  local bomb=$WORK/bomb.yaml
  {
    echo 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'
    local prev=a l
    for l in b c d e f g h i; do
      echo "$l: &$l [*$prev,*$prev,*$prev,*$prev,*$prev,*$prev,*$prev,*$prev,*$prev]"
      prev=$l
    done
    echo "model: {n_layer: *i}"
    echo "data: {path: $DATA/small.txt}"
  } >"$bomb"
  before "$MAIN"
  local start ms
  start=$(date +%s%N)
  submit_as_admin "$bomb"
  ms=$((($(date +%s%N) - start) / 1000000))
  after "$MAIN"
  OK=0
  ((CODE == 1 && ms < 10000)) && OK=1
  report yaml-bomb "$RESPONSE ($ms ms)" "$PID_NOTE" "$(normal_ok)"
}

row_data_root() {
  main_shepherd
  local path out=() codes=0
  before "$MAIN"
  for path in /etc/passwd "$DATA/../../../etc/passwd" /proc/self/environ; do
    sed "s|$DATA/small.txt|$path|" "$WORK/job.yaml" >"$WORK/escape.yaml"
    submit_as_admin "$WORK/escape.yaml"
    ((CODE == 1)) || codes=$((codes + 1))
    out+=("$RESPONSE")
  done
  after "$MAIN"
  OK=0
  ((codes == 0)) && OK=1
  report data-root "3 of 3 refused: ${out[0]}" "$PID_NOTE" "$(normal_ok)"
}

# mTLS certificates made with openssl (as scripts/run-local-cluster.sh --tls does).
make_certs() {
  local d=$WORK/pki
  mkdir -p "$d"
  (
    cd "$d"
    ca() { openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=$1" \
      -addext basicConstraints=critical,CA:TRUE -keyout "$1.key" -out "$1.crt" 2>/dev/null; }
    issue() {  # issue NAME CA [SAN]
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" -keyout "$1.key" -out "$1.csr" 2>/dev/null
      printf 'extendedKeyUsage=serverAuth,clientAuth\n%s' "${3:+subjectAltName=$3}" >"$1.ext"
      openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -days 2 -extfile "$1.ext" \
        -out "$1.crt" 2>/dev/null
    }
    ca pcp-ca
    ca other-ca
    issue shepherd pcp-ca "IP:127.0.0.1"
    issue ops pcp-ca
    issue rogue other-ca
  )
}

row_tls() {
  make_certs
  local d=$WORK/pki dir=$WORK/tls out code response="" m_before m_after
  start_shepherd "$dir" --tls_ca="$d/pcp-ca.crt" --tls_cert="$d/shepherd.crt" --tls_key="$d/shepherd.key" \
    --set "auth.identities=[{identity: ops, roles: [admin]}]"
  before "$dir"
  m_before=$(metrics "$MPORT" | grep '^pcp_shepherd_tls_refusals_total' | awk '{s += $2} END {print s + 0}')
  OK=1
  # attempt NAME EXPECTED-WORDS PCPCTL-FLAGS...
  attempt() {
    local name=$1 want=$2
    shift 2
    code=0
    out=$("$PCPCTL" --shepherd="$ADDR" --timeout=5 "$@" cluster 2>&1) || code=$?
    if ((code != 1)) || [[ $out != *"$want"* ]]; then OK=0; fi
    response+="$name: exit $code '${want}'$([[ $out == *"$want"* ]] || echo ' MISSING'); "
    printf '%s\n' "$out" >>"$dir/pcpctl.out"
  }
  attempt plaintext "most likely serves TLS"
  attempt no-cert "refused this client's certificate" --ca="$d/pcp-ca.crt"
  attempt rogue-cert "refused this client's certificate" --ca="$d/pcp-ca.crt" --cert="$d/rogue.crt" --key="$d/rogue.key"
  attempt wrong-ca "does not verify" --ca="$d/other-ca.crt" --cert="$d/ops.crt" --key="$d/ops.key"
  sleep 0.5
  m_after=$(metrics "$MPORT" | grep '^pcp_shepherd_tls_refusals_total' | awk '{s += $2} END {print s + 0}')
  local by_reason
  by_reason=$(metrics "$MPORT" | awk -F'[="} ]+' '/^pcp_shepherd_tls_refusals_total/ && $NF + 0 > 0 {printf "%s=%s ", $2, $NF + 0}')
  after "$dir"
  ((m_after - m_before >= 3)) || OK=0
  # The normal calls, over mTLS as ops.
  local id normal=NO
  if id=$("$PCPCTL" --shepherd="$ADDR" --ca="$d/pcp-ca.crt" --cert="$d/ops.crt" --key="$d/ops.key" --quiet \
    submit "$WORK/job.yaml" 2>>"$WORK/normal.err") &&
    "$PCPCTL" --shepherd="$ADDR" --ca="$d/pcp-ca.crt" --cert="$d/ops.crt" --key="$d/ops.key" status "$id" \
      >/dev/null 2>>"$WORK/normal.err"; then
    normal=yes
  fi
  report tls "${response}tls_refusals_total $m_before>$m_after (${by_reason% })" "$PID_NOTE" "$normal"
  stop_shepherd
}

for row in "${ROWS[@]}"; do
  RSS_BOUND_MB=64
  case $row in
    fd-*) row_fd "$row" ;;
    methods) row_methods ;;
    token-files) row_token_files ;;
    submit-cancel) row_submit_cancel ;;
    hardlink) row_hardlink ;;
    metadata-1 | metadata-8) row_metadata "$row" ;;
    metrics-endpoint) row_metrics_endpoint ;;
    reflection-v1) row_reflection ;;
    role) row_role ;;
    bad-token) row_bad_token ;;
    yaml-bomb) row_yaml_bomb ;;
    data-root) row_data_root ;;
    tls) row_tls ;;
  esac
done
if [[ -n ${MAIN_PID:-} ]]; then
  PID=$MAIN_PID
  stop_shepherd
fi
[[ -s $WORK/normal.err ]] && { echo "normal calls that failed:"; sort -u "$WORK/normal.err" | head -5; }
exit $status
