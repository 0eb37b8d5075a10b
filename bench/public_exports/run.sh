#!/usr/bin/env bash
# Public exports, imported unmodified: checks each against an oracle, trains the forward-only
# one through model.logits and samples it. Opt-in, not in CI (the exports are not ours and
# are not committed; bench/public_exports/README.md says where to get them).
#
#   bench/public_exports/run.sh DIR [--quick]
#
# DIR holds pt_bert.mlir and searchless_chess_9m.mlir (GleasonK/stablehlo-exports, exports/)
# and BertTiny_BW_input.mlir (bytedance/byteir, compiler/test/E2E/CUDA/BertTiny/BW/input.mlir).
# --quick: the checks only, no 300-step training. Builds the tools in ${BUILD_DIR:-build}.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 || ( $# -eq 2 && $2 != --quick ) ]]; then
  echo "usage: $0 DIR [--quick]" >&2
  exit 2
fi
DIR=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/bench/public_exports
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
for f in pt_bert.mlir searchless_chess_9m.mlir BertTiny_BW_input.mlir; do
  [[ -f $DIR/$f ]] || { echo "$0: $DIR/$f is missing (see $HERE/README.md)" >&2; exit 2; }
done
cmake --build "$BUILD_DIR" --target pcp-stablehlo-run pcp-local
RUN=$BUILD_DIR/tools/pcp-stablehlo-run/pcp-stablehlo-run
LOCAL=$BUILD_DIR/tools/pcp-local/pcp-local
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

echo "== pt_bert.mlir (HuggingFace bert-base-uncased via torch_xla2): PCP vs BERT in PyTorch"
for backend in interpreter cpu; do
  /usr/bin/python3 "$HERE/pt_bert_oracle.py" "$DIR/pt_bert.mlir" --tool="$RUN" --backend=$backend --work="$WORK/bert"
done
echo "== BertTiny_BW_input.mlir (ByteIR's torch-frontend backward graph): CPU backend vs interpreter"
/usr/bin/python3 "$HERE/agree.py" "$DIR/BertTiny_BW_input.mlir" --tool="$RUN" --work="$WORK/berttiny"
echo "== searchless_chess_9m.mlir (JAX): CPU backend vs interpreter"
/usr/bin/python3 "$HERE/agree.py" "$DIR/searchless_chess_9m.mlir" --tool="$RUN" --work="$WORK/chess"
[[ ${2:-} == --quick ]] && exit 0

echo "== searchless_chess_9m.mlir: 300 steps through model.logits, then a sample"
mkdir -p "$HERE/exports"
ln -sf "$DIR/searchless_chess_9m.mlir" "$HERE/exports/searchless_chess_9m.mlir"
"$LOCAL" train "$HERE/searchless_chess_9m.yaml"
"$LOCAL" sample "$ROOT/out/searchless_chess_9m/ckpt.safetensors" --max_new_tokens=200
