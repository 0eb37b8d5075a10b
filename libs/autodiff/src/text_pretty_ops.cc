// Operations in MLIR's pretty (custom) form, as StableHLO prints them:
//   %5 = stablehlo.add %3, %4 : tensor<64x32xf32>
//   %6 = stablehlo.convert %0 : (tensor<4xi32>) -> tensor<4xf32>
//   %7 = stablehlo.broadcast_in_dim %3, dims = [0, 2] : (tensor<4x8xf32>) -> tensor<4x2x8xf32>
//   %8 = stablehlo.reduce(%5 init: %cst) applies stablehlo.add across dimensions = [2] : (...) -> ...
//   %9 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : ...
//   return %9 : tensor<...>
// Every op keeps the meaning of its generic form (text_parser.cc), and the same checks apply
// (Parser::AddOperation). See text_parser.h.
#include "absl/strings/str_cat.h"
#include "text_parser.h"

namespace pcp::text_internal {

bool Parser::NextIsOperand() {
  const size_t pos = lexer_.pos();
  const Token saved = cur_;
  const bool saved_location = after_location_;
  Advance();
  const bool operand = Is(TokenKind::kPercentId);
  lexer_.Seek(pos);
  cur_ = saved;
  after_location_ = saved_location;
  return operand;
}

absl::Status Parser::ParseOperand(const Scope& scope, std::vector<ValueId>* operands, std::vector<size_t>* offsets) {
  if (!Is(TokenKind::kPercentId)) return Expected("an operand (%name)");
  auto it = scope.values.find(std::string(cur_.text));
  if (it == scope.values.end()) {
    if (scope.values.count(absl::StrCat(cur_.text, "#1")) != 0) {  // `%0` of `%0:2 = call ...`
      return ErrorAt(cur_.offset,
                     absl::StrCat(cur_.text, " names several results: use ", cur_.text, "#0, ", cur_.text, "#1, ..."));
    }
    return ErrorAt(cur_.offset, absl::StrCat("use of undefined value ", cur_.text));
  }
  operands->push_back(it->second);
  offsets->push_back(cur_.offset);
  Advance();
  return absl::OkStatus();
}

absl::Status Parser::ParsePrettyOperands(const Scope& scope, std::vector<ValueId>* operands,
                                         std::vector<size_t>* offsets) {
  PCP_RETURN_IF_ERROR(ParseOperand(scope, operands, offsets));
  while (Is(TokenKind::kComma) && NextIsOperand()) {
    Advance();
    PCP_RETURN_IF_ERROR(ParseOperand(scope, operands, offsets));
  }
  return absl::OkStatus();
}

absl::Status Parser::ParsePrettyType(size_t num_operands, size_t* type_offset, std::vector<TensorType>* in,
                                     std::vector<TensorType>* out) {
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "before the operation's type"));
  *type_offset = cur_.offset;
  if (Is(TokenKind::kLParen)) {
    PCP_RETURN_IF_ERROR(ParseTypeList(in));
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kArrow, "in the operation's type"));
    return ParseResultTypes(out);
  }
  PCP_ASSIGN_OR_RETURN(TensorType t, ParseTensorType());
  if (ConsumeIf(TokenKind::kArrow)) {  // chlo: t -> r
    in->push_back(std::move(t));
    return ParseResultTypes(out);
  }
  if (ConsumeIf(TokenKind::kComma)) {  // select: pred type, then the type of the rest
    PCP_ASSIGN_OR_RETURN(TensorType rest, ParseTensorType());
    in->push_back(std::move(t));
    for (size_t i = 1; i < num_operands; ++i) in->push_back(rest);
    out->push_back(std::move(rest));
    return absl::OkStatus();
  }
  in->assign(num_operands, t);
  out->push_back(std::move(t));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> Parser::ParseBracketList() {
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kLSquare, "to start a list"));
  std::vector<int64_t> values;
  if (ConsumeIf(TokenKind::kRSquare)) return values;
  do {
    PCP_ASSIGN_OR_RETURN(int64_t v, ParseI64(/*type_suffix=*/false));
    values.push_back(v);
  } while (ConsumeIf(TokenKind::kComma));
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kRSquare, "to close the list"));
  return values;
}

absl::Status Parser::ExpectKey(absl::string_view key, absl::string_view op_name) {
  PCP_RETURN_IF_ERROR(ExpectWord(key, absl::StrCat("in ", op_name)));
  return Expect(TokenKind::kEqual, absl::StrCat("after '", key, "'"));
}

absl::Status Parser::ParsePrettyOperation(Function* f, Scope* scope, const Token& result, size_t op_offset,
                                          std::vector<TensorType>* result_types, bool* returned) {
  const size_t name_offset = cur_.offset;
  const std::string written(cur_.text);  // errors name the op as written
  const std::string name = CanonicalOpName(written);
  Advance();
  std::vector<ValueId> operands;
  std::vector<size_t> offsets;
  if (name == "return" || name == "func.return" || name == "stablehlo.return") {
    if (result.kind != TokenKind::kEof) return ErrorAt(op_offset, absl::StrCat(name, " has no results"));
    std::vector<TensorType> in;
    size_t type_offset = cur_.offset;
    if (Is(TokenKind::kPercentId)) {
      PCP_RETURN_IF_ERROR(ParsePrettyOperands(*scope, &operands, &offsets));
      PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, absl::StrCat("before the types of ", name, "'s operands")));
      type_offset = cur_.offset;
      do {
        PCP_ASSIGN_OR_RETURN(TensorType t, ParseTensorType());
        in.push_back(std::move(t));
      } while (ConsumeIf(TokenKind::kComma));
    }
    return FinishReturn(f, std::move(operands), in, type_offset, result_types, returned);
  }
  if (name == "stablehlo.dynamic_iota") {  // stablehlo.dynamic_iota %shape, dim = 0 : (t) -> r
    if (result.kind == TokenKind::kEof) {
      return ErrorAt(op_offset, absl::StrCat(name, " must define a result (%name = ", name, " ...)"));
    }
    PCP_RETURN_IF_ERROR(ParseOperand(*scope, &operands, &offsets));
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kComma, absl::StrCat("and dim = N after the operand of ", name)));
    PCP_RETURN_IF_ERROR(ExpectKey("dim", name));
    Attributes attrs;
    PCP_ASSIGN_OR_RETURN(attrs.dimension, ParseI64(/*type_suffix=*/false));
    PCP_RETURN_IF_ERROR(ParseIgnorableAttributes(name));
    size_t type_offset = cur_.offset;
    std::vector<TensorType> in, out;
    PCP_RETURN_IF_ERROR(ParsePrettyType(1, &type_offset, &in, &out));
    return AddDynamicIota(f, scope, result, op_offset, type_offset, operands[0], offsets[0], in, out, std::move(attrs));
  }
  const bool legacy_dot = name == "stablehlo.dot";  // dot_general with dims from the ranks (text_compat.cc)
  absl::StatusOr<Op> op = name == "arith.constant" ? Op::kConstant : legacy_dot ? Op::kDotGeneral : ParseOp(name);
  if (!op.ok()) return UnsupportedOperation(name_offset, written);
  if (*op == Op::kGather || *op == Op::kScatter || GetOpCategory(*op) == OpCategory::kAttention) {
    return ErrorAt(name_offset, absl::StrCat(name, " has no pretty form; write it in the generic form (\"", name,
                                             "\"(...) <{...}> : (...) -> ...)"));
  }
  if (result.kind == TokenKind::kEof) {
    return ErrorAt(op_offset, absl::StrCat(name, " must define a result (%name = ", name, " ...)"));
  }
  if (*op == Op::kReduce) return ParsePrettyReduce(f, scope, result, op_offset);
  Attributes attrs;
  OpAttributes parsed;
  std::vector<TensorType> in, out;
  size_t type_offset = cur_.offset;
  switch (*op) {
    case Op::kConstant: {
      // stablehlo.constant [{attrs}] dense<...> : tensor<...>
      PCP_RETURN_IF_ERROR(ParseIgnorableAttributes(name));
      type_offset = cur_.offset;
      if (Is(TokenKind::kInteger) || Is(TokenKind::kFloat) || Is(TokenKind::kMinus) || IsWord("true") ||
          IsWord("false")) {
        return ErrorAt(cur_.offset, absl::StrCat("scalar constants are not supported: PCP values are tensors (", name,
                                                 " dense<...> : tensor<...>)"));
      }
      if (!IsWord("dense") && !IsWord("dense_resource")) return Expected("a literal dense<...> or dense_resource<...>");
      TensorType type;
      PCP_ASSIGN_OR_RETURN(attrs.literal, ParseConstantValue(&type));
      out.push_back(std::move(type));
      return AddOperation(f, scope, *op, result, op_offset, type_offset, {}, {}, in, out, std::move(attrs), parsed);
    }
    case Op::kIota: {  // stablehlo.iota dim = 0 : tensor<...>
      PCP_RETURN_IF_ERROR(ExpectKey("dim", name));
      PCP_ASSIGN_OR_RETURN(attrs.dimension, ParseI64(/*type_suffix=*/false));
      break;
    }
    case Op::kBroadcastInDim:  // stablehlo.broadcast_in_dim %x, dims = [0, 2]
    case Op::kTranspose: {     // stablehlo.transpose %x, dims = [1, 0]
      PCP_RETURN_IF_ERROR(ParseOperand(*scope, &operands, &offsets));
      PCP_RETURN_IF_ERROR(Expect(TokenKind::kComma, absl::StrCat("and dims = [...] after the operand of ", name)));
      PCP_RETURN_IF_ERROR(ExpectKey("dims", name));
      PCP_ASSIGN_OR_RETURN(attrs.dims, ParseBracketList());
      break;
    }
    case Op::kSlice: {  // stablehlo.slice %x [0:64, 0:32:2]
      PCP_RETURN_IF_ERROR(ParseOperand(*scope, &operands, &offsets));
      PCP_RETURN_IF_ERROR(ParsePrettySlice(&attrs));
      break;
    }
    case Op::kConcatenate: {  // stablehlo.concatenate %a, %b, dim = 0
      PCP_RETURN_IF_ERROR(ParsePrettyOperands(*scope, &operands, &offsets));
      PCP_RETURN_IF_ERROR(Expect(TokenKind::kComma, absl::StrCat("and dim = N after the operands of ", name)));
      PCP_RETURN_IF_ERROR(ExpectKey("dim", name));
      PCP_ASSIGN_OR_RETURN(attrs.dimension, ParseI64(/*type_suffix=*/false));
      break;
    }
    case Op::kCompare: {  // stablehlo.compare GT, %a, %b[, FLOAT]
      bool found = false;
      for (ComparisonDirection d : {ComparisonDirection::kEQ, ComparisonDirection::kNE, ComparisonDirection::kLT,
                                    ComparisonDirection::kLE, ComparisonDirection::kGT, ComparisonDirection::kGE}) {
        if (IsWord(ComparisonName(d))) {
          attrs.comparison = d;
          found = true;
        }
      }
      if (!found) return Expected("a comparison direction (EQ, NE, LT, LE, GT or GE)");
      Advance();
      PCP_RETURN_IF_ERROR(Expect(TokenKind::kComma, "after the comparison direction"));
      PCP_RETURN_IF_ERROR(ParsePrettyOperands(*scope, &operands, &offsets));
      if (ConsumeIf(TokenKind::kComma)) PCP_RETURN_IF_ERROR(ParseComparisonType(/*bare=*/true, &parsed));
      break;
    }
    case Op::kDotGeneral: {
      PCP_RETURN_IF_ERROR(ParsePrettyOperands(*scope, &operands, &offsets));
      const size_t attrs_offset = cur_.offset;
      PCP_RETURN_IF_ERROR(ParsePrettyDotGeneral(&attrs));
      if (legacy_dot && attrs.dot != DotDims{}) {  // dot's own attribute is precision only
        return ErrorAt(attrs_offset, absl::StrCat(written,
                                                  " takes no batching_dims or contracting_dims: it "
                                                  "contracts lhs's last dimension with rhs's first"));
      }
      break;
    }
    default: {  // elementwise ops, select, convert, reshape, chlo.erf: operands only
      PCP_RETURN_IF_ERROR(ParsePrettyOperands(*scope, &operands, &offsets));
      if (ConsumeIf(TokenKind::kComma)) return Expected("an operand (%name)");
      break;
    }
  }
  int arity = OpArity(*op);
  if (arity != kVariadic && static_cast<int>(operands.size()) != arity) {
    return ErrorAt(op_offset, absl::StrCat(name, " expects ", arity, " operands, got ", operands.size()));
  }
  PCP_RETURN_IF_ERROR(ParseIgnorableAttributes(name));
  PCP_RETURN_IF_ERROR(ParsePrettyType(operands.size(), &type_offset, &in, &out));
  if (legacy_dot) PCP_RETURN_IF_ERROR(LegacyDotDims(in, op_offset, &attrs.dot));
  return AddOperation(f, scope, *op, result, op_offset, type_offset, std::move(operands), offsets, in, out,
                      std::move(attrs), parsed);
}

absl::Status Parser::ParsePrettySlice(Attributes* attrs) {
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kLSquare, "to start the slice ranges [start:limit:stride, ...]"));
  if (ConsumeIf(TokenKind::kRSquare)) return absl::OkStatus();
  do {
    PCP_ASSIGN_OR_RETURN(int64_t start, ParseI64(/*type_suffix=*/false));
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "between the start and the limit"));
    PCP_ASSIGN_OR_RETURN(int64_t limit, ParseI64(/*type_suffix=*/false));
    int64_t stride = 1;
    if (ConsumeIf(TokenKind::kColon)) {
      PCP_ASSIGN_OR_RETURN(stride, ParseI64(/*type_suffix=*/false));
    }
    attrs->start.push_back(start);
    attrs->limit.push_back(limit);
    attrs->stride.push_back(stride);
  } while (ConsumeIf(TokenKind::kComma));
  return Expect(TokenKind::kRSquare, "to close the slice ranges");
}

absl::Status Parser::ParsePrettyDotGeneral(Attributes* attrs) {
  bool batching = false, contracting = false, precision = false;
  while (ConsumeIf(TokenKind::kComma)) {
    size_t key_offset = cur_.offset;
    if (!IsWord("batching_dims") && !IsWord("contracting_dims") && !IsWord("precision")) {
      if (Is(TokenKind::kBareId)) {
        return ErrorAt(key_offset, absl::StrCat("unsupported stablehlo.dot_general attribute '", cur_.text,
                                                "' (PCP takes batching_dims, contracting_dims and precision)"));
      }
      return Expected("batching_dims, contracting_dims or precision");
    }
    const std::string key(cur_.text);
    bool* seen = key == "batching_dims" ? &batching : key == "contracting_dims" ? &contracting : &precision;
    if (*seen) return ErrorAt(key_offset, absl::StrCat("'", key, "' appears twice"));
    *seen = true;
    Advance();
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kEqual, absl::StrCat("after '", key, "'")));
    if (key == "precision") {  // [DEFAULT, DEFAULT]: PCP computes at least that precisely
      PCP_RETURN_IF_ERROR(Expect(TokenKind::kLSquare, "to start the precision list"));
      if (!ConsumeIf(TokenKind::kRSquare)) {
        do {
          PCP_RETURN_IF_ERROR(ParsePrecision(/*bare=*/true));
        } while (ConsumeIf(TokenKind::kComma));
        PCP_RETURN_IF_ERROR(Expect(TokenKind::kRSquare, "to close the precision list"));
      }
      continue;
    }
    PCP_ASSIGN_OR_RETURN(std::vector<int64_t> lhs, ParseBracketList());
    PCP_RETURN_IF_ERROR(ExpectWord("x", "between the lhs and rhs dimensions ([..] x [..])"));
    PCP_ASSIGN_OR_RETURN(std::vector<int64_t> rhs, ParseBracketList());
    if (key == "batching_dims") {
      attrs->dot.lhs_batch = std::move(lhs);
      attrs->dot.rhs_batch = std::move(rhs);
    } else {
      attrs->dot.lhs_contract = std::move(lhs);
      attrs->dot.rhs_contract = std::move(rhs);
    }
  }
  return absl::OkStatus();
}

// stablehlo.reduce(%x init: %c) applies stablehlo.add across dimensions = [1] : (...) -> ...
// stablehlo.reduce(%x init: %c) across dimensions = [1] : (...) -> ...
//     reducer(%a: tensor<f32>, %b: tensor<f32>) { %m = stablehlo.maximum %a, %b : tensor<f32>
//                                                 stablehlo.return %m : tensor<f32> }
absl::Status Parser::ParsePrettyReduce(Function* f, Scope* scope, const Token& result, size_t op_offset) {
  std::vector<ValueId> operands;
  std::vector<size_t> offsets;
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kLParen, "after stablehlo.reduce"));
  PCP_RETURN_IF_ERROR(ParseOperand(*scope, &operands, &offsets));
  PCP_RETURN_IF_ERROR(ExpectWord("init", "after the input of stablehlo.reduce"));
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "after 'init'"));
  PCP_RETURN_IF_ERROR(ParseOperand(*scope, &operands, &offsets));
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "to close (input init: value)"));
  if (Is(TokenKind::kComma)) return ErrorAt(cur_.offset, "stablehlo.reduce with several inputs is not supported");
  Attributes attrs;
  const TensorType scalar{f->type(operands[0]).dtype, {}};
  const bool applies = IsWord("applies");
  ReducerBody body = ReducerBody::kAdd;
  if (applies) {
    Advance();
    PCP_ASSIGN_OR_RETURN(body, ReducerOf(Op::kReduce, scalar.dtype, /*generic=*/false));
    Advance();
  }
  PCP_RETURN_IF_ERROR(ExpectWord("across", "in stablehlo.reduce"));
  PCP_RETURN_IF_ERROR(ExpectKey("dimensions", "stablehlo.reduce"));
  PCP_ASSIGN_OR_RETURN(attrs.dims, ParseBracketList());
  PCP_RETURN_IF_ERROR(ParseIgnorableAttributes("stablehlo.reduce"));
  size_t type_offset = 0;
  std::vector<TensorType> in, out;
  PCP_RETURN_IF_ERROR(ParsePrettyType(2, &type_offset, &in, &out));
  if (!applies) {
    PCP_RETURN_IF_ERROR(ExpectWord("reducer", "(the body of stablehlo.reduce)"));
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kLParen, "to start the reducer's arguments"));
    std::string args[2];
    PCP_RETURN_IF_ERROR(ParseScalarArgPair(*scope, scalar, "(the reducer takes two arguments)",
                                           "the reducer arguments of stablehlo.reduce here must be ", args));
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "(the reducer takes two arguments)"));
    if (Is(TokenKind::kLParen)) return ErrorAt(cur_.offset, "stablehlo.reduce with several inputs is not supported");
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kLBrace, "to start the reducer's body"));
    PCP_ASSIGN_OR_RETURN(body, ParseReducerBody(Op::kReduce, scalar, args, *scope));
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kRBrace, "after stablehlo.return (the reducer is a single operation)"));
  }
  if (body == ReducerBody::kOr || body == ReducerBody::kAnd) {
    return AddLogicalReduce(f, scope, body, result, op_offset, type_offset, operands, offsets, in, out,
                            std::move(attrs.dims));
  }
  attrs.reduce_kind = body == ReducerBody::kMaximum ? ReduceKind::kMax : ReduceKind::kSum;
  return AddOperation(f, scope, Op::kReduce, result, op_offset, type_offset, std::move(operands), offsets, in, out,
                      std::move(attrs), OpAttributes{});
}

}  // namespace pcp::text_internal
