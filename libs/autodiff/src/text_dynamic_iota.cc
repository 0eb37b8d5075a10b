// stablehlo.dynamic_iota, which exporters emit for an iota whose shape they compute. PCP has
// static shapes only, so the parser reads it as stablehlo.iota of its (static) result type:
//   %1 = stablehlo.dynamic_iota %0, dim = 0 : (tensor<1xi64>) -> tensor<4xi64>
//   %1 = "stablehlo.dynamic_iota"(%0) {iota_dimension = 0 : i64} : (tensor<1xi64>) -> tensor<4xi64>
// The shape operand must be a rank-1 integer tensor with one entry per result dimension;
// when it is a constant, or folds to one from constants, its values must equal the result
// shape. A dynamic result type (tensor<?xi64>) is rejected by the type parser. The operand's
// own instructions stay (dead code elimination drops them). See text.h.
#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/tensor/convert.h"
#include "text_parser.h"

namespace pcp::text_internal {
namespace {

// Folding the shape operand stops this deep, and at tensors this big: shapes are tiny.
constexpr int kMaxFoldDepth = 16;
constexpr int64_t kMaxFoldElements = 64;

}  // namespace

std::optional<Tensor> Parser::KnownValue(const Function& f, ValueId v, int depth) const {
  if (depth > kMaxFoldDepth || f.type(v).num_elements() > kMaxFoldElements) return std::nullopt;
  const ValueId first_result = static_cast<ValueId>(f.params.size());
  if (v < first_result) return std::nullopt;  // a parameter
  // Values are numbered parameters first, then one per instruction in order, except that a
  // call's results (placeholders until the callee is inlined) take numbers of their own: the
  // instruction is at v's number or before it.
  size_t i = std::min(static_cast<size_t>(v - first_result), f.instructions.size());
  while (i > 0 && (i == f.instructions.size() || f.instructions[i].result != v)) --i;
  if (i >= f.instructions.size() || f.instructions[i].result != v) return std::nullopt;  // a call's result
  const Instruction& inst = f.instructions[i];
  for (const PendingResource& r : pending_resources_) {
    if (r.function == function_index_ && r.instruction == i) return std::nullopt;  // data not read yet
  }
  if (inst.op == Op::kConstant) return inst.attrs.literal;
  std::vector<Tensor> operands;
  for (ValueId o : inst.operands) {
    std::optional<Tensor> t = KnownValue(f, o, depth + 1);
    if (!t.has_value()) return std::nullopt;
    operands.push_back(*std::move(t));
  }
  absl::StatusOr<Tensor> value = EvaluateInstruction(inst, f.type(v), operands);
  if (!value.ok()) return std::nullopt;
  return *std::move(value);
}

absl::Status Parser::AddDynamicIota(Function* f, Scope* scope, const Token& result, size_t op_offset,
                                    size_t type_offset, ValueId shape, size_t shape_offset,
                                    const std::vector<TensorType>& in, const std::vector<TensorType>& out,
                                    Attributes attrs) {
  constexpr absl::string_view kName = "stablehlo.dynamic_iota";
  if (in.size() != 1) {
    return ErrorAt(type_offset, absl::StrCat("the type lists ", in.size(), " operands but ", kName, " has 1"));
  }
  const TensorType& shape_type = f->type(shape);
  if (shape_type != in[0]) {
    return ErrorAt(shape_offset, absl::StrCat("operand #0 has type ", shape_type.ToString(),
                                              " but the operation's type says ", in[0].ToString()));
  }
  if (out.size() != 1)
    return ErrorAt(type_offset, absl::StrCat(kName, " has exactly one result, the type lists ", out.size()));
  const TensorType& rt = out[0];
  if (!IsInteger(shape_type.dtype) || shape_type.rank() != 1 || shape_type.shape[0] != rt.rank()) {
    return ErrorAt(shape_offset,
                   absl::StrCat(kName, ": the shape operand must be a tensor<", rt.rank(),
                                "xi64> (or i32) with one entry per result dimension, got ", shape_type.ToString()));
  }
  if (std::optional<Tensor> known = KnownValue(*f, shape, 0); known.has_value()) {
    absl::StatusOr<Tensor> as_i64 = ConvertTensor(*known, DType::kI64);
    std::vector<int64_t> dims = as_i64.ok() ? as_i64->ToVector<int64_t>() : std::vector<int64_t>{};
    if (!as_i64.ok() || dims != rt.shape) {
      return ErrorAt(shape_offset, absl::StrCat(kName, ": the shape operand is [", absl::StrJoin(dims, ", "),
                                                "] but the result type is ", rt.ToString()));
    }
  }
  return AddOperation(f, scope, Op::kIota, result, op_offset, type_offset, {}, {}, {}, out, std::move(attrs),
                      OpAttributes{});
}

}  // namespace pcp::text_internal
