#!/usr/bin/env bash
# Installs every build and test dependency of PCP from Debian 12's packages, then
# configures (Release, Ninja) and builds into ./build.
#
# Usage: scripts/setup.sh            # install + build
#        SKIP_APT=1 scripts/setup.sh # build only (dependencies already present)
#        BUILD_DIR=out scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
BUILD_TYPE=${BUILD_TYPE:-Release}

# Every package that the build or a test uses directly (not just what happens to pull it
# in), and nothing else.
PACKAGES=(
  # toolchain; pkg-config finds OpenBLAS (cmake/PcpDependencies.cmake)
  build-essential cmake ninja-build pkg-config git
  # gRPC and protobuf; grpc-proto has the reflection .proto that a test's client compiles
  libgrpc++-dev protobuf-compiler-grpc protobuf-compiler libprotobuf-dev grpc-proto
  libabsl-dev libopenblas-dev
  # libs/base/include/pcp/base/absl_fmt.h includes <fmt/format.h> itself
  libfmt-dev
  # Vulkan backend: find_package(Vulkan COMPONENTS shaderc_combined) and find_package(glslang)
  # (glslang-dev). glslang-tools: glslang-dev's CMake package declares glslangValidator as an
  # imported target and refuses to load when /usr/bin/glslangValidator is missing.
  # mesa-vulkan-drivers: lavapipe, the Vulkan device of the tests on machines without a GPU.
  libvulkan-dev libshaderc-dev glslang-dev glslang-tools mesa-vulkan-drivers
  prometheus-cpp-dev libyaml-cpp-dev libspdlog-dev
  # libs/plot: PNG compression (pcpctl plot)
  zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # Test-only references: the PyTorch oracle (/usr/bin/python3 with torch and numpy),
  # matplotlib for scripts/plot-loss.py, the real Prometheus server, LLVM's mlir-opt, and
  # systemd-analyze for the unit files.
  python3 python3-torch python3-numpy python3-matplotlib
  prometheus mlir-15-tools systemd openssl   # openssl: run-local-cluster.sh --tls, auth_e2e_test
  # scripts/fuzz.sh and sanitizer builds: clang's libFuzzer, ASan, UBSan
  clang-14 libclang-rt-14-dev
  # scripts/check-format.sh (ctest: format_test)
  clang-format-14
)

if [[ "${SKIP_APT:-0}" != 1 ]]; then
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi
  echo "== apt: installing ${#PACKAGES[@]} packages"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}"
fi

echo "== configure ($BUILD_TYPE) in $BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE"
echo "== build"
cmake --build "$BUILD_DIR" --parallel "$(nproc)"
echo "== built: $BUILD_DIR (run scripts/test.sh to test)"
