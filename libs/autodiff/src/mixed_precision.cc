#include "pcp/autodiff/mixed_precision.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/base/status_macros.h"

namespace pcp {

absl::string_view PrecisionName(Precision precision) {
  for (const auto& [p, name] : kPrecisionNames) {
    if (p == precision) return name;
  }
  return "?";
}

absl::StatusOr<Precision> ParsePrecision(absl::string_view name) {
  for (Precision p : {Precision::kF32, Precision::kBF16, Precision::kF16}) {
    if (name == PrecisionName(p)) return p;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown precision '", name, "' (expected f32, bf16 or f16)"));
}

DType PrecisionDType(Precision precision) {
  switch (precision) {
    case Precision::kBF16: return DType::kBF16;
    case Precision::kF16: return DType::kF16;
    case Precision::kF32: break;
  }
  return DType::kF32;
}

namespace {

// The instruction defining each value (-1 for parameters).
std::vector<int> Definitions(const Function& f) {
  std::vector<int> def(static_cast<size_t>(f.num_values()), -1);
  for (size_t i = 0; i < f.instructions.size(); ++i)
    def[static_cast<size_t>(f.instructions[i].result)] = static_cast<int>(i);
  return def;
}

}  // namespace

bool IsRoundedThroughHalf(const Function& f, ValueId v, DType* dtype) {
  const std::vector<int> def = Definitions(f);
  auto defining = [&](ValueId x) -> const Instruction* {
    const int d = def[static_cast<size_t>(x)];
    return d < 0 ? nullptr : &f.instructions[static_cast<size_t>(d)];
  };
  const Instruction* outer = defining(v);
  if (outer == nullptr || outer->op != Op::kConvert || f.type(v).dtype != DType::kF32) return false;
  const Instruction* inner = defining(outer->operands[0]);
  if (inner == nullptr || inner->op != Op::kConvert) return false;
  const DType mid = f.type(inner->result).dtype;
  if ((mid != DType::kBF16 && mid != DType::kF16) || f.type(inner->operands[0]).dtype != DType::kF32) return false;
  if (dtype != nullptr) *dtype = mid;
  return true;
}

absl::StatusOr<int> ApplyMixedPrecision(Function& function, Precision precision) {
  PCP_RETURN_IF_ERROR(Verify(function), _ << "ApplyMixedPrecision: input");
  if (precision == Precision::kF32) return 0;
  const DType half = PrecisionDType(precision);
  const Function& f = function;
  Function g;
  g.name = f.name;
  std::vector<ValueId> map(static_cast<size_t>(f.num_values()), kNoValue);
  for (size_t i = 0; i < f.params.size(); ++i) {
    map[static_cast<size_t>(f.params[i])] =
        g.AddParameter(f.type(f.params[i]), i < f.param_names.size() ? f.param_names[i] : "");
  }
  // rounded[v]: v's rounding in g (kNoValue: none yet); is_rounded[v]: v is itself one.
  std::vector<ValueId> rounded;
  std::vector<bool> is_rounded;
  auto grow = [&] {
    rounded.resize(static_cast<size_t>(g.num_values()), kNoValue);
    is_rounded.resize(static_cast<size_t>(g.num_values()), false);
  };
  auto round = [&](ValueId v) -> ValueId {
    grow();
    if (is_rounded[static_cast<size_t>(v)]) return v;
    if (rounded[static_cast<size_t>(v)] != kNoValue) return rounded[static_cast<size_t>(v)];
    const Shape shape = g.type(v).shape;
    ValueId h = g.AddInstruction(Op::kConvert, {v}, TensorType{half, shape});
    ValueId r = g.AddInstruction(Op::kConvert, {h}, TensorType{DType::kF32, shape});
    grow();
    rounded[static_cast<size_t>(v)] = r;
    is_rounded[static_cast<size_t>(r)] = true;
    return r;
  };
  // A pair already in the input (e.g. a second application) counts as rounded.
  std::vector<int> def = Definitions(f);
  int products = 0;
  for (const Instruction& inst : f.instructions) {
    std::vector<ValueId> operands;
    operands.reserve(inst.operands.size());
    for (ValueId o : inst.operands) operands.push_back(map[static_cast<size_t>(o)]);
    const TensorType& rt = f.type(inst.result);
    const bool attention = GetOpCategory(inst.op) == OpCategory::kAttention;
    const bool product = (inst.op == Op::kDotGeneral || attention) && rt.dtype == DType::kF32 &&
                         f.type(inst.operands[0]).dtype == DType::kF32 && f.type(inst.operands[1]).dtype == DType::kF32;
    if (!product) {
      ValueId r = g.AddInstruction(inst.op, std::move(operands), rt, inst.attrs);
      map[static_cast<size_t>(inst.result)] = r;
      if (inst.op == Op::kConvert && rt.dtype == DType::kF32 && f.type(inst.operands[0]).dtype == half) {
        const int d = def[static_cast<size_t>(inst.operands[0])];
        const Instruction* inner = d < 0 ? nullptr : &f.instructions[static_cast<size_t>(d)];
        if (inner != nullptr && inner->op == Op::kConvert && f.type(inner->operands[0]).dtype == DType::kF32) {
          grow();
          is_rounded[static_cast<size_t>(r)] = true;
        }
      }
      continue;
    }
    // Attention's matrices (q, k, v, do, its outputs) are rounded like a product's; its
    // per-row statistics (lse, delta: one dimension fewer than q) stay f32.
    const int64_t matrix_rank = g.type(operands[0]).rank();
    auto is_matrix = [&](const TensorType& t) { return !attention || t.rank() == matrix_rank; };
    for (ValueId& o : operands) {
      if (is_matrix(g.type(o))) o = round(o);
    }
    ValueId y = g.AddInstruction(inst.op, std::move(operands), rt, inst.attrs);
    map[static_cast<size_t>(inst.result)] = is_matrix(rt) ? round(y) : y;
    ++products;
  }
  for (ValueId r : f.results) g.results.push_back(map[static_cast<size_t>(r)]);
  g.result_names = f.result_names;
  PCP_RETURN_IF_ERROR(Verify(g), _ << "ApplyMixedPrecision: output");
  function = std::move(g);
  return products;
}

}  // namespace pcp
