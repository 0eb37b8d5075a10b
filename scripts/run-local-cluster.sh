#!/usr/bin/env bash
# Runs a whole PCP cluster on this machine, on loopback: one pcp-shepherd and N
# pcp-supervisor processes (each keeps one pcp-worker alive), submits a job, follows it to
# the end with `pcpctl watch`, prints where the checkpoint is, the loss plot (`pcpctl plot`,
# from the job's own per-round history) and a text sample, and stops everything it started
# (by PID, also on Ctrl-C or an error).
#
# Usage: scripts/run-local-cluster.sh [--workers N] [--job FILE] [--threads N]
#                                     [--state-dir DIR] [--keep-state] [--build-dir DIR]
#   --workers N      supervisors (and workers) to start; default 2
#   --job FILE       job to run; default config/jobs/shakespeare_char.yaml
#                    (the number of rounds is the job's diloco.rounds: edit a copy to shorten it)
#   --threads N      CPU threads per worker; default: cores / workers (at least 1)
#   --state-dir DIR  the shepherd's state (jobs, checkpoints) and all logs go here, and are
#                    kept; default: a new temporary folder, removed at the end
#   --keep-state     keep the temporary folder
#   --build-dir DIR  where the binaries are; default: build (scripts/setup.sh builds it)
#   --plot FILE      where to save the loss plot (pcpctl plot: train and val loss vs rounds
#                    and vs tokens, from the job's history); default: loss.png in the state
#                    folder when it is kept, else in this folder
#   --prometheus     also run Prometheus (/usr/bin/prometheus) on a free loopback port with
#                    deploy/prometheus's config scraping every process each second, for live
#                    cluster-wide views (its URL is printed)
#   --tls            mTLS with roles: makes a throwaway CA and certificates with openssl
#                    (STATE/tls: the shepherd's, one per supervisor id for its node, one for
#                    pcpctl as admin) and an admin token; pcpctl uses them via PCP_CA/PCP_CERT/
#                    PCP_KEY/PCP_TOKEN_FILE; the grpcurl command line is printed
#   --link-mbit R    emulate a WAN link between each worker and the shepherd: R Mbit/s each
#                    way (the workers' --link_up_mbit/--link_down_mbit; docs/benchmarks.md "Emulated links")
#   --link-rtt-ms T  ... with a round-trip time of T ms (the workers' --link_rtt_ms)
#   --worker-args A,B,...  more flags for every worker (comma-separated, as pcp-supervisor's
#                    --worker_args), e.g. --worker-args=--link_up_mbit=1,--link_down_mbit=100
# Exit status: pcpctl watch's (0 = the job completed), or 1 if the cluster did not start.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
WORKERS=2
JOB=$ROOT/config/jobs/shakespeare_char.yaml
THREADS=""
STATE_DIR=""
KEEP_STATE=0
PROMETHEUS=0
PLOT=""
TLS=0
LINK_MBIT=""
LINK_RTT_MS=""
EXTRA_WORKER_ARGS=""

usage() { sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "run-local-cluster: $*" >&2; exit 1; }
need_value() { [[ $# -ge 2 && -n "$2" ]] || die "$1 needs a value (see --help)"; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --workers) need_value "$@"; WORKERS=$2; shift 2 ;;
    --workers=*) WORKERS=${1#*=}; shift ;;
    --job) need_value "$@"; JOB=$2; shift 2 ;;
    --job=*) JOB=${1#*=}; shift ;;
    --threads) need_value "$@"; THREADS=$2; shift 2 ;;
    --threads=*) THREADS=${1#*=}; shift ;;
    --state-dir) need_value "$@"; STATE_DIR=$2; shift 2 ;;
    --state-dir=*) STATE_DIR=${1#*=}; shift ;;
    --keep-state) KEEP_STATE=1; shift ;;
    --prometheus) PROMETHEUS=1; shift ;;
    --tls) TLS=1; shift ;;
    --link-mbit) need_value "$@"; LINK_MBIT=$2; shift 2 ;;
    --link-mbit=*) LINK_MBIT=${1#*=}; shift ;;
    --link-rtt-ms) need_value "$@"; LINK_RTT_MS=$2; shift 2 ;;
    --link-rtt-ms=*) LINK_RTT_MS=${1#*=}; shift ;;
    --worker-args) need_value "$@"; EXTRA_WORKER_ARGS=$2; shift 2 ;;
    --worker-args=*) EXTRA_WORKER_ARGS=${1#*=}; shift ;;
    --plot) need_value "$@"; PLOT=$2; shift 2 ;;
    --plot=*) PLOT=${1#*=}; shift ;;
    --build-dir) need_value "$@"; BUILD_DIR=$2; shift 2 ;;
    --build-dir=*) BUILD_DIR=${1#*=}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

[[ "$WORKERS" =~ ^[1-9][0-9]*$ ]] || die "--workers must be a positive integer, got '$WORKERS'"
if [[ -z "$THREADS" ]]; then
  THREADS=$(( $(nproc) / WORKERS ))
  (( THREADS >= 1 )) || THREADS=1
fi
[[ "$THREADS" =~ ^[1-9][0-9]*$ ]] || die "--threads must be a positive integer, got '$THREADS'"
[[ -f "$JOB" ]] || die "job file '$JOB' not found"
# The workers check the ranges (and would crash-loop on a bad value): only the form here.
NUMBER='^[0-9]+([.][0-9]+)?$'
WORKER_ARGS="--backend=cpu,--threads=$THREADS"
if [[ -n "$LINK_MBIT" ]]; then
  [[ "$LINK_MBIT" =~ $NUMBER ]] || die "--link-mbit must be a number of Mbit/s, got '$LINK_MBIT'"
  WORKER_ARGS+=",--link_up_mbit=$LINK_MBIT,--link_down_mbit=$LINK_MBIT"
fi
if [[ -n "$LINK_RTT_MS" ]]; then
  [[ "$LINK_RTT_MS" =~ $NUMBER ]] || die "--link-rtt-ms must be a number of ms, got '$LINK_RTT_MS'"
  WORKER_ARGS+=",--link_rtt_ms=$LINK_RTT_MS"
fi
[[ -n "$EXTRA_WORKER_ARGS" ]] && WORKER_ARGS+=",$EXTRA_WORKER_ARGS"

# Absolute, so that the supervisors can start the worker from any directory.
[[ -d "$BUILD_DIR" ]] && BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
SHEPHERD_BIN=$BUILD_DIR/services/shepherd/pcp-shepherd
SUPERVISOR_BIN=$BUILD_DIR/services/supervisor/pcp-supervisor
WORKER_BIN=$BUILD_DIR/services/worker/pcp-worker
PCPCTL_BIN=$BUILD_DIR/tools/pcpctl/pcpctl
for bin in "$SHEPHERD_BIN" "$SUPERVISOR_BIN" "$WORKER_BIN" "$PCPCTL_BIN"; do
  [[ -x "$bin" ]] || die "missing $bin: build first (scripts/setup.sh, or cmake --build $BUILD_DIR)"
done

if [[ -n "$STATE_DIR" ]]; then
  mkdir -p "$STATE_DIR"
  STATE_DIR=$(cd "$STATE_DIR" && pwd)
  KEEP_STATE=1
else
  STATE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/pcp-cluster-XXXXXX")
fi
LOGS=$STATE_DIR/logs
mkdir -p "$LOGS"

# ---------------------------------------------------------------- cleanup, by PID only
SHEPHERD_PID=""
SUPERVISOR_PIDS=()
WATCH_PID=""
PROM_PID=""

# Sends SIGTERM to a PID, waits up to $2 s, then SIGKILL.
stop_pid() {
  local pid=$1 grace=$2 waited=0
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null && (( waited < grace * 10 )); do
    sleep 0.1
    waited=$((waited + 1))
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "run-local-cluster: $pid did not stop in ${grace}s; SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  [[ -n "$WATCH_PID" ]] && stop_pid "$WATCH_PID" 5
  # Supervisors first (each stops its worker), then the shepherd (it checkpoints a running job).
  for pid in "${SUPERVISOR_PIDS[@]}"; do stop_pid "$pid" 20; done
  [[ -n "$SHEPHERD_PID" ]] && stop_pid "$SHEPHERD_PID" 30
  [[ -n "$PROM_PID" ]] && stop_pid "$PROM_PID" 10
  if (( KEEP_STATE )); then
    echo "state and logs kept in $STATE_DIR"
  else
    rm -rf "$STATE_DIR"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail_with_log() {
  echo "run-local-cluster: $1; last lines of $2:" >&2
  tail -n 20 "$2" >&2 || true
  KEEP_STATE=1
  exit 1
}

# ---------------------------------------------------------------- metrics ports
# Every process serves Prometheus /metrics on a port of its own: it binds port 0 and writes
# the port it got to an address file (--metrics_address_file), so no port is picked here
# and then lost to another process before it is bound. A restarted worker rebinds the port
# in its file. read_address waits for such a file and sets ADDRESS: path, pid of the
# process that writes it (or of its supervisor), that process's log.
read_address() {
  for _ in $(seq 600); do
    if [[ -s "$1" ]]; then
      ADDRESS=$(head -n 1 "$1")
      return 0
    fi
    kill -0 "$2" 2>/dev/null || fail_with_log "$(basename "$3" .log) exited" "$3"
    sleep 0.1
  done
  fail_with_log "no $1 after 60 s" "$3"
}
ADDRESSES=$STATE_DIR/addresses
mkdir -p "$ADDRESSES"

# ---------------------------------------------------------------- --tls: CA, certificates, roles
SHEPHERD_ARGS=()
# supervisor_tls_args I: the TLS flags of supervisor local-I (none without --tls).
supervisor_tls_args() { :; }
if (( TLS )); then
  command -v openssl >/dev/null || die "--tls needs openssl (apt-get install openssl)"
  TLS_DIR=$STATE_DIR/tls
  mkdir -p "$TLS_DIR"
  chmod 700 "$TLS_DIR"
  # issue NAME [SAN]: NAME.crt/NAME.key signed by the CA (CN=NAME; SAN when given).
  issue() {
    local name=$1 san=${2:-}
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$TLS_DIR/$name.key" \
      -out "$TLS_DIR/$name.csr" -subj "/CN=$name" 2>>"$LOGS/openssl.log"
    { echo "basicConstraints=CA:FALSE"; echo "extendedKeyUsage=serverAuth,clientAuth"
      [[ -n "$san" ]] && echo "subjectAltName=$san"; } >"$TLS_DIR/$name.ext"
    openssl x509 -req -in "$TLS_DIR/$name.csr" -CA "$TLS_DIR/ca.crt" -CAkey "$TLS_DIR/ca.key" \
      -CAcreateserial -days 7 -extfile "$TLS_DIR/$name.ext" -out "$TLS_DIR/$name.crt" 2>>"$LOGS/openssl.log"
  }
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 7 -subj "/CN=pcp-local-ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout "$TLS_DIR/ca.key" -out "$TLS_DIR/ca.crt" 2>>"$LOGS/openssl.log" || die "openssl failed (see $LOGS/openssl.log)"
  issue shepherd "DNS:localhost,IP:127.0.0.1"
  issue pcp-admin
  IDENTITIES="    - {identity: pcp-admin, roles: [admin]}"
  for i in $(seq "$WORKERS"); do
    issue "local-$i" "DNS:local-$i"
    IDENTITIES+=$'\n'"    - {identity: local-$i, roles: [node]}"
  done
  # The admin token: in a file (mode 600); the shepherd keeps only its SHA-256.
  (umask 077; openssl rand -hex 24 >"$TLS_DIR/admin.token")
  TOKEN_SHA256=$(tr -d '\n' <"$TLS_DIR/admin.token" | sha256sum | cut -d' ' -f1)
  cat >"$STATE_DIR/shepherd.yaml" <<YAML
tls:
  ca: $TLS_DIR/ca.crt
  cert: $TLS_DIR/shepherd.crt
  key: $TLS_DIR/shepherd.key
auth:
  identities:
$IDENTITIES
  tokens:
    - {name: local-admin-token, sha256: $TOKEN_SHA256, roles: [admin]}
YAML
  SHEPHERD_ARGS=(--config="$STATE_DIR/shepherd.yaml")
  supervisor_tls_args() {
    echo "--tls_ca=$TLS_DIR/ca.crt --tls_cert=$TLS_DIR/local-$1.crt --tls_key=$TLS_DIR/local-$1.key"
  }
  export PCP_CA=$TLS_DIR/ca.crt PCP_CERT=$TLS_DIR/pcp-admin.crt PCP_KEY=$TLS_DIR/pcp-admin.key
  export PCP_TOKEN_FILE=$TLS_DIR/admin.token
  echo "tls: mTLS with roles; CA and certificates in $TLS_DIR"
fi

# ---------------------------------------------------------------- shepherd
# Port 0: the shepherd binds a free loopback port and writes it to shepherd.addr. Jobs may read
# the repository's data and its example models (examples/stablehlo), and the job file's folder.
JOB_DIR=$(cd "$(dirname "$JOB")" && pwd)
"$SHEPHERD_BIN" ${SHEPHERD_ARGS[@]+"${SHEPHERD_ARGS[@]}"} --listen=127.0.0.1:0 --state_dir="$STATE_DIR/shepherd" \
  --data_roots="$ROOT/data,$ROOT/examples,$JOB_DIR" \
  --metrics_listen=127.0.0.1:0 --metrics_address_file="$ADDRESSES/shepherd.metrics" \
  --address_file="$STATE_DIR/shepherd.addr" >"$LOGS/shepherd.log" 2>&1 &
SHEPHERD_PID=$!
for _ in $(seq 600); do
  [[ -s "$STATE_DIR/shepherd.addr" ]] && break
  kill -0 "$SHEPHERD_PID" 2>/dev/null || fail_with_log "pcp-shepherd exited" "$LOGS/shepherd.log"
  sleep 0.1
done
[[ -s "$STATE_DIR/shepherd.addr" ]] || fail_with_log "pcp-shepherd did not start in 60 s" "$LOGS/shepherd.log"
ADDR=$(head -n 1 "$STATE_DIR/shepherd.addr")
read_address "$ADDRESSES/shepherd.metrics" "$SHEPHERD_PID" "$LOGS/shepherd.log"
SHEPHERD_METRICS=$ADDRESS
export PCP_SHEPHERD=$ADDR
echo "shepherd: $ADDR (pid $SHEPHERD_PID, state $STATE_DIR/shepherd)"

# ---------------------------------------------------------------- supervisors + workers
for i in $(seq "$WORKERS"); do
  # shellcheck disable=SC2046  # the TLS flags are paths without spaces (under STATE_DIR)
  "$SUPERVISOR_BIN" --shepherd="$ADDR" --supervisor_id="local-$i" $(supervisor_tls_args "$i") \
    --state_dir="$STATE_DIR/supervisor-$i" --worker_binary="$WORKER_BIN" \
    --metrics_listen=127.0.0.1:0 --metrics_address_file="$ADDRESSES/supervisor-$i.metrics" \
    --worker_args="$WORKER_ARGS,--metrics_listen=127.0.0.1:0,--metrics_address_file=$ADDRESSES/worker-$i.metrics" \
    >"$LOGS/supervisor-$i.log" 2>&1 &
  SUPERVISOR_PIDS+=($!)
  echo "supervisor local-$i: pid $! ($THREADS worker threads)"
done
if [[ -n "$LINK_MBIT$LINK_RTT_MS" ]]; then
  echo "emulated link per worker: ${LINK_MBIT:-unlimited} Mbit/s each way, RTT ${LINK_RTT_MS:-0} ms"
fi

# Healthy = every worker has a live Training stream to the shepherd.
connected=0
for _ in $(seq 240); do
  connected=$("$PCPCTL_BIN" --timeout=5 cluster 2>/dev/null | awk '$1 == "workers" {print $2}') || true
  [[ "${connected:-0}" -ge "$WORKERS" ]] && break
  for i in "${!SUPERVISOR_PIDS[@]}"; do
    kill -0 "${SUPERVISOR_PIDS[$i]}" 2>/dev/null ||
      fail_with_log "supervisor local-$((i + 1)) exited" "$LOGS/supervisor-$((i + 1)).log"
  done
  sleep 0.5
done
[[ "${connected:-0}" -ge "$WORKERS" ]] ||
  fail_with_log "only ${connected:-0} of $WORKERS workers connected after 120 s" "$LOGS/shepherd.log"
SUPERVISOR_METRICS=()
WORKER_METRICS=()
for i in $(seq "$WORKERS"); do
  # A connected worker has written its file (it serves /metrics before it connects).
  read_address "$ADDRESSES/supervisor-$i.metrics" "${SUPERVISOR_PIDS[$((i - 1))]}" "$LOGS/supervisor-$i.log"
  SUPERVISOR_METRICS+=("$ADDRESS")
  read_address "$ADDRESSES/worker-$i.metrics" "${SUPERVISOR_PIDS[$((i - 1))]}" "$LOGS/supervisor-$i.log"
  WORKER_METRICS+=("$ADDRESS")
done
echo "cluster up: $WORKERS workers connected; logs in $LOGS"
if (( TLS )); then
  echo "grpcurl: grpcurl -cacert $PCP_CA -cert $PCP_CERT -key $PCP_KEY \\"
  echo "           -H \"authorization: Bearer \$(cat $PCP_TOKEN_FILE)\" $ADDR pcp.v1.Admin/GetCluster"
fi
echo "metrics (Prometheus /metrics):"
echo "  shepherd          http://$SHEPHERD_METRICS/metrics"
for i in $(seq "$WORKERS"); do
  echo "  supervisor local-$i http://${SUPERVISOR_METRICS[$((i - 1))]}/metrics"
  echo "  worker local-$i     http://${WORKER_METRICS[$((i - 1))]}/metrics"
done

# ---------------------------------------------------------------- prometheus (--prometheus)
# deploy/prometheus/prometheus.yml as installed, except 1 s scrape/evaluation intervals; the
# target files it reads (file_sd_configs) list this cluster's metrics ports.
if (( PROMETHEUS )); then
  [[ -x /usr/bin/prometheus ]] || die "--prometheus needs /usr/bin/prometheus (apt-get install prometheus)"
  PROM_DIR=$STATE_DIR/prometheus
  mkdir -p "$PROM_DIR/targets"
  sed -E -e 's/^(  (scrape_interval|scrape_timeout|evaluation_interval):).*/\1 1s/' \
    "$ROOT/deploy/prometheus/prometheus.yml" >"$PROM_DIR/prometheus.yml"
  cp "$ROOT/deploy/prometheus/pcp-alerts.yml" "$PROM_DIR/"
  targets_file() {  # job name, then HOST:PORT...
    local file=$PROM_DIR/targets/$1.yml; shift
    local list; list=$(printf "'%s', " "$@")
    echo "- targets: [${list%, }]" >"$file"
  }
  targets_file pcp-shepherd "$SHEPHERD_METRICS"
  targets_file pcp-supervisor "${SUPERVISOR_METRICS[@]}"
  targets_file pcp-worker "${WORKER_METRICS[@]}"
  # Prometheus cannot report a port it chose, so this one port is picked here (and could, in
  # principle, be taken by another process before Prometheus binds it).
  PROM_ADDR=127.0.0.1:$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  /usr/bin/prometheus --config.file="$PROM_DIR/prometheus.yml" --storage.tsdb.path="$PROM_DIR/data" \
    --web.listen-address="$PROM_ADDR" --log.level=warn >"$LOGS/prometheus.log" 2>&1 &
  PROM_PID=$!
  for _ in $(seq 300); do
    /usr/bin/python3 -c "import urllib.request as u; u.urlopen('http://$PROM_ADDR/-/ready', timeout=1)" \
      2>/dev/null && break
    kill -0 "$PROM_PID" 2>/dev/null || fail_with_log "prometheus exited" "$LOGS/prometheus.log"
    sleep 0.2
  done
  # Prometheus applies new targets every 5 s: wait until it has scraped every process once,
  # so that even a job shorter than that is recorded.
  targets_up=0
  for _ in $(seq 60); do
    targets_up=$(/usr/bin/python3 -c "import json, urllib.request as u, urllib.parse as p
r = json.load(u.urlopen('http://$PROM_ADDR/api/v1/query?' + p.urlencode({'query': 'count(up == 1)'}), timeout=2))
print(int(float(r['data']['result'][0]['value'][1])) if r['data']['result'] else 0)" 2>/dev/null) || targets_up=0
    (( targets_up >= 1 + 2 * WORKERS )) && break
    sleep 0.5
  done
  echo "prometheus: http://$PROM_ADDR (pid $PROM_PID; $targets_up of $((1 + 2 * WORKERS)) targets up;" \
    "graph: http://$PROM_ADDR/graph?g0.expr=pcp_shepherd_train_loss)"
fi
echo

# ---------------------------------------------------------------- the job
JOB_ID=$("$PCPCTL_BIN" submit --quiet "$JOB")
echo "submitted $JOB as $JOB_ID"
# In the background and waited for, so that Ctrl-C or SIGTERM reach the trap at once.
watch_status=0
"$PCPCTL_BIN" watch "$JOB_ID" &
WATCH_PID=$!
wait "$WATCH_PID" || watch_status=$?
WATCH_PID=""
echo
"$PCPCTL_BIN" workers || true
echo
if [[ -z "$PLOT" ]]; then
  if (( KEEP_STATE )); then PLOT=$STATE_DIR/loss.png; else PLOT=$PWD/loss.png; fi
fi
if "$PCPCTL_BIN" plot "$JOB_ID" --out "$PLOT" >/dev/null; then
  echo "loss plot: $PLOT (every round: pcpctl history $JOB_ID)"
else
  echo "run-local-cluster: no loss plot (see above)" >&2
fi
CHECKPOINT=$("$PCPCTL_BIN" status "$JOB_ID" | sed -n 's/^checkpoint  *//p') || true
if [[ -n "$CHECKPOINT" && "$CHECKPOINT" != "-" ]]; then
  echo "checkpoint: $CHECKPOINT"
  if (( ! KEEP_STATE )); then
    echo "(inside the temporary state folder, removed at exit: use --keep-state or --state-dir to keep it)"
  fi
  echo "---- sample ----"
  "$PCPCTL_BIN" --timeout=300 sample "$JOB_ID" || true
  echo "----------------"
fi
exit "$watch_status"
