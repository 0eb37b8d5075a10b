#!/usr/bin/env bash
# Compiles every source file of the tree with clang-14 into build-clang/, warnings as errors;
# exits non-zero if any file fails (after trying them all, so every break is listed). GCC
# builds the product, but the fuzzers and every clang user need the tree to compile with
# clang too: a GCC-only construct (__builtin_shuffle, `#pragma GCC target`, a lambda that
# captures a structured binding) once broke them all unnoticed. .ci/run runs this before the
# tests.
#
#   scripts/clang-check.sh                        # into build-clang/
#   BUILD_DIR=/tmp/clang scripts/clang-check.sh
#
# The cheapest build that catches such breaks: object files only (no linking, no tests run),
# at -O0 without debug info. It still generates code, because clang reports some breaks only
# there (an intrinsic compiled without its target feature); -fsyntax-only saves only ~12 %.
# Measured on a 2-core machine: 27 CPU-minutes (407 objects), 29 minutes wall beside two other
# builds, so about 14 on idle cores; the tests' files are half of it.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in -h|--help) sed -n '2,16p' "$0"; exit 0;; esac
BUILD_DIR=${BUILD_DIR:-build-clang}
command -v clang++-14 >/dev/null || { echo "clang-check.sh: clang++-14 not found (scripts/setup.sh installs clang-14)" >&2; exit 2; }

# Every warning of the build's -Wall -Wextra (CMakeLists.txt) is an error here: clang warns
# about some things GCC does not (an unknown `#pragma GCC ...` is ignored, changing the code).
echo "== configure $BUILD_DIR (clang-14, Debug at -O0, -Werror)"
CC=clang-14 CXX=clang++-14 cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_FLAGS_DEBUG=-O0 -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DCMAKE_COMPILE_WARNING_AS_ERROR=ON >/dev/null

# Every object file that the build would compile (ninja builds what they need first: the
# generated protobuf sources, and the few executables that a target names as a dependency).
mapfile -t objects < <(ninja -C "$BUILD_DIR" -t targets all | sed -n 's/\.o: C\(XX\)\?_COMPILER_.*/.o/p')
echo "== compile ${#objects[@]} object files"
start=$(date +%s)
ninja -C "$BUILD_DIR" -k 0 -j "$(nproc)" "${objects[@]}"
echo "== clang-14 compiled the tree in $(( $(date +%s) - start )) s"
