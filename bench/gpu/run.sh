#!/usr/bin/env bash
# The GPU run of issue 34 in one script: the Vulkan conformance tests, PCP's matmul and GPT
# train steps (f32, bf16, f16) and PyTorch's on the same GPU, every figure into one folder
# (results.md: the table; figures.jsonl: every number; logs/: every step's output, packed as
# logs.tar.gz when the folder is the device tool's $OUT, which brings back at most 8 files).
#
#   bench/gpu/pack.sh                      # here (Debian 12): build + pack .gpu/pcp-gpu.tar.xz
#   bench/gpu/run.sh                       # on the GPU machine (device tool: carry [".gpu"])
#   bench/gpu/run.sh --smoke               # the same path at tiny shapes (lavapipe / CPU), < 2 min
#   bench/gpu/run.sh --convergence[=N]     # instead: nanoGPT's GPU config trained N (2000) iterations
#                                          # in f32 and in bf16 (config/jobs/shakespeare_char_gpu.yaml)
#
# Options: --out DIR (default $OUT, else out/gpu), --smoke, --budget SECONDS (the whole run's
# wall-clock budget; default 510 full, 110 smoke), --bin DIR (PCP binaries to use),
# --build DIR (build here instead when no bundle: cmake + ninja, Release, -j16), --no-torch,
# --no-pcp.
#
# Where the PCP binaries come from, first that works: --bin; the bundle .gpu/pcp-gpu.tar.xz
# (bench/gpu/pack.sh: binaries + the shared libraries they need, for a machine without
# Debian's packages); a build (cmake configure + only the needed targets) when cmake, a C++
# compiler and the packages are there; else PCP's rows are "not run" and the reason is in
# env.txt. Nothing is assumed about the machine: every missing piece is printed and the run
# carries on with what works. Each step runs under `timeout`, sized from what is left of the
# budget, so the whole run ends in time (9 minutes on an H200 with the defaults).
set -u
# The build tree defines target $2 (asks ninja / make without building or regenerating).
has_target() {
  if [ -f "$1/build.ninja" ]; then ninja -C "$1" -t targets all 2>/dev/null | grep "^$2:" >/dev/null
  else make -C "$1" help 2>/dev/null | grep "\.\.\. $2\$" >/dev/null; fi
}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
START=$(date +%s)
SMOKE=0
CONVERGENCE=0
BUDGET=""
BIN=""
BUILD_DIR=""
OUT_DIR="${OUT:-}"
RUN_TORCH=1
RUN_PCP=1
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) SMOKE=1 ;;
    --convergence) CONVERGENCE=2000 ;;
    --convergence=*) CONVERGENCE="${1#*=}" ;;
    --out) OUT_DIR="$2"; shift ;;
    --out=*) OUT_DIR="${1#*=}" ;;
    --budget) BUDGET="$2"; shift ;;
    --budget=*) BUDGET="${1#*=}" ;;
    --bin) BIN="$2"; shift ;;
    --bin=*) BIN="${1#*=}" ;;
    --build) BUILD_DIR="$2"; shift ;;
    --build=*) BUILD_DIR="${1#*=}" ;;
    --no-torch) RUN_TORCH=0 ;;
    --no-pcp) RUN_PCP=0 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$OUT_DIR" ] || OUT_DIR="$ROOT/out/gpu"
[ -n "$BUDGET" ] || BUDGET=$([ $SMOKE = 1 ] && echo 110 || echo 510)
mkdir -p "$OUT_DIR/logs"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
LOGS="$OUT_DIR/logs"
FIG="$OUT_DIR/figures.jsonl"
ENV_TXT="$OUT_DIR/env.txt"
: >"$FIG"
: >"$ENV_TXT"
: >"$OUT_DIR/steps.tsv"

note() { echo "$*" | tee -a "$ENV_TXT"; }
left() { echo $((BUDGET - ($(date +%s) - START))); }
# run_step NAME CAP_SECONDS CMD...: runs CMD under timeout (its cap, or what is left of the
# budget less 15 s for the report), output to logs/NAME.log; records NAME, rc, seconds.
run_step() {
  local name="$1" cap="$2"
  shift 2
  local l t0 rc
  l=$(( $(left) - 15 ))
  [ "$cap" -lt "$l" ] || cap="$l"
  if [ "$cap" -lt 5 ]; then
    echo "== $name: skipped (budget spent)" | tee "$LOGS/$name.log"
    printf '%s\tskipped\t0\n' "$name" >>"$OUT_DIR/steps.tsv"
    return 124
  fi
  echo "== $name (timeout ${cap}s): $*" | tee "$LOGS/$name.log"
  t0=$(date +%s)
  timeout -k 5 "$cap" "$@" >>"$LOGS/$name.log" 2>&1
  rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" "$(($(date +%s) - t0))" >>"$OUT_DIR/steps.tsv"
  echo "   rc $rc, $(($(date +%s) - t0)) s" | tee -a "$LOGS/$name.log"
  return $rc
}

# ---------------------------------------------------------------- the machine
note "# bench/gpu/run.sh $([ $SMOKE = 1 ] && echo --smoke) on $(hostname) at $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
note "tree: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '(no git)')$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' + local changes')"
note "os: $( (. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME") || uname -a); cpus $(nproc)"
if command -v nvidia-smi >/dev/null 2>&1; then
  note "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | head -3)"
else
  note "gpu: no nvidia-smi"
fi
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
for tool in cmake ninja c++ g++ pkg-config glslc vulkaninfo; do
  if command -v $tool >/dev/null 2>&1; then note "have $tool: $(command -v $tool)"; else note "missing: $tool"; fi
done
if ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1'; then note "vulkan loader: system"; else note "vulkan loader: not in ldconfig (the bundle carries one)"; fi
# The NVIDIA Vulkan driver of the device machines lives under /usr/local/nvidia; the loader
# finds it only when told (bench/results/vulkan_h100.md).
for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
           /etc/vulkan/icd.d/nvidia_icd.json; do
  if [ -f "$icd" ]; then
    note "nvidia vulkan icd: $icd"
    if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ]; then export VK_DRIVER_FILES="$icd" VK_ICD_FILENAMES="$icd"; fi
    break
  fi
done
[ -n "${VK_DRIVER_FILES:-}" ] || note "no NVIDIA Vulkan ICD file found: the loader's default search (lavapipe where installed)"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"

PY=""
for p in python3 /usr/bin/python3; do  # finds torch without importing it (seconds saved)
  if command -v "$p" >/dev/null 2>&1 &&
     "$p" -c 'import importlib.util as u, sys; sys.exit(u.find_spec("torch") is None)' 2>/dev/null; then
    PY=$(command -v "$p"); break
  fi
done
if [ -n "$PY" ]; then
  note "torch: in $PY (its version and device: the torch step's lines, figures.jsonl)"
else
  note "missing: python3 with torch (PyTorch columns not run)"
  RUN_TORCH=0
fi

# ---------------------------------------------------------------- PCP binaries
TARGETS="pcp_vulkan_bench pcp-local vulkan_dot_tile_test vulkan_half_buffer_test vulkan_attention_test vulkan_backend_test backend_conformance_test gpt_train_step_test mixed_precision_test cooperative_matrix_test vulkan_row_kernel_test vulkan_reduction_test vulkan_map_group_test vulkan_upload_test"
LIBS=""
find_bin() {  # the path of binary $1 under $BIN (flat bundle) or a build tree
  local d
  for d in "$BIN" "$BIN/bench" "$BIN/tests/libs/kernels" "$BIN/tests/libs/autodiff"; do
    if [ -x "$d/$1" ] && [ -f "$d/$1" ]; then echo "$d/$1"; return; fi
  done
  find "$BIN" -type f -name "$1" -perm -u+x 2>/dev/null | head -1
}
if [ $RUN_PCP = 1 ] && [ -z "$BIN" ]; then
  if [ -f "$ROOT/.gpu/pcp-gpu.tar.xz" ]; then
    rm -rf /tmp/pcp-gpu && mkdir -p /tmp/pcp-gpu
    if tar -xJf "$ROOT/.gpu/pcp-gpu.tar.xz" -C /tmp/pcp-gpu; then
      BIN=/tmp/pcp-gpu/bin
      LIBS=/tmp/pcp-gpu/lib
      note "pcp binaries: bundle .gpu/pcp-gpu.tar.xz ($(cat /tmp/pcp-gpu/MANIFEST 2>/dev/null | head -1))"
    else
      note "pcp binaries: the bundle .gpu/pcp-gpu.tar.xz does not unpack"
    fi
  fi
fi
if [ $RUN_PCP = 1 ] && [ -z "$BIN" ]; then
  [ -n "$BUILD_DIR" ] || BUILD_DIR=$([ $SMOKE = 1 ] && [ -f "$ROOT/build/CMakeCache.txt" ] && echo "$ROOT/build" || echo "$ROOT/build-gpu")
  if command -v cmake >/dev/null 2>&1 && { command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1; }; then
    JOBS=$([ $SMOKE = 1 ] && echo 2 || echo 16)
    LOCK=""
    [ -e /tmp/pcp-build.lock ] && LOCK="flock /tmp/pcp-build.lock"  # the shared development checkout's rule
    if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
      GEN=""; command -v ninja >/dev/null 2>&1 && GEN="-G Ninja"
      run_step configure 240 $LOCK cmake -S "$ROOT" -B "$BUILD_DIR" $GEN -DCMAKE_BUILD_TYPE=Release
    fi
    if [ -f "$BUILD_DIR/CMakeCache.txt" ]; then
      # Only the targets this build defines (cooperative_matrix_test may be absent).
      want=""
      for t in $TARGETS; do
        if has_target "$BUILD_DIR" "$t"; then want="$want $t"; fi
      done
      [ -n "$want" ] || want="$TARGETS"
      run_step build 420 $LOCK cmake --build "$BUILD_DIR" -j "$JOBS" --target $want && BIN="$BUILD_DIR"
      [ -n "$BIN" ] && note "pcp binaries: built in $BUILD_DIR ($want)" || note "pcp binaries: the build failed (logs/build.log)"
    else
      note "pcp binaries: cmake could not configure (logs/configure.log: missing packages?)"
    fi
  else
    note "pcp binaries: none (no bundle, no cmake / C++ compiler to build one)"
  fi
fi
[ -n "$BIN" ] || RUN_PCP=0
# PCP binaries run with the bundle's libraries (python never does).
PCPENV=(env)
[ -z "$LIBS" ] || PCPENV=(env "LD_LIBRARY_PATH=$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")

# ---------------------------------------------------------------- shapes
if [ $SMOKE = 1 ]; then
  MATMUL_N=64
  NANO="--n_layer=1 --n_head=2 --n_embd=32 --block_size=16 --batch_size=2 --vocab_size=65"
  NANO_JSON='"n_layer": 1, "n_head": 2, "n_embd": 32, "block_size": 16, "batch_size": 2, "vocab_size": 65'
  # The GPT-2 rows' path at the same tiny shape (its shaders are then compiled once).
  GPT2="$NANO"
  GPT2_JSON="$NANO_JSON"
  NANO_STEPS="--warmup=1 --steps=1"; GPT2_STEPS="--warmup=1 --steps=1"
  TORCH_STEPS='"warmup": 1, "steps": 1'
  CONF_FILTER='*vulkan*'
  TEST_CAP=60
else
  MATMUL_N=4096
  # nanoGPT's shakespeare_char GPU config (config/train_shakespeare_char.py: bias off).
  NANO="--n_layer=6 --n_head=6 --n_embd=384 --block_size=256 --batch_size=64 --vocab_size=65"
  NANO_JSON='"n_layer": 6, "n_head": 6, "n_embd": 384, "block_size": 256, "batch_size": 64, "vocab_size": 65'
  # GPT-2 small (124M with nanoGPT's padded vocabulary 50304), nanoGPT's micro-batch 12.
  GPT2="--n_layer=12 --n_head=12 --n_embd=768 --block_size=1024 --batch_size=12 --vocab_size=50304"
  GPT2_JSON='"n_layer": 12, "n_head": 12, "n_embd": 768, "block_size": 1024, "batch_size": 12, "vocab_size": 50304'
  NANO_STEPS="--warmup=2 --steps=10"; GPT2_STEPS="--warmup=2 --steps=5"
  TORCH_STEPS='"warmup": 3, "steps": 10'
  CONF_FILTER='*vulkan*'
  TEST_CAP=150
fi

# ---------------------------------------------------------------- convergence (--convergence)
# Issue 34's "bf16 reaches val within 0.02 of f32 after 2000 steps": pcp-local trains the job
# in f32 then bf16 on Vulkan, evaluating every 500 iterations over 50 batches (the job's 200
# every 250 would cost a third of the run); each precision gets half of what is left.
if [ "$CONVERGENCE" != 0 ] && [ $RUN_PCP = 1 ]; then
  PL=$(find_bin pcp-local)
  if [ -z "$PL" ]; then
    note "pcp-local: not built (no convergence run)"
  else
    for p in f32 bf16; do
      job="$OUT_DIR/convergence_$p.yaml"
      sed -e "s|^  precision: .*|  precision: $p|" -e "s|^  eval_interval: .*|  eval_interval: 500|" \
          -e "s|^  eval_iters: .*|  eval_iters: 50|" -e "s|path: \.\./\.\./data|path: $ROOT/data|" \
          "$ROOT/config/jobs/shakespeare_char_gpu.yaml" >"$job"
      if [ $SMOKE = 1 ]; then  # the same path on a model lavapipe trains in seconds
        sed -i -e "s|^  block_size: .*|  block_size: 16|" -e "s|^  n_layer: .*|  n_layer: 1|" \
               -e "s|^  n_head: .*|  n_head: 2|" -e "s|^  n_embd: .*|  n_embd: 32|" \
               -e "s|^  batch_size: .*|  batch_size: 4|" -e "s|^  eval_iters: .*|  eval_iters: 2|" "$job"
      fi
      share=1; [ "$p" = f32 ] && share=2
      cap=$(( ($(left) - 20) / share ))
      run_step "convergence_$p" "$cap" "${PCPENV[@]}" "$PL" train "$job" --backend=vulkan \
        --max_iters="$CONVERGENCE" --out_dir="/tmp/pcp-convergence-$p"
      # "step N: train loss A, val loss B" lines: the last one reached, even on a timeout.
      last=$(grep -E '^step [0-9]+: train loss' "$LOGS/convergence_$p.log" | tail -1)
      ms=$(grep -E '^done: ' "$LOGS/convergence_$p.log" | sed -E 's/.* ([0-9.]+) ms\/step.*/\1/' | tail -1)
      if [ -n "$last" ]; then
        echo "$last" | sed -E "s/^step ([0-9]+): train loss ([0-9.]+), val loss ([0-9.]+).*/{\"kind\": \"convergence\", \"precision\": \"$p\", \"iters\": \1, \"train_loss\": \2, \"val_loss\": \3, \"ms_per_step\": ${ms:-null}, \"target_iters\": $CONVERGENCE}/" >>"$FIG"
      fi
    done
  fi
fi
# A convergence run is all the run does.
if [ "$CONVERGENCE" != 0 ]; then RUN_PCP=0; RUN_TORCH=0; fi

# ---------------------------------------------------------------- conformance
if [ $RUN_PCP = 1 ]; then
  for t in vulkan_backend_test vulkan_dot_tile_test vulkan_half_buffer_test vulkan_attention_test "backend_conformance_test --gtest_filter=$CONF_FILTER" gpt_train_step_test \
           mixed_precision_test cooperative_matrix_test vulkan_row_kernel_test vulkan_reduction_test \
           vulkan_map_group_test vulkan_upload_test; do
    name=${t%% *}
    args=""; [ "$name" = "$t" ] || args=${t#* }
    exe=$(find_bin "$name")
    if [ -z "$exe" ]; then note "test $name: not built"; continue; fi
    run_step "$name" "$TEST_CAP" "${PCPENV[@]}" "$exe" $args
  done
fi

# ---------------------------------------------------------------- PCP benches
if [ $RUN_PCP = 1 ]; then
  VB=$(find_bin pcp_vulkan_bench)
  if [ -n "$VB" ]; then
    # The device, its features and the matmul path each precision picks.
    run_step vulkan_device 30 "${PCPENV[@]}" "$VB" --info --cpu=false --sgemm=false --gpt=false
    for p in f32 bf16 f16; do
      run_step "matmul_$p" 60 "${PCPENV[@]}" "$VB" --cpu=false --gpt=false --sizes=$MATMUL_N --precision=$p --json="$FIG"
    done
    # The f16 product on the plain shaders too (in the switches table): what the tensor cores bring.
    run_step matmul_f16_plain_shaders 60 "${PCPENV[@]}" PCP_VULKAN_COOPMAT=0 "$VB" --cpu=false --gpt=false \
      --sizes=$MATMUL_N --precision=f16 --json="$FIG" --workload=matmul@no_coopmat
    # The f32 product on the 64 x 64 tile alone (the switches table): what the 128 x 128 tile brings.
    run_step matmul_f32_tile64 60 "${PCPENV[@]}" PCP_VULKAN_DOT_TILE=64 "$VB" --cpu=false --gpt=false \
      --sizes=$MATMUL_N --precision=f32 --json="$FIG" --workload=matmul@tile64
    for p in f32 bf16 f16; do
      run_step "pcp_nanogpt_$p" 90 "${PCPENV[@]}" "$VB" --cpu=false --sgemm=false --bias=false $NANO $NANO_STEPS \
        --precision=$p --json="$FIG" --workload=nanogpt
    done
    for p in f32 bf16 f16; do
      run_step "pcp_gpt2_$p" 120 "${PCPENV[@]}" "$VB" --cpu=false --sgemm=false --bias=false $GPT2 $GPT2_STEPS \
        --precision=$p --json="$FIG" --workload=gpt2
    done
  else
    note "pcp_vulkan_bench: not built"
  fi
fi

# ---------------------------------------------------------------- PyTorch
if [ $RUN_TORCH = 1 ]; then
  # One process (one import of torch) for every PyTorch figure.
  NANO_T="{$NANO_JSON, \"bias\": false, \"threads\": $(nproc), $TORCH_STEPS}"
  GPT2_T="{$GPT2_JSON, \"bias\": false, \"threads\": $(nproc), $TORCH_STEPS}"
  RUNS="[{\"workload\": \"matmul\", \"precision\": \"f32\", \"matmul\": $MATMUL_N},
         {\"workload\": \"matmul\", \"precision\": \"bf16\", \"matmul\": $MATMUL_N},
         {\"workload\": \"nanogpt\", \"precision\": \"f32\", \"config\": $NANO_T},
         {\"workload\": \"nanogpt\", \"precision\": \"bf16\", \"config\": $NANO_T},
         {\"workload\": \"gpt2\", \"precision\": \"f32\", \"config\": $GPT2_T},
         {\"workload\": \"gpt2\", \"precision\": \"bf16\", \"config\": $GPT2_T}]"
  run_step torch 240 env PYTHONUNBUFFERED=1 "$PY" "$ROOT/bench/torch_gpt_step.py" --device cuda --suite "$RUNS"
  grep '^{"kind": "torch"' "$LOGS/torch.log" >>"$FIG"
fi

# ---------------------------------------------------------------- extras, last (the budget's rest)
# Each default figure again with one of the Vulkan backend's switches off (results.md's switches
# table), the newest first, then where the bf16 and f16 steps' time goes.
if [ $RUN_PCP = 1 ] && [ -n "${VB:-}" ]; then
  # Fused attention (pcp.attention ops, FlashAttention's kernels; a switch on, not off): what
  # not storing the block x block tensors brings, and what its unfused row loops cost.
  for p in f32 bf16; do
    run_step "pcp_nanogpt_${p}_fused_attention" 90 "${PCPENV[@]}" "$VB" --cpu=false --sgemm=false --bias=false \
      $NANO $NANO_STEPS --precision=$p --attention=fused --json="$FIG" --workload=nanogpt@fused_attention
  done
  run_step pcp_gpt2_bf16_fused_attention 120 "${PCPENV[@]}" "$VB" --cpu=false --sgemm=false --bias=false \
    $GPT2 $GPT2_STEPS --precision=bf16 --attention=fused --json="$FIG" --workload=gpt2@fused_attention
  # Every product on the 64 x 64 tile (plain and tensor-core kernels): what the 128 x 128 tile brings.
  for p in f32 bf16 f16; do
    run_step "pcp_nanogpt_${p}_tile64" 90 "${PCPENV[@]}" PCP_VULKAN_DOT_TILE=64 "$VB" --cpu=false --sgemm=false \
      --bias=false $NANO $NANO_STEPS --precision=$p --json="$FIG" --workload=nanogpt@tile64
  done
  # The bf16 step's rounded operands widened to f32 buffers: what half buffers bring.
  run_step pcp_nanogpt_bf16_no_half_buffers 90 "${PCPENV[@]}" PCP_VULKAN_HALF_BUFFERS=0 "$VB" --cpu=false \
    --sgemm=false --bias=false $NANO $NANO_STEPS --precision=bf16 --json="$FIG" --workload=nanogpt@no_half_buffers
  # Per-kernel GPU times.
  for p in bf16 f16; do
    run_step "pcp_nanogpt_${p}_profile" 60 "${PCPENV[@]}" PCP_VULKAN_PROFILE=1 "$VB" --cpu=false --sgemm=false \
      --bias=false $NANO $NANO_STEPS --precision=$p
  done
  run_step pcp_gpt2_f32_tile64 120 "${PCPENV[@]}" PCP_VULKAN_DOT_TILE=64 "$VB" --cpu=false --sgemm=false --bias=false \
    $GPT2 $GPT2_STEPS --precision=f32 --json="$FIG" --workload=gpt2@tile64
  # Without row kernels: what fusing softmax / LayerNorm rows brings.
  run_step pcp_nanogpt_f32_no_row_kernels 90 "${PCPENV[@]}" PCP_VULKAN_ROW_KERNELS=0 "$VB" --cpu=false --sgemm=false \
    --bias=false $NANO $NANO_STEPS --precision=f32 --json="$FIG" --workload=nanogpt@no_row_kernels
  # Without split reductions: the gradient norm's sums of squares on one work group each.
  run_step pcp_nanogpt_f32_no_split_reductions 90 "${PCPENV[@]}" PCP_VULKAN_SPLIT_REDUCTIONS=0 "$VB" --cpu=false \
    --sgemm=false --bias=false $NANO $NANO_STEPS --precision=f32 --json="$FIG" --workload=nanogpt@no_split_reductions
  # Without map groups and reduction groups: AdamW's four kernels per parameter, a split
  # reduction's two dispatches per sum of squares.
  run_step pcp_nanogpt_f32_no_kernel_groups 90 "${PCPENV[@]}" PCP_VULKAN_MAP_GROUPS=0 PCP_VULKAN_REDUCTION_GROUPS=0 \
    "$VB" --cpu=false --sgemm=false --bias=false $NANO $NANO_STEPS --precision=f32 --json="$FIG" \
    --workload=nanogpt@no_kernel_groups
fi

# ---------------------------------------------------------------- the table
REPORT_PY="$PY"
[ -n "$REPORT_PY" ] || REPORT_PY=$(command -v python3 || echo /usr/bin/python3)
"$REPORT_PY" "$ROOT/bench/gpu/report.py" --out "$OUT_DIR" --gpu "${GPU_NAME:-}" $([ $SMOKE = 1 ] && echo --smoke)
rc=$?
note "total: $(($(date +%s) - START)) s of a ${BUDGET} s budget"
# The device tool brings back at most 8 files from $OUT: there, the logs travel as one archive.
if [ -n "${OUT:-}" ] && [ "$OUT_DIR" = "$(cd "$OUT" 2>/dev/null && pwd)" ]; then
  tar -czf "$OUT_DIR/logs.tar.gz" -C "$OUT_DIR" logs && rm -rf "$LOGS"
fi
exit $rc
