#!/usr/bin/env bash
# Runs openxla/stablehlo's public test suites through PCP's parser, reference interpreter and
# CPU backend, and writes the per-op table to bench/results/stablehlo_conformance.md.
# Opt-in, not in CI: the suites are not ours and are not committed; bring a snapshot.
#
#   scripts/stablehlo-conformance.sh DIR [COMMIT]
#
# DIR has openxla/stablehlo's layout (DIR/stablehlo/testdata, DIR/stablehlo/tests/interpret).
# COMMIT names the snapshot in the table; without it, DIR/.commit or DIR's git HEAD is used.
# Extra flags for the tool go in PCP_CONFORMANCE_FLAGS (e.g. "--backends=cpu,vulkan").
# Builds pcp-stablehlo-conformance in ${BUILD_DIR:-build} first if needed.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 DIR [COMMIT]" >&2
  exit 2
fi
DIR=$1
COMMIT=${2:-}
# The suites, one directory each (the tool does not descend): testdata/dynamic is left out,
# its modules hold no checks (they test serialization only).
SUITES=("$DIR/stablehlo/testdata" "$DIR/stablehlo/testdata/quantized" "$DIR/stablehlo/tests/interpret"
        "$DIR/stablehlo/tests/interpret/chlo")
for suite in "${SUITES[@]}"; do
  if [[ ! -d $suite ]]; then
    echo "$0: $suite is not a directory (DIR must have openxla/stablehlo's layout)" >&2
    exit 2
  fi
done
if [[ -z $COMMIT && -f $DIR/.commit ]]; then
  COMMIT=$(head -n1 "$DIR/.commit")
elif [[ -z $COMMIT ]] && git -C "$DIR" rev-parse HEAD >/dev/null 2>&1; then
  COMMIT=$(git -C "$DIR" rev-parse HEAD)
fi

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
if [[ ! -f $BUILD_DIR/build.ninja ]]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build "$BUILD_DIR" --target pcp-stablehlo-conformance
TOOL=$BUILD_DIR/tools/pcp-stablehlo-conformance/pcp-stablehlo-conformance

OUT=$ROOT/bench/results/stablehlo_conformance.md
mkdir -p "$(dirname "$OUT")"
# shellcheck disable=SC2086  # PCP_CONFORMANCE_FLAGS is a list of flags
"$TOOL" --markdown="$OUT" --snapshot="${COMMIT:-unknown commit}" \
  --note="not run: testdata/dynamic (its modules hold no checks: they test serialization only)" \
  ${PCP_CONFORMANCE_FLAGS:-} "${SUITES[@]}"
echo "table: $OUT"
