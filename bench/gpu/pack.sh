#!/usr/bin/env bash
# Builds what bench/gpu/run.sh runs and packs it, with every shared library it needs beyond
# the C library, into .gpu/pcp-gpu.tar.xz, for a GPU machine without Debian's packages (the
# device machines have CUDA, PyTorch and cmake but not gRPC, abseil, OpenBLAS, shaderc or the
# Vulkan loader). The device tool carries it: run(carry=[".gpu"], command="bench/gpu/run.sh").
#
#   bench/gpu/pack.sh [BUILD_DIR]          (default build/; Release or RelWithDebInfo)
#
# Binaries are stripped; the libraries are those ldd resolves (not libc, libm, ld-linux),
# plus libglvnd's libGLX / libGLdispatch (NVIDIA's Vulkan driver is libGLX_nvidia.so.0 and
# needs them: bench/results/vulkan_h100.md). About 25 MB compressed.
set -euo pipefail
# The build tree defines target $2 (asks ninja / make without building or regenerating).
has_target() {
  if [ -f "$1/build.ninja" ]; then ninja -C "$1" -t targets all 2>/dev/null | grep "^$2:" >/dev/null
  else make -C "$1" help 2>/dev/null | grep "\.\.\. $2\$" >/dev/null; fi
}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$ROOT/build}
TARGETS="pcp_vulkan_bench pcp-local vulkan_dot_tile_test vulkan_half_buffer_test vulkan_attention_test vulkan_backend_test backend_conformance_test gpt_train_step_test mixed_precision_test cooperative_matrix_test vulkan_row_kernel_test vulkan_reduction_test vulkan_map_group_test vulkan_upload_test"
LOCK=""
[ -e /tmp/pcp-build.lock ] && LOCK="flock /tmp/pcp-build.lock"  # the shared development checkout's rule
want=""
for t in $TARGETS; do
  if has_target "$BUILD" "$t"; then want="$want $t"; fi
done
[ -n "$want" ] || { echo "pack.sh: none of the targets in $BUILD" >&2; exit 1; }
$LOCK cmake --build "$BUILD" -j 2 --target $want
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/bin" "$STAGE/lib"
for t in $want; do
  exe=$(find "$BUILD" -type f -name "$t" -perm -u+x -print -quit)
  [ -n "$exe" ] || { echo "pack.sh: $t not built" >&2; exit 1; }
  strip -o "$STAGE/bin/$t" "$exe"
done
for exe in "$STAGE"/bin/*; do
  ldd "$exe" | awk '$3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|ld-linux*|libpthread.so.*|libdl.so.*|librt.so.*) continue ;;
  esac
  cp -L "$lib" "$STAGE/lib/"
done
for lib in libGLX.so.0 libGLdispatch.so.0; do
  p=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ && p == "" {p = $NF} END {print p}')
  [ -n "$p" ] && cp -L "$p" "$STAGE/lib/" || echo "pack.sh: $lib not found here (NVIDIA's Vulkan driver may need it)" >&2
done
{
  echo "built from $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD || echo '+changes') on $(hostname) at $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "binaries:$want"
  (cd "$STAGE/lib" && ls)
} >"$STAGE/MANIFEST"
mkdir -p "$ROOT/.gpu"
tar -C "$STAGE" -cJf "$ROOT/.gpu/pcp-gpu.tar.xz" bin lib MANIFEST
ls -la "$ROOT/.gpu/pcp-gpu.tar.xz"
head -2 "$STAGE/MANIFEST"
