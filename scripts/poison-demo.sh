#!/usr/bin/env bash
# Poisoning demonstration: the same reduced job on a local cluster of 3 workers, clean and
# then with one worker sending in turn Δ × 1000, −Δ × 10 and noise of 20 × its norm (the
# worker's test-only --fault_delta option). Prints the screening events, GetJob's summary,
# the shepherd's pcp_shepherd_deltas_refused_total and both final val losses.
#
# Usage: scripts/poison-demo.sh [poison_demo flags...]
#   e.g. --job=config/jobs/shakespeare_char.yaml --rounds=10 --inner_steps=20 --eval_iters=50
#        --keep=DIR (keep both clusters' logs and checkpoints)
# Needs the build (build/tests/services/e2e/poison_demo; BUILD_DIR to change). Runs niced.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
DEMO=$BUILD_DIR/tests/services/e2e/poison_demo
[[ -x "$DEMO" ]] || { echo "poison-demo: missing $DEMO: build first (ninja -C $BUILD_DIR poison_demo)" >&2; exit 1; }
cd "$ROOT"
exec nice -n 10 "$DEMO" "$@"
