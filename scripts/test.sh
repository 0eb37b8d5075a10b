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
  # Sanitizer reports fail the test that caused them; leaks are reported at exit. A failed
  # huge allocation throws std::bad_alloc as in a normal build (allocator_may_return_null),
  # which the shepherd turns into a failed job (admission_test).
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1:verify_asan_link_order=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
  # Races inside Debian's uninstrumented gRPC and abseil are silenced (tests/sanitizers/tsan.supp).
  export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/sanitizers/tsan.supp}
fi
cmake --build "$BUILD_DIR" --parallel "$(nproc)"
if [[ "$BUILD_DIR" == build-address ]]; then
  # Keeps Mesa's Vulkan drivers loaded after vkDestroyInstance, so LeakSanitizer does not take
  # their live blocks for leaks (tests/sanitizers/keep_loaded.c).
  export LD_PRELOAD="$PWD/$BUILD_DIR/tests/sanitizers/libpcp_keep_loaded.so${LD_PRELOAD:+:$LD_PRELOAD}"
fi
exec ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" "$@"
