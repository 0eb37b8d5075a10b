#!/usr/bin/env bash
# Runs the whole test suite with ctest against ./build (run scripts/setup.sh first).
#   scripts/test.sh                 # everything
#   scripts/test.sh -R autodiff     # extra arguments go to ctest
#   scripts/test.sh --sanitize=address [-R ...]   # ASan+UBSan build in build-address/
#   scripts/test.sh --sanitize=thread -L tsan     # TSan build in build-thread/, the threaded parts
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
if [[ "${1:-}" == --sanitize=* ]]; then
  kind=${1#--sanitize=}
  shift
  BUILD_DIR=build-$kind
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPCP_SANITIZE="$kind"
  # Sanitizer reports fail the test that caused them; leaks are reported at exit.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
  export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
fi
cmake --build "$BUILD_DIR" --parallel "$(nproc)"
exec ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" "$@"
