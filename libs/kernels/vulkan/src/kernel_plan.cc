#include "kernel_plan.h"

#include <algorithm>
#include <functional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "kernel_groups.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/base/status_macros.h"

namespace pcp::vulkan {

namespace {

bool IsHalf(DType d) { return d == DType::kF16 || d == DType::kBF16; }

// Walks the cone of instruction `inst`'s kernel: calls visit(v) once for each value its operands
// reach through inlined values (depth first), materialized ones included but not walked below.
template <typename Visit>
void WalkCone(const Function& f, const KernelPlan& plan, int inst, Visit visit) {
  std::vector<int> stack = {inst};
  absl::flat_hash_set<ValueId> seen;
  while (!stack.empty()) {
    const Instruction& i = f.instructions[static_cast<size_t>(stack.back())];
    stack.pop_back();
    for (ValueId o : i.operands) {
      if (!seen.insert(o).second) continue;
      visit(o);
      if (!plan.materialized[static_cast<size_t>(o)]) stack.push_back(plan.producer[static_cast<size_t>(o)]);
    }
  }
}

// How many materialized values instruction `inst`'s kernel loads.
int CountLoads(const Function& f, const KernelPlan& plan, int inst) {
  int loads = 0;
  WalkCone(f, plan, inst, [&](ValueId v) { loads += plan.materialized[static_cast<size_t>(v)] ? 1 : 0; });
  return loads;
}

// Keeps every kernel within `max_bindings` storage buffers (its loads and its output): a kernel
// that inlines an elementwise chain over many materialized values (a sum of 40 parameters)
// would otherwise exceed the device's limit, and pipeline creation or dispatch fails. While a
// kernel binds too many, the inlined value in its cone with the most loads that still fits in a
// kernel of its own (ties: the lowest value id) is materialized. Inlined values with two or
// more loads are not cheap (cheap values are unary layout ops), so they have one use and
// materializing one changes only this kernel; new kernels are checked in turn.
absl::Status LimitBindings(const Function& f, KernelPlan& plan, int max_bindings) {
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    const int root = plan.kernels[k].instruction;
    // Its output, and a split reduction's scratch buffer.
    const int own = plan.kernels[k].kind == KernelKind::kSplitReduce ? 2 : 1;
    while (CountLoads(f, plan, root) + own > max_bindings) {
      ValueId best = kNoValue;
      int best_loads = 1;  // materializing a value with one load saves nothing
      bool best_fits = false;
      WalkCone(f, plan, root, [&](ValueId o) {
        if (plan.materialized[static_cast<size_t>(o)]) return;
        const int loads = CountLoads(f, plan, plan.producer[static_cast<size_t>(o)]);
        const bool fits = loads + 1 <= max_bindings;
        if (loads < 2) return;
        if (best == kNoValue || (fits && !best_fits) ||
            (fits == best_fits && (loads > best_loads || (loads == best_loads && o < best)))) {
          best = o;
          best_loads = loads;
          best_fits = fits;
        }
      });
      if (best == kNoValue) {
        return absl::ResourceExhaustedError(
            absl::StrCat("vulkan backend: ", OpName(f.instructions[static_cast<size_t>(root)].op), " producing %",
                         plan.kernels[k].value, " reads more buffers than the device's limit of ", max_bindings));
      }
      plan.materialized[static_cast<size_t>(best)] = true;
      plan.kernels.push_back({KernelKind::kMap, best, plan.producer[static_cast<size_t>(best)], 1});
    }
  }
  // Kernels run in list order: keep it program order.
  std::sort(plan.kernels.begin(), plan.kernels.end(),
            [](const PlannedKernel& a, const PlannedKernel& b) { return a.instruction < b.instruction; });
  return absl::OkStatus();
}

}  // namespace

ReduceSplit ReduceSplitFor(const Function& f, const Instruction& inst) {
  ReduceSplit s;
  const TensorType& in = f.type(inst.operands[0]);
  s.extent = 1;
  for (int64_t d : inst.attrs.dims) s.extent *= in.shape[static_cast<size_t>(d)];
  s.outputs = f.type(inst.result).num_elements();
  const DType d = f.type(inst.result).dtype;
  if (inst.op != Op::kReduce || s.outputs == 0 || s.outputs >= kSplitMaxOutputs || s.extent <= kSplitSliceElements ||
      (d != DType::kF32 && d != DType::kI32 && d != DType::kI64)) {
    return s;
  }
  s.slices = std::min((s.extent + kSplitSliceElements - 1) / kSplitSliceElements, kSplitMaxSlices);
  s.slice = (s.extent + s.slices - 1) / s.slices;
  // Every slice non-empty.
  s.slices = (s.extent + s.slice - 1) / s.slice;
  return s;
}

bool WidensHalf(const Function& f, const Instruction& inst) {
  return inst.op == Op::kConvert && f.type(inst.result).dtype == DType::kF32 && IsHalf(f.type(inst.operands[0]).dtype);
}

std::vector<ValueId> OutputsOf(const PlannedKernel& k) {
  if (!k.outputs.empty()) return k.outputs;
  return {k.value};
}

absl::Status CheckSupported(const Function& f, bool half_moves) {
  PCP_RETURN_IF_ERROR(Verify(f));
  // f64 never reaches a backend: the IR lowers it to f32 first (LowerF64ToF32, passes.h).
  for (const TensorType& t : f.value_types) {
    if (t.dtype == DType::kF64) {
      return absl::UnimplementedError(absl::StrCat("vulkan backend: f64 values (", t.ToString(),
                                                   ") are not supported; lower them with LowerF64ToF32 first"));
    }
  }
  for (ValueId p : f.params) {
    if (IsHalf(f.type(p).dtype) && !half_moves) {
      return absl::UnimplementedError(absl::StrCat("vulkan backend: ", MlirName(f.type(p).dtype),
                                                   " values need 16-bit storage, which this device lacks"));
    }
  }
  for (const Instruction& inst : f.instructions) {
    const DType d = f.type(inst.result).dtype;
    bool half = IsHalf(d);
    for (ValueId o : inst.operands) half |= IsHalf(f.type(o).dtype);
    // f32 <-> bf16 / f16 converts are mixed precision's roundings (mixed_precision.h).
    const bool rounding =
        inst.op == Op::kConvert && (d == DType::kF32 || f.type(inst.operands[0]).dtype == DType::kF32);
    const bool moves = GetOpCategory(inst.op) == OpCategory::kLayout || inst.op == Op::kConstant ||
                       (inst.op == Op::kGather && !IsHalf(f.type(inst.operands[1]).dtype)) || rounding;
    if (half && (!moves || !half_moves)) {
      return absl::UnimplementedError(
          absl::StrCat("vulkan backend: ", OpName(inst.op), " on ", MlirName(d),
                       moves ? " (needs 16-bit storage)" : " (f16/bf16 values are only moved)"));
    }
  }
  for (const Instruction& inst : f.instructions) {
    if (inst.op == Op::kDotGeneral && f.type(inst.result).dtype != DType::kF32) {
      return absl::UnimplementedError(
          absl::StrCat("vulkan backend: ", OpName(inst.op), " on ", MlirName(f.type(inst.result).dtype)));
    }
    if (inst.op == Op::kIota && f.type(inst.result).dtype == DType::kBool) {
      return absl::UnimplementedError("vulkan backend: stablehlo.iota on i1");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<KernelPlan> PlanKernels(const Function& f, const PlanOptions& options) {
  PCP_RETURN_IF_ERROR(CheckSupported(f, options.half_moves));
  const size_t n = static_cast<size_t>(f.num_values());
  KernelPlan plan;
  plan.materialized.assign(n, false);
  plan.producer.assign(n, -1);
  std::vector<int> uses(n, 0);
  std::vector<bool> is_result(n, false), dense_reader(n, false);
  for (size_t i = 0; i < f.instructions.size(); ++i) {
    const Instruction& inst = f.instructions[i];
    plan.producer[static_cast<size_t>(inst.result)] = static_cast<int>(i);
    for (size_t k = 0; k < inst.operands.size(); ++k) {
      const auto v = static_cast<size_t>(inst.operands[k]);
      ++uses[v];
      // dot_general re-reads operands per output tile, attention per row block; scatter
      // re-reads indices/updates per output element: expensive expressions must not be
      // recomputed there.
      if (inst.op == Op::kDotGeneral || (inst.op == Op::kScatter && k > 0) ||
          GetOpCategory(inst.op) == OpCategory::kAttention) {
        dense_reader[v] = true;
      }
    }
  }
  for (ValueId r : f.results) is_result[static_cast<size_t>(r)] = true;
  for (ValueId p : f.params) plan.materialized[static_cast<size_t>(p)] = true;
  // Half buffers: a 16-bit value widened to f32 for several kernels or a dense reader (mixed
  // precision's rounded matmul operands) is kept in its own 16 bits, and the exact widening is
  // inlined into each reader, instead of keeping the widened f32 copy: half the bytes.
  const bool half_buffers = options.half_buffers && options.half_moves;
  auto widens_half = [&](const Instruction& inst) { return half_buffers && WidensHalf(f, inst); };
  std::vector<bool> half_buffer(n, false);
  for (const Instruction& inst : f.instructions) {
    const auto w = static_cast<size_t>(inst.result);
    if (widens_half(inst) && !is_result[w] && (uses[w] > 1 || dense_reader[w])) {
      half_buffer[static_cast<size_t>(inst.operands[0])] = true;
    }
  }
  // A product whose only reader rounds it to 16 bits (mixed precision's rounded output) writes
  // the rounded value itself, in 16 bits: its kernel produces the rounding's value.
  std::vector<int> rounded_product(n, -1);                   // per rounding: the product's instruction
  std::vector<bool> absorbed(f.instructions.size(), false);  // per product so computed
  for (size_t i = 0; i < f.instructions.size(); ++i) {
    const Instruction& inst = f.instructions[i];
    if (!half_buffers || inst.op != Op::kConvert || !IsHalf(f.type(inst.result).dtype)) {
      continue;
    }
    const auto d = static_cast<size_t>(inst.operands[0]);
    const int p = plan.producer[d];
    if (p >= 0 && f.instructions[static_cast<size_t>(p)].op == Op::kDotGeneral && uses[d] == 1 && !is_result[d]) {
      rounded_product[static_cast<size_t>(inst.result)] = p;
      absorbed[static_cast<size_t>(p)] = true;
    }
  }

  std::vector<bool> cheap(n, false);
  for (size_t i = 0; i < f.instructions.size(); ++i) {
    const Instruction& inst = f.instructions[i];
    const auto v = static_cast<size_t>(inst.result);
    const TensorType& t = f.type(inst.result);
    bool operands_cheap = true;
    for (ValueId o : inst.operands) {
      operands_cheap &= plan.materialized[static_cast<size_t>(o)] || cheap[static_cast<size_t>(o)];
    }
    switch (inst.op) {
      case Op::kBroadcastInDim:
      case Op::kReshape:
      case Op::kTranspose:
      case Op::kSlice: cheap[v] = operands_cheap; break;
      case Op::kIota: cheap[v] = true; break;
      case Op::kConstant: cheap[v] = t.rank() == 0 || t.num_elements() == 1; break;
      case Op::kConvert:
        cheap[v] = widens_half(inst) && half_buffer[static_cast<size_t>(inst.operands[0])] && operands_cheap;
        break;
      default: break;
    }
    bool materialize = is_result[v];
    KernelKind kind = KernelKind::kMap;
    int root = static_cast<int>(i);
    if (rounded_product[v] >= 0) {
      kind = KernelKind::kDot;
      root = rounded_product[v];
      materialize = true;
    } else if (absorbed[i]) {
      continue;  // its rounding's kernel computes it
    } else if (inst.op == Op::kReduce) {
      kind =
          options.split_reductions && ReduceSplitFor(f, inst).split() ? KernelKind::kSplitReduce : KernelKind::kReduce;
      materialize = true;
    } else if (inst.op == Op::kDotGeneral) {
      kind = KernelKind::kDot;
      materialize = true;
    } else if (inst.op == Op::kScatter) {
      kind = KernelKind::kScatter;
      materialize = true;
    } else if (GetOpCategory(inst.op) == OpCategory::kAttention) {
      kind = KernelKind::kAttention;
      materialize = true;
    } else if (inst.op == Op::kConstant) {
      materialize = !cheap[v];  // a result that is a constant is uploaded, not computed
      if (materialize) {
        plan.materialized[v] = true;
        plan.constants.push_back(inst.result);
        continue;
      }
      if (is_result[v]) materialize = true;
    } else if (!cheap[v] && (uses[v] > 1 || dense_reader[v] || half_buffer[v])) {
      materialize = true;
    }
    if (!materialize) continue;
    plan.materialized[v] = true;
    plan.kernels.push_back({kind, inst.result, root, 1});
  }
  PCP_RETURN_IF_ERROR(LimitBindings(f, plan, options.max_bindings));
  // Count the instructions each kernel computes inline (for profiles and stats).
  std::function<int(ValueId)> count = [&](ValueId v) -> int {
    const int p = plan.producer[static_cast<size_t>(v)];
    if (p < 0) return 0;
    int c = 1;
    for (ValueId o : f.instructions[static_cast<size_t>(p)].operands) {
      if (!plan.materialized[static_cast<size_t>(o)]) c += count(o);
    }
    return c;
  };
  for (PlannedKernel& k : plan.kernels) {
    int c = 1;
    for (ValueId o : f.instructions[static_cast<size_t>(k.instruction)].operands) {
      if (!plan.materialized[static_cast<size_t>(o)]) c += count(o);
    }
    k.fused_instructions = c;
  }
  GroupKernels(f, plan, options);
  if (options.attention_groups) GroupAttention(f, plan);
  return plan;
}

}  // namespace pcp::vulkan
