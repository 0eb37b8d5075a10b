// LowerF64ToF32 and LowerHalfToF32 (passes.h): the import's policies for the float types the
// backends do not compute. Exporters compute shapes, scales and masks in f64; PCP folds those
// exactly in double, and whatever still is f64 after folding is computed in f32. Mixed-
// precision exports hold bf16 / f16 activations and weights; PCP computes them in f32.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "pcp/autodiff/passes.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/base/status_macros.h"
#include "pcp/tensor/convert.h"

namespace pcp {
namespace {

bool In(DType t, absl::Span<const DType> set) {
  for (DType d : set) {
    if (d == t) return true;
  }
  return false;
}

// Retypes every value whose dtype is in `from` to f32 (see passes.h).
absl::StatusOr<int> LowerToF32(Function& f, absl::Span<const DType> from, absl::string_view pass, std::string* first) {
  PCP_RETURN_IF_ERROR(Verify(f), _ << pass);
  int count = 0;
  auto note = [&](std::string where) {
    if (count++ == 0 && first != nullptr) *first = std::move(where);
  };
  for (size_t i = 0; i < f.params.size(); ++i) {
    if (!In(f.type(f.params[i]).dtype, from)) continue;
    note(f.param_names[i].empty() ? absl::StrCat("argument ", i)
                                  : absl::StrCat("argument ", i, " '", f.param_names[i], "'"));
  }
  for (size_t i = 0; i < f.instructions.size(); ++i) {
    const Instruction& inst = f.instructions[i];
    if (In(f.type(inst.result).dtype, from)) {
      note(absl::StrCat("instruction ", i, " (", OpName(inst.op), ")"));
    }
  }
  if (count == 0) return 0;

  for (TensorType& t : f.value_types) {
    if (In(t.dtype, from)) t.dtype = DType::kF32;
  }
  std::vector<ValueId> replace(static_cast<size_t>(f.num_values()));
  for (size_t v = 0; v < replace.size(); ++v) replace[v] = static_cast<ValueId>(v);
  std::vector<Instruction> kept;
  kept.reserve(f.instructions.size());
  for (Instruction& inst : f.instructions) {
    for (ValueId& v : inst.operands) v = replace[v];
    if (inst.op == Op::kConstant && inst.attrs.literal.valid() && In(inst.attrs.literal.dtype(), from)) {
      PCP_ASSIGN_OR_RETURN(inst.attrs.literal, ConvertTensor(inst.attrs.literal, DType::kF32));
    }
    // Converts between a lowered type and f32 are now f32 -> f32: identities.
    if (inst.op == Op::kConvert && f.type(inst.operands[0]) == f.type(inst.result)) {
      replace[inst.result] = inst.operands[0];
      continue;
    }
    kept.push_back(std::move(inst));
  }
  f.instructions = std::move(kept);
  for (ValueId& v : f.results) v = replace[v];
  CompactValues(f);
  PCP_RETURN_IF_ERROR(Verify(f), _ << "after " << pass);
  return count;
}

}  // namespace

absl::StatusOr<int> LowerF64ToF32(Function& f, std::string* first) {
  return LowerToF32(f, {DType::kF64}, "LowerF64ToF32", first);
}

absl::StatusOr<int> LowerHalfToF32(Function& f, std::string* first) {
  return LowerToF32(f, {DType::kF16, DType::kBF16}, "LowerHalfToF32", first);
}

}  // namespace pcp
