#!/usr/bin/env bash
# Runs the whole test suite with ctest against ./build (run scripts/setup.sh first).
#   scripts/test.sh                 # everything
#   scripts/test.sh -R autodiff     # extra arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake --build "$BUILD_DIR" --parallel "$(nproc)"
exec ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" "$@"
