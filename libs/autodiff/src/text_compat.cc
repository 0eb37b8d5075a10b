// Exporters' older or looser spellings, read as the ops PCP has (text.h, "Pretty form"):
//   "mhlo.add"(...), mhlo.dot, #mhlo.dot<...>, #mhlo<comparison_direction LT>: old MHLO
//       (byteir, tt-xla), whose ops PCP has mean what StableHLO's do;
//   stablehlo.dot / mhlo.dot: the legacy matrix product, rewritten to dot_general;
//   stablehlo.reduce over i1 with an or / and body (HF models through torch_xla2 / JAX):
//       rewritten to a maximum over 0 / 1, so no backend needs a logical reduction.
// Each rewrite emits existing IR ops only; see text_parser.h.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "pcp/autodiff/type_inference.h"
#include "text_parser.h"

namespace pcp::text_internal {

std::string CanonicalOpName(absl::string_view name) {
  if (absl::ConsumePrefix(&name, "mhlo.")) return absl::StrCat("stablehlo.", name);
  return std::string(name);
}

bool Parser::IsOp(absl::string_view stablehlo_name) const {
  if (cur_.kind == TokenKind::kBareId) return CanonicalOpName(cur_.text) == stablehlo_name;
  if (cur_.kind == TokenKind::kString) return CanonicalOpName(DecodeString(cur_)) == stablehlo_name;
  return false;
}

bool Parser::IsDialectAttr(absl::string_view suffix) const {
  if (cur_.kind != TokenKind::kHashId) return false;
  absl::string_view text = cur_.text;
  return (absl::ConsumePrefix(&text, "#stablehlo") || absl::ConsumePrefix(&text, "#mhlo")) && text == suffix;
}

absl::StatusOr<ReducerBody> Parser::ReducerOf(Op op, DType dtype, bool generic) const {
  const bool reduce = op == Op::kReduce;
  if (IsOp("stablehlo.add")) return ReducerBody::kAdd;
  if (reduce && IsOp("stablehlo.maximum")) return ReducerBody::kMaximum;
  const bool is_or = IsOp("stablehlo.or");
  if (reduce && (is_or || IsOp("stablehlo.and"))) {
    if (dtype == DType::kBool) return is_or ? ReducerBody::kOr : ReducerBody::kAnd;
    // On integers or / and are bitwise, which no maximum over 0 / 1 computes.
    return ErrorAt(cur_.offset, absl::StrCat("unsupported body of stablehlo.reduce: ", is_or ? "or" : "and",
                                             " is supported over i1 only, got ", MlirName(dtype)));
  }
  const absl::string_view q = generic ? "\"" : "";
  return ErrorAt(cur_.offset,
                 absl::StrCat("unsupported body of ", OpName(op), ": expected ",
                              reduce ? absl::StrCat(q, "stablehlo.add", q, ", ", q, "stablehlo.maximum", q, ", or ", q,
                                                    "stablehlo.or", q, " / ", q, "stablehlo.and", q, " over i1")
                                     : "\"stablehlo.add\", or stablehlo.return of the update (assign)",
                              ", got ", Describe(cur_)));
}

absl::Status Parser::AddLogicalReduce(Function* f, Scope* scope, ReducerBody body, const Token& result,
                                      size_t op_offset, size_t type_offset, const std::vector<ValueId>& operands,
                                      const std::vector<size_t>& operand_offsets, const std::vector<TensorType>& in,
                                      const std::vector<TensorType>& out, std::vector<int64_t> dims) {
  // The checks AddOperation makes, on the i1 types as written.
  if (in.size() != operands.size()) {
    return ErrorAt(type_offset,
                   absl::StrCat("the type lists ", in.size(), " operands but stablehlo.reduce has ", operands.size()));
  }
  for (size_t i = 0; i < operands.size(); ++i) {
    if (f->type(operands[i]) != in[i]) {
      return ErrorAt(operand_offsets[i], absl::StrCat("operand #", i, " has type ", f->type(operands[i]).ToString(),
                                                      " but the operation's type says ", in[i].ToString()));
    }
  }
  if (out.size() != 1) {
    return ErrorAt(type_offset, absl::StrCat("stablehlo.reduce has exactly one result, the type lists ", out.size()));
  }
  const TensorType scalar{DType::kBool, {}};
  if (in[1] != scalar) {
    return ErrorAt(operand_offsets[1], absl::StrCat("the init of an or / and reduce must be ", scalar.ToString(),
                                                    ", got ", in[1].ToString()));
  }
  if (out[0].dtype != DType::kBool) {
    return ErrorAt(type_offset, absl::StrCat("an or / and reduce has an i1 result, the type says ", out[0].ToString()));
  }
  Attributes max;
  max.dims = std::move(dims);
  max.reduce_kind = ReduceKind::kMax;
  const TensorType input_f32{DType::kF32, in[0].shape};
  const TensorType scalar_f32{DType::kF32, {}};
  const TensorType out_f32{DType::kF32, out[0].shape};
  // Inferred on the f32 reduce the rewrite emits (PCP's reduce is not defined on i1); the
  // declared type is compared here so that the error names the i1 types as written.
  absl::StatusOr<TensorType> inferred = InferResultType(Op::kReduce, {input_f32, scalar_f32}, max);
  if (!inferred.ok()) return ErrorAt(op_offset, inferred.status().message());
  if (inferred->shape != out[0].shape) {
    return ErrorAt(op_offset,
                   absl::StrCat("stablehlo.reduce: declared result type ", out[0].ToString(), " but the operands give ",
                                TensorType{DType::kBool, inferred->shape}.ToString()));
  }

  // or(x) = any element true = max over 0 / 1 > 0 (exact in f32, which every backend reduces).
  const bool is_and = body == ReducerBody::kAnd;
  ValueId x = operands[0], init = operands[1];
  if (is_and) {  // and(x, init) = not(or(not x, not init))
    x = f->AddInstruction(Op::kNot, {x}, in[0]);
    init = f->AddInstruction(Op::kNot, {init}, scalar);
  }
  ValueId x_f32 = f->AddInstruction(Op::kConvert, {x}, input_f32);
  Attributes zero;
  zero.literal = Tensor(DType::kF32, {});  // zero-filled
  ValueId zero_f32 = f->AddInstruction(Op::kConstant, {}, scalar_f32, std::move(zero));
  ValueId most = f->AddInstruction(Op::kReduce, {x_f32, zero_f32}, out_f32, std::move(max));
  ValueId zeros = f->AddInstruction(Op::kBroadcastInDim, {zero_f32}, out_f32);  // dims = [] (a scalar)
  Attributes ne;
  ne.comparison = ComparisonDirection::kNE;
  ValueId any = f->AddInstruction(Op::kCompare, {most, zeros}, out[0], std::move(ne));
  ValueId init_full = f->AddInstruction(Op::kBroadcastInDim, {init}, out[0]);
  ValueId v = f->AddInstruction(Op::kOr, {any, init_full}, out[0]);
  if (is_and) v = f->AddInstruction(Op::kNot, {v}, out[0]);
  if (!scope->values.emplace(std::string(result.text), v).second) {
    return ErrorAt(result.offset, absl::StrCat("redefinition of ", result.text));
  }
  return absl::OkStatus();
}

absl::Status Parser::LegacyDotDims(const std::vector<TensorType>& types, size_t op_offset, DotDims* dims) const {
  for (const TensorType& t : types) {
    if (t.rank() != 1 && t.rank() != 2) {
      return ErrorAt(op_offset, absl::StrCat("dot takes rank-1 or rank-2 operands (PCP reads it as dot_general "
                                             "contracting lhs's last dimension with rhs's first), got ",
                                             t.ToString()));
    }
  }
  if (types.size() != 2) return absl::OkStatus();  // the arity check reports it
  *dims = DotDims{{}, {}, {types[0].rank() - 1}, {0}};
  return absl::OkStatus();
}

}  // namespace pcp::text_internal
