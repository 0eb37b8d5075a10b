#!/usr/bin/env bash
# Runs every libFuzzer target (tests/fuzz) for SECONDS each (default 60), built with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer into build-fuzz/. Each target starts from
# its committed seeds (tests/fuzz/corpus/<name>/) and keeps what it learns in
# build-fuzz/corpus/<name>/; a finding is written to build-fuzz/findings/<name>/ and makes
# the script exit 1. Prints runs, execs/s and the outcome of every target.
#
#   scripts/fuzz.sh              # every target, 60 s each
#   scripts/fuzz.sh 3600 json    # one target, an hour
#   FUZZ_RUNS=10000000 scripts/fuzz.sh 3600   # each target until 10^7 runs or an hour
#
# A finding is reproduced with: build-fuzz/tests/fuzz/<name>_fuzz build-fuzz/findings/<name>/crash-*
# and, once fixed, belongs in tests/fuzz/corpus/<name>/ as a regression seed (the default
# build's ctest smoke test fuzz_<name> replays every seed).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in -h|--help) sed -n '2,15p' "$0"; exit 0;; esac
SECONDS_EACH=${1:-60}
shift || true
BUILD_DIR=${BUILD_DIR:-build-fuzz}
TARGETS=("$@")
if [[ ${#TARGETS[@]} -eq 0 ]]; then
  mapfile -t TARGETS < <(ls tests/fuzz/*_fuzz.cc | xargs -n1 basename | sed 's/_fuzz\.cc$//')
fi
command -v clang++-14 >/dev/null || { echo "fuzz.sh: clang++-14 not found (scripts/setup.sh installs clang-14 and libclang-rt-14-dev)" >&2; exit 2; }

echo "== configure $BUILD_DIR (clang-14, libFuzzer + ASan + UBSan)"
CC=clang-14 CXX=clang++-14 cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPCP_FUZZ=ON >/dev/null
echo "== build ${TARGETS[*]}"
cmake --build "$BUILD_DIR" --parallel "$(nproc)" --target "${TARGETS[@]/%/_fuzz}"

status=0
for t in "${TARGETS[@]}"; do
  corpus="$BUILD_DIR/corpus/$t"
  findings="$BUILD_DIR/findings/$t"
  mkdir -p "$corpus" "$findings"
  log="$BUILD_DIR/fuzz-$t.log"
  echo "== $t: ${SECONDS_EACH} s"
  set +e
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$BUILD_DIR/tests/fuzz/${t}_fuzz" "$corpus" "tests/fuzz/corpus/$t" \
    -artifact_prefix="$findings/" -max_total_time="$SECONDS_EACH" -timeout=10 \
    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 ${FUZZ_RUNS:+-runs=$FUZZ_RUNS} >"$log" 2>&1
  rc=$?
  set -e
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | awk '{s+=$2} END {print s+0}')
  speed=$(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | awk '{s+=$2} END {print s+0}')
  if [[ $rc -eq 0 ]]; then
    echo "   $t: $runs runs in $(grep -oE 'Done [0-9]+ runs in [0-9]+ second' "$log" | tail -1 | awk '{print $5}') s, $speed execs/s, no finding (log $log)"
  else
    echo "   $t: FINDING after $runs runs (exit $rc): see $log and $findings/"
    grep -m3 -E 'ERROR: |runtime error|fuzz property failed' "$log" | sed 's/^/   /' || true
    status=1
  fi
done
exit $status
