// LowerF64ToF32 (passes.h): the policy for f64 values that constant folding leaves behind.
// Exporters compute shapes, scales and masks in f64; PCP folds those exactly in double, and
// whatever still is f64 after folding is computed in f32 (the backends never see f64).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pcp/autodiff/passes.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/base/status_macros.h"
#include "pcp/tensor/convert.h"

namespace pcp {

absl::StatusOr<int> LowerF64ToF32(Function& f, std::string* first) {
  PCP_RETURN_IF_ERROR(Verify(f), _ << "LowerF64ToF32");
  int count = 0;
  auto note = [&](std::string where) {
    if (count++ == 0 && first != nullptr) *first = std::move(where);
  };
  for (size_t i = 0; i < f.params.size(); ++i) {
    if (f.type(f.params[i]).dtype != DType::kF64) continue;
    note(f.param_names[i].empty() ? absl::StrCat("argument ", i)
                                  : absl::StrCat("argument ", i, " '", f.param_names[i], "'"));
  }
  for (size_t i = 0; i < f.instructions.size(); ++i) {
    const Instruction& inst = f.instructions[i];
    if (f.type(inst.result).dtype == DType::kF64) {
      note(absl::StrCat("instruction ", i, " (", OpName(inst.op), ")"));
    }
  }
  if (count == 0) return 0;

  for (TensorType& t : f.value_types) {
    if (t.dtype == DType::kF64) t.dtype = DType::kF32;
  }
  std::vector<ValueId> replace(static_cast<size_t>(f.num_values()));
  for (size_t v = 0; v < replace.size(); ++v) replace[v] = static_cast<ValueId>(v);
  std::vector<Instruction> kept;
  kept.reserve(f.instructions.size());
  for (Instruction& inst : f.instructions) {
    for (ValueId& v : inst.operands) v = replace[v];
    if (inst.op == Op::kConstant && inst.attrs.literal.valid() && inst.attrs.literal.dtype() == DType::kF64) {
      PCP_ASSIGN_OR_RETURN(inst.attrs.literal, ConvertTensor(inst.attrs.literal, DType::kF32));
    }
    // f64 -> f32 (or f32 -> f64) converts are now f32 -> f32: identities.
    if (inst.op == Op::kConvert && f.type(inst.operands[0]) == f.type(inst.result)) {
      replace[inst.result] = inst.operands[0];
      continue;
    }
    kept.push_back(std::move(inst));
  }
  f.instructions = std::move(kept);
  for (ValueId& v : f.results) v = replace[v];
  CompactValues(f);
  PCP_RETURN_IF_ERROR(Verify(f), _ << "after LowerF64ToF32");
  return count;
}

}  // namespace pcp
