#!/usr/bin/env bash
# Job state in bytes (issue 31 item 4): a real pcp-shepherd takes CYCLES submit/cancel cycles
# of KIB-KiB job files, then restarts; prints its RSS, the state folder's bytes and the restart
# time (tests/services/e2e/job_state_test.cc, run with a larger load). Opt-in: 10,000 cycles
# take about 3 minutes on 2 cores. Results: bench/results/job_state.md.
#
#   bench/job_state.sh [CYCLES=10000] [KIB=256]        (BUILD_DIR, default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
cmake --build "$build" --target job_state_test pcp-shepherd >/dev/null
PCP_JOB_STATE_CYCLES="${1:-10000}" PCP_JOB_STATE_YAML_KIB="${2:-256}" \
  "$build/tests/services/e2e/job_state_test" --gtest_filter='*Cycles*' | grep -E 'cycles|OK|FAILED|Failure'
