// stablehlo.gather and stablehlo.scatter in the text form: every form the spec allows, emitted
// through general_indexing.h as PCP's row forms plus layout ops and index arithmetic.
#include "absl/strings/str_cat.h"
#include "pcp/autodiff/builder.h"
#include "text_parser.h"

namespace pcp::text_internal {

absl::Status Parser::AddIndexing(Function* f, Scope* scope, Op op, const Token& result, size_t op_offset,
                                 size_t type_offset, const std::vector<ValueId>& operands,
                                 const std::vector<TensorType>& operand_types, const TensorType& declared,
                                 const OpAttributes& parsed) {
  // Everything is checked before the function moves into the builder, so an error leaves it whole.
  TensorType type = operand_types[0];
  GatherDimensionNumbers gather;
  ScatterDimensionNumbers scatter;
  if (op == Op::kGather) {
    PCP_ASSIGN_OR_RETURN(gather, GatherDims(parsed));
    absl::StatusOr<TensorType> t = GatherResultType(operand_types[0], operand_types[1], gather, parsed.slice_sizes);
    if (!t.ok()) return ErrorAt(parsed.dims.offset, t.status().message());
    type = *t;
  } else {
    PCP_ASSIGN_OR_RETURN(scatter, ScatterDims(parsed));
    absl::Status s = CheckScatter(operand_types[0], operand_types[1], operand_types[2], scatter);
    if (!s.ok()) return ErrorAt(parsed.dims.offset, s.message());
  }
  if (type != declared) {
    return ErrorAt(type_offset, absl::StrCat(OpName(op), ": the result type is ", declared.ToString(),
                                             " but the operands and dimension numbers give ", type.ToString()));
  }
  FunctionBuilder b(std::move(*f));
  ValueId v = op == Op::kGather ? EmitGather(b, operands[0], operands[1], gather, parsed.slice_sizes)
                                : EmitScatter(b, operands[0], operands[1], operands[2], scatter,
                                              parsed.scatter_assign ? ScatterCombiner::kAssign : ScatterCombiner::kAdd);
  return TakeBuilt(b, f, scope, result, v, op_offset);
}

absl::Status Parser::TakeBuilt(FunctionBuilder& b, Function* f, Scope* scope, const Token& result, ValueId v,
                               size_t op_offset) {
  absl::StatusOr<Function> built = b.Build();
  if (!built.ok()) return ErrorAt(op_offset, built.status().message());
  *f = *std::move(built);
  if (!scope->values.emplace(std::string(result.text), v).second) {
    return ErrorAt(result.offset, absl::StrCat("redefinition of ", result.text));
  }
  return absl::OkStatus();
}

}  // namespace pcp::text_internal
