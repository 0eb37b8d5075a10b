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

# Build dependencies, then test-only references (PyTorch oracle, mlir-opt, Prometheus,
# lavapipe for Vulkan tests without a GPU, reflection protos for the grpcurl-style test,
# matplotlib for scripts/plot-loss.py).
PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libgrpc++-dev protobuf-compiler-grpc protobuf-compiler libprotobuf-dev grpc-proto
  libabsl-dev libopenblas-dev
  libvulkan-dev libshaderc-dev glslc glslang-tools mesa-vulkan-drivers vulkan-tools
  prometheus-cpp-dev libyaml-cpp-dev libspdlog-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-torch python3-numpy python3-matplotlib
  prometheus mlir-15-tools systemd
  clang-14 libclang-rt-14-dev   # scripts/fuzz.sh: libFuzzer, ASan, UBSan
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
