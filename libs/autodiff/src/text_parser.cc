// Modules, functions and operations of the generic text form (text.h), the dispatch to the
// pretty form (text_pretty_parser.cc, text_pretty_ops.cc) wherever either may appear, and the
// checks every parsed operation goes through (AddOperation). Types and attribute values are
// in text_attr_parser.cc, per-op attribute rules in text_op_attrs.cc.
#include "text_parser.h"

#include <algorithm>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pcp/autodiff/text.h"
#include "pcp/autodiff/type_inference.h"
#include "pcp/autodiff/verifier.h"

namespace pcp::text_internal {

std::string TypesString(const std::vector<TensorType>& types) {
  std::vector<std::string> parts;
  for (const TensorType& t : types) parts.push_back(t.ToString());
  return absl::StrCat("(", absl::StrJoin(parts, ", "), ")");
}

std::string FunctionTypeString(const std::vector<TensorType>& in, const std::vector<TensorType>& out) {
  return absl::StrCat(TypesString(in), " -> ", TypesString(out));
}

namespace {

bool IsOpName(const Token& t, absl::string_view name) {
  return t.kind == TokenKind::kString && DecodeString(t) == name;
}

}  // namespace

absl::Status Parser::ExpectEmptySignature(absl::string_view what) {
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, absl::StrCat("before the type of ", what)));
  size_t start = cur_.offset;
  std::vector<TensorType> in, out;
  PCP_RETURN_IF_ERROR(ParseTypeList(&in));
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kArrow, "in the operation's type"));
  PCP_RETURN_IF_ERROR(ParseTypeList(&out));
  if (!in.empty() || !out.empty()) return ErrorAt(start, absl::StrCat("the type of ", what, " must be () -> ()"));
  return absl::OkStatus();
}

absl::StatusOr<std::string> Parser::ParseAttrName() {
  if (Is(TokenKind::kBareId)) {
    std::string name(cur_.text);
    Advance();
    return name;
  }
  if (Is(TokenKind::kString)) {
    std::string name = DecodeString(cur_);
    Advance();
    return name;
  }
  return Expected("an attribute name");
}

absl::StatusOr<Module> Parser::ParseTopLevel() {
  Module module;
  PCP_RETURN_IF_ERROR(SkipAliasDefinitions());
  if (IsOpName(cur_, "builtin.module")) {
    Advance();
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kLParen, "after \"builtin.module\""));
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "(builtin.module takes no operands)"));
    if (ConsumeIf(TokenKind::kLess)) {  // properties <{sym_name = "m"}>
      if (!Is(TokenKind::kLBrace)) return Expected("'{' after '<' (properties are written <{...}>)");
      PCP_RETURN_IF_ERROR(ParseIgnorableAttributes("the module", nullptr, /*symbol=*/true));
      PCP_RETURN_IF_ERROR(Expect(TokenKind::kGreater, "to close the properties <{...}>"));
    }
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kLParen, "to start the module's region"));
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kLBrace, "to start the module's region"));
    if (ConsumeIf(TokenKind::kCaretId)) {
      if (ConsumeIf(TokenKind::kLParen))
        PCP_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "(the module's block takes no arguments)"));
      PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "after the block label"));
    }
    while (!Is(TokenKind::kRBrace)) PCP_RETURN_IF_ERROR(ParseAnyFunction(&module));
    Advance();
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "to close the module's region"));
    // Metadata only (torch.debug_module_name, sym_name, ...), as on the pretty form's module.
    PCP_RETURN_IF_ERROR(ParseIgnorableAttributes("the module", nullptr, /*symbol=*/true));
    PCP_RETURN_IF_ERROR(ExpectEmptySignature("builtin.module"));
  } else if (IsWord("module") || IsWord("builtin.module")) {
    PCP_RETURN_IF_ERROR(ParsePrettyModule(&module));
  } else {
    // A bare sequence of functions; mlir-opt accepts it too and wraps it in a module.
    if (!Is(TokenKind::kEof) && !Is(TokenKind::kMetadataBegin) && !IsOpName(cur_, "func.func") &&
        !IsWord("func.func")) {
      return Expected("a module or a function (\"builtin.module\", module, \"func.func\" or func.func)");
    }
    while (!Is(TokenKind::kEof) && !Is(TokenKind::kMetadataBegin) && !Is(TokenKind::kHashId)) {
      PCP_RETURN_IF_ERROR(ParseAnyFunction(&module));
    }
  }
  PCP_RETURN_IF_ERROR(SkipAliasDefinitions());
  if (Is(TokenKind::kMetadataBegin)) PCP_RETURN_IF_ERROR(ParseFileMetadata());
  PCP_RETURN_IF_ERROR(SkipAliasDefinitions());
  if (!Is(TokenKind::kEof)) return Expected("end of input after the module");
  PCP_RETURN_IF_ERROR(ResolveResources(&module));
  PCP_RETURN_IF_ERROR(LinkCalls(&module));  // after the resources: it renumbers instructions
  // Every instruction was checked while parsing; this catches anything the parser missed.
  if (absl::Status s = Verify(module); !s.ok()) return Annotate(s, lexer_.Location(0));
  return module;
}

absl::Status Parser::ParseAnyFunction(Module* module) {
  size_t name_offset = 0;
  function_index_ = module->functions.size();
  links_.resize(function_index_ + 1);
  absl::StatusOr<Function> f;
  if (IsOpName(cur_, "func.func")) {
    f = ParseFunction(&name_offset);
  } else if (IsWord("func.func")) {
    f = ParsePrettyFunction(&name_offset);
  } else {
    return Expected("a function (\"func.func\" or func.func)");
  }
  if (!f.ok()) return f.status();
  if (module->Find(f->name) != nullptr) {
    return ErrorAt(name_offset, absl::StrCat("function @", f->name, " is defined twice"));
  }
  links_[function_index_].num_returned = f->results.size();
  module->functions.push_back(*std::move(f));
  return absl::OkStatus();
}

absl::StatusOr<Function> Parser::ParseFunction(size_t* name_offset) {
  size_t op_offset = cur_.offset;
  if (!IsOpName(cur_, "func.func")) return Expected("\"func.func\"");
  Advance();
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kLParen, "after \"func.func\""));
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "(func.func takes no operands)"));
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kLParen, "to start the function body"));
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kLBrace, "to start the function body"));
  Function f;
  Scope scope;
  if (ConsumeIf(TokenKind::kCaretId)) {
    if (ConsumeIf(TokenKind::kLParen) && !ConsumeIf(TokenKind::kRParen)) {
      do {
        if (!Is(TokenKind::kPercentId)) return Expected("an argument name");
        Token name = cur_;
        Advance();
        PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "after the argument name"));
        PCP_ASSIGN_OR_RETURN(TensorType type, ParseTensorType());
        ValueId v = f.AddParameter(std::move(type));
        if (!scope.values.emplace(std::string(name.text), v).second) {
          return ErrorAt(name.offset, absl::StrCat("redefinition of ", name.text));
        }
      } while (ConsumeIf(TokenKind::kComma));
      PCP_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "to close the argument list"));
    }
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "after the block label"));
  }
  std::vector<TensorType> result_types;
  bool returned = false;
  while (!Is(TokenKind::kRBrace)) {
    if (returned) return ErrorAt(cur_.offset, "func.return must be the last operation of a function");
    if (Is(TokenKind::kCaretId)) return ErrorAt(cur_.offset, "functions with more than one block are not supported");
    if (Is(TokenKind::kEof)) return Expected("an operation or '}'");
    PCP_RETURN_IF_ERROR(ParseOperation(&f, &scope, &result_types, &returned));
  }
  if (!returned) return ErrorAt(cur_.offset, "the function body must end with \"func.return\"");
  Advance();
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "to close the function body"));
  PCP_RETURN_IF_ERROR(ParseFunctionAttributes(&f, result_types, op_offset, name_offset));
  PCP_RETURN_IF_ERROR(ExpectEmptySignature("func.func"));
  return f;
}

absl::Status Parser::ParseFunctionAttributes(Function* f, const std::vector<TensorType>& result_types, size_t op_offset,
                                             size_t* name_offset) {
  if (!Is(TokenKind::kLBrace)) return Expected("'{' with the function's sym_name and function_type");
  Advance();
  bool has_name = false, has_type = false, has_args = false, has_results = false, has_visibility = false;
  if (!Is(TokenKind::kRBrace)) {
    do {
      size_t key_offset = cur_.offset;
      PCP_ASSIGN_OR_RETURN(std::string key, ParseAttrName());
      PCP_RETURN_IF_ERROR(Expect(TokenKind::kEqual, absl::StrCat("after '", key, "'")));
      bool* seen = key == "sym_name"         ? &has_name
                   : key == "function_type"  ? &has_type
                   : key == "arg_attrs"      ? &has_args
                   : key == "res_attrs"      ? &has_results
                   : key == "sym_visibility" ? &has_visibility
                                             : nullptr;
      if (seen == nullptr) return ErrorAt(key_offset, absl::StrCat("unsupported attribute '", key, "' on func.func"));
      if (*seen) return ErrorAt(key_offset, absl::StrCat("attribute '", key, "' appears twice"));
      *seen = true;
      size_t value_offset = cur_.offset;
      if (key == "sym_name") {
        PCP_ASSIGN_OR_RETURN(f->name, ParseString("the function name as a string"));
        if (f->name.empty()) return ErrorAt(value_offset, "the function name must not be empty");
        *name_offset = value_offset;
      } else if (key == "function_type") {
        std::vector<TensorType> in, out;
        PCP_RETURN_IF_ERROR(ParseTypeList(&in));
        PCP_RETURN_IF_ERROR(Expect(TokenKind::kArrow, "in function_type"));
        PCP_RETURN_IF_ERROR(ParseResultTypes(&out));
        std::vector<TensorType> args;
        for (ValueId p : f->params) args.push_back(f->type(p));
        if (in != args || out != result_types) {
          return ErrorAt(value_offset, absl::StrCat("function_type ", FunctionTypeString(in, out),
                                                    " does not match the body, which has type ",
                                                    FunctionTypeString(args, result_types)));
        }
      } else if (key == "sym_visibility") {  // public / private: PCP calls functions by name either way
        PCP_ASSIGN_OR_RETURN(std::string visibility, ParseString("the visibility as a string"));
        if (visibility != "public" && visibility != "private" && visibility != "nested") {
          return ErrorAt(value_offset, absl::StrCat("unknown sym_visibility \"", visibility, "\""));
        }
      } else if (key == "arg_attrs") {
        PCP_ASSIGN_OR_RETURN(f->param_names, ParseNameAttrs(f->params.size(), "arguments"));
      } else {
        PCP_ASSIGN_OR_RETURN(f->result_names, ParseNameAttrs(f->results.size(), "results"));
      }
    } while (ConsumeIf(TokenKind::kComma));
  }
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kRBrace, "to close the function's attributes"));
  if (!has_name) return ErrorAt(op_offset, "func.func needs a sym_name attribute");
  if (!has_type) return ErrorAt(op_offset, "func.func needs a function_type attribute");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> Parser::ParseNameAttrs(size_t count, absl::string_view what) {
  size_t start = cur_.offset;
  std::vector<std::string> names;
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kLSquare, absl::StrCat("to start the attributes of the ", what)));
  if (!Is(TokenKind::kRSquare)) {
    do {
      if (!Is(TokenKind::kLBrace)) return Expected("'{' to start a dictionary");
      std::string name;  // pcp.name; exporters' metadata (jax.arg_info, mhlo.sharding, ...) is read past
      PCP_RETURN_IF_ERROR(ParseIgnorableAttributes(absl::StrCat("one of the function ", what), &name));
      names.push_back(std::move(name));
    } while (ConsumeIf(TokenKind::kComma));
  }
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kRSquare, "to close the list"));
  if (names.size() != count) {
    return ErrorAt(start,
                   absl::StrCat("expected ", count, " dictionaries, one per function ", what, ", got ", names.size()));
  }
  return names;
}

absl::Status Parser::ParseOperandList(const Scope& scope, std::vector<ValueId>* operands,
                                      std::vector<size_t>* offsets) {
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kLParen, "to start the operand list"));
  if (ConsumeIf(TokenKind::kRParen)) return absl::OkStatus();
  do {
    PCP_RETURN_IF_ERROR(ParseOperand(scope, operands, offsets));
  } while (ConsumeIf(TokenKind::kComma));
  return Expect(TokenKind::kRParen, "to close the operand list");
}

absl::Status Parser::FinishReturn(Function* f, std::vector<ValueId> operands, const std::vector<TensorType>& in,
                                  size_t type_offset, std::vector<TensorType>* result_types, bool* returned) {
  std::vector<TensorType> actual;
  for (ValueId v : operands) actual.push_back(f->type(v));
  if (in != actual) {
    return ErrorAt(type_offset, absl::StrCat("the return's types ", TypesString(in), " do not match its operands ",
                                             TypesString(actual)));
  }
  f->results = std::move(operands);
  f->result_names.assign(f->results.size(), "");
  *result_types = in;
  *returned = true;
  return absl::OkStatus();
}

absl::Status Parser::UnsupportedOperation(size_t offset, absl::string_view name) const {
  std::vector<absl::string_view> names;
  for (int i = 0; i < kNumOps; ++i) names.push_back(OpName(AllOps()[i]));
  return ErrorAt(offset, absl::StrCat("unsupported operation '", name, "' (PCP supports ", absl::StrJoin(names, ", "),
                                      ", arith.constant and func.return)"));
}

absl::Status Parser::ParseOperation(Function* f, Scope* scope, std::vector<TensorType>* result_types, bool* returned) {
  size_t op_offset = cur_.offset;
  unsigned_type_read_ = false;
  Token result;
  int num_results = 0;                  // `%r:N =` (only calls and while define several values)
  size_t several_offset = 0;            // of the ':' of `%r:N`, or of the second name of `%a, %b =`
  std::vector<std::string> more_names;  // `%a, %b, ... =`: the names after the first
  if (Is(TokenKind::kPercentId)) {
    result = cur_;
    if (absl::StrContains(result.text, '#')) {
      return ErrorAt(result.offset, absl::StrCat("a result is named without #N (", result.text, ")"));
    }
    Advance();
    num_results = 1;
    if (Is(TokenKind::kColon)) {
      several_offset = cur_.offset;
      Advance();
      if (!Is(TokenKind::kInteger) || cur_.text.size() > 6 || cur_.text[0] == '0') return Expected("a result count");
      num_results = std::stoi(std::string(cur_.text));
      Advance();
    } else if (Is(TokenKind::kComma)) {
      several_offset = cur_.offset;
      while (ConsumeIf(TokenKind::kComma)) {
        if (!Is(TokenKind::kPercentId)) return Expected("a result name");
        more_names.emplace_back(cur_.text);
        Advance();
      }
      num_results += static_cast<int>(more_names.size());
    }
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kEqual, "after the result name"));
  }
  if (IsOp("stablehlo.while")) {
    std::vector<std::string> names;
    if (!more_names.empty()) {
      names.emplace_back(result.text);
      names.insert(names.end(), more_names.begin(), more_names.end());
    } else {
      for (int i = 0; i < num_results; ++i) names.push_back(absl::StrCat(result.text, "#", i));
      if (num_results == 1) names = {std::string(result.text)};
    }
    return ParseWhile(f, scope, names, op_offset);
  }
  if (!more_names.empty()) {
    return ErrorAt(several_offset, absl::StrCat("results named one by one (", result.text, ", ", more_names[0],
                                                ", ...) are read for stablehlo.while only; write ", result.text, ":",
                                                num_results, " = ..."));
  }
  // Calls, custom calls, composites and checks (text_calls.cc, text_checks.cc).
  if (IsWord("call") || IsWord("func.call") || IsOpName(cur_, "func.call")) {
    return ParseCall(f, scope, result, num_results, op_offset);
  }
  // Before the several-results check: a custom call is refused by its target, which says more.
  if (IsOp("stablehlo.custom_call")) return ParseCustomCall(f, scope, result, op_offset);
  if (num_results > 1) return ErrorAt(several_offset, "operations with several results are not supported");
  if (IsOp("stablehlo.composite")) return CompositeError(op_offset);
  if (IsOp("stablehlo.dynamic_slice") || IsOp("stablehlo.dynamic_update_slice")) {
    return ParseDynamicSlice(f, scope, result, op_offset);
  }
  if ((Is(TokenKind::kBareId) && absl::StartsWith(cur_.text, "check.")) ||
      (Is(TokenKind::kString) && absl::StartsWith(DecodeString(cur_), "check."))) {
    return ParseCheckOp(f, scope, result, op_offset);
  }
  if (Is(TokenKind::kBareId)) return ParsePrettyOperation(f, scope, result, op_offset, result_types, returned);
  if (!Is(TokenKind::kString)) return Expected("an operation name");
  const std::string written = DecodeString(cur_);  // errors name the op as written
  const std::string name = CanonicalOpName(written);
  size_t name_offset = cur_.offset;
  Advance();
  std::vector<ValueId> operands;
  std::vector<size_t> operand_offsets;
  if (name == "func.return") {
    if (result.kind != TokenKind::kEof) return ErrorAt(op_offset, "func.return has no results");
    PCP_RETURN_IF_ERROR(ParseOperandList(*scope, &operands, &operand_offsets));
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "before the type of func.return"));
    std::vector<TensorType> in, out;
    size_t type_offset = cur_.offset;
    PCP_RETURN_IF_ERROR(ParseTypeList(&in));
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kArrow, "in the type of func.return"));
    PCP_RETURN_IF_ERROR(ParseTypeList(&out));
    if (!out.empty()) {
      return ErrorAt(type_offset, absl::StrCat("func.return's type ", FunctionTypeString(in, out), " has results"));
    }
    return FinishReturn(f, std::move(operands), in, type_offset, result_types, returned);
  }
  // dynamic_iota is read as iota with its attributes, plus the shape operand (text_dynamic_iota.cc).
  const bool dynamic_iota = name == "stablehlo.dynamic_iota";
  const bool legacy_dot = name == "stablehlo.dot";  // dot_general with dims from the ranks (text_compat.cc)
  absl::StatusOr<Op> op = dynamic_iota               ? Op::kIota
                          : legacy_dot               ? Op::kDotGeneral
                          : name == "arith.constant" ? Op::kConstant  // as in the pretty form
                                                     : ParseOp(name);
  if (!op.ok()) return UnsupportedOperation(name_offset, written);
  if (result.kind == TokenKind::kEof) {
    return ErrorAt(op_offset, absl::StrCat(name, " must define a result (%name = \"", name, "\"(...))"));
  }
  PCP_RETURN_IF_ERROR(ParseOperandList(*scope, &operands, &operand_offsets));
  int arity = dynamic_iota ? 1 : OpArity(*op);
  if ((arity != kVariadic && static_cast<int>(operands.size()) != arity) || operands.empty() != (arity == 0)) {
    return ErrorAt(op_offset, absl::StrCat(name, " expects ", arity == kVariadic ? "at least 1" : absl::StrCat(arity),
                                           " operands, got ", operands.size()));
  }
  Attributes attrs;
  OpAttributes parsed;
  // Newer MLIR prints inherent attributes as properties, <{...}>, before the regions.
  if (ConsumeIf(TokenKind::kLess)) {
    if (!Is(TokenKind::kLBrace)) return Expected("'{' after '<' (properties are written <{...}>)");
    PCP_RETURN_IF_ERROR(ParseAttributeDict(*op, &attrs, &parsed));
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kGreater, "to close the properties <{...}>"));
  }
  bool needs_region = *op == Op::kReduce || *op == Op::kScatter;
  ReducerBody body = ReducerBody::kAdd;
  if (Is(TokenKind::kLParen)) {
    if (!needs_region) return ErrorAt(cur_.offset, absl::StrCat(name, " takes no regions"));
    PCP_ASSIGN_OR_RETURN(body, ParseReductionRegion(*op, f->type(operands[0]).dtype, *scope, &parsed.scatter_assign));
    attrs.reduce_kind = body == ReducerBody::kMaximum ? ReduceKind::kMax : ReduceKind::kSum;
  } else if (needs_region) {
    return Expected(absl::StrCat("'(' with the body region of ", name));
  }
  if (Is(TokenKind::kLBrace)) PCP_RETURN_IF_ERROR(ParseAttributeDict(*op, &attrs, &parsed));
  if (legacy_dot) {  // dot has no dimension numbers: they follow from the operands' ranks
    for (const std::string& key : parsed.seen) {
      if (key != "precision_config") {
        return ErrorAt(op_offset, absl::StrCat(written, " does not take attribute '", key, "'"));
      }
    }
  } else if (absl::Status required = CheckRequiredAttributes(*op, parsed, op_offset); !required.ok()) {
    return dynamic_iota ? ErrorAt(op_offset, absl::StrCat(name, " needs attribute 'iota_dimension'")) : required;
  }
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "before the operation's type"));
  size_t type_offset = cur_.offset;
  std::vector<TensorType> in, out;
  PCP_RETURN_IF_ERROR(ParseTypeList(&in));
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kArrow, "in the operation's type"));
  PCP_RETURN_IF_ERROR(ParseResultTypes(&out));
  if (dynamic_iota) {
    return AddDynamicIota(f, scope, result, op_offset, type_offset, operands[0], operand_offsets[0], in, out,
                          std::move(attrs));
  }
  if (body == ReducerBody::kOr || body == ReducerBody::kAnd) {
    return AddLogicalReduce(f, scope, body, result, op_offset, type_offset, operands, operand_offsets, in, out,
                            std::move(attrs.dims));
  }
  if (legacy_dot) PCP_RETURN_IF_ERROR(LegacyDotDims(in, op_offset, &attrs.dot));
  return AddOperation(f, scope, *op, result, op_offset, type_offset, std::move(operands), operand_offsets, in, out,
                      std::move(attrs), parsed);
}

absl::Status Parser::AddOperation(Function* f, Scope* scope, Op op, const Token& result, size_t op_offset,
                                  size_t type_offset, std::vector<ValueId> operands,
                                  const std::vector<size_t>& operand_offsets, const std::vector<TensorType>& in,
                                  const std::vector<TensorType>& out, Attributes attrs, const OpAttributes& parsed) {
  absl::string_view name = OpName(op);
  if (in.size() != operands.size()) {
    return ErrorAt(type_offset,
                   absl::StrCat("the type lists ", in.size(), " operands but ", name, " has ", operands.size()));
  }
  std::vector<TensorType> operand_types;
  for (size_t i = 0; i < operands.size(); ++i) {
    const TensorType& t = f->type(operands[i]);
    if (t != in[i]) {
      return ErrorAt(operand_offsets[i], absl::StrCat("operand #", i, " has type ", t.ToString(),
                                                      " but the operation's type says ", in[i].ToString()));
    }
    operand_types.push_back(t);
  }
  if (out.size() != 1)
    return ErrorAt(type_offset, absl::StrCat(name, " has exactly one result, the type lists ", out.size()));
  BroadcastScalarOperands(op, f, &operands, &operand_types);
  if (op == Op::kGather || op == Op::kScatter) {
    return AddIndexing(f, scope, op, result, op_offset, type_offset, operands, operand_types, out[0], parsed);
  }
  if (op == Op::kCompare) PCP_RETURN_IF_ERROR(CheckComparisonType(parsed, operand_types[0].dtype));
  absl::StatusOr<TensorType> inferred = InferResultType(op, operand_types, attrs, &out[0]);
  if (!inferred.ok()) return ErrorAt(op_offset, inferred.status().message());
  if (op == Op::kConstant && !pending_resources_.empty() && pending_resources_.back().instruction == kNoInstruction) {
    pending_resources_.back().instruction = f->instructions.size();
  }
  ValueId v = f->AddInstruction(op, std::move(operands), out[0], std::move(attrs));
  if (!scope->values.emplace(std::string(result.text), v).second) {
    return ErrorAt(result.offset, absl::StrCat("redefinition of ", result.text));
  }
  return absl::OkStatus();
}

void Parser::BroadcastScalarOperands(Op op, Function* f, std::vector<ValueId>* operands,
                                     std::vector<TensorType>* types) const {
  if ((op != Op::kClamp && op != Op::kSelect) || types->size() != 3 || (*types)[1].rank() == 0) return;
  for (size_t i : {size_t{0}, size_t{2}}) {
    const bool scalar_operand =
        op == Op::kClamp ? (*types)[i].dtype == (*types)[1].dtype : i == 0 && (*types)[i].dtype == DType::kBool;
    if ((*types)[i].rank() != 0 || !scalar_operand) continue;
    const TensorType full{(*types)[i].dtype, (*types)[1].shape};
    (*operands)[i] = f->AddInstruction(Op::kBroadcastInDim, {(*operands)[i]}, full);  // dims = [] (a scalar)
    (*types)[i] = full;
  }
}

absl::StatusOr<ReducerBody> Parser::ParseReductionRegion(Op op, DType dtype, const Scope& scope, bool* assign) {
  const TensorType scalar{dtype, {}};
  const std::string op_name(OpName(op));
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kLParen, "to start the body region"));
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kLBrace, "to start the body region"));
  std::string shape = absl::StrCat("^bb0(%lhs: ", scalar.ToString(), ", %rhs: ", scalar.ToString(), "):");
  if (!Is(TokenKind::kCaretId)) return Expected(absl::StrCat("a block with two arguments (", shape, ")"));
  Advance();
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kLParen, absl::StrCat("(the body's block takes two arguments: ", shape, ")")));
  std::string args[2];
  PCP_RETURN_IF_ERROR(ParseScalarArgPair(scope, scalar, absl::StrCat("(the body of ", op_name, " takes two arguments)"),
                                         absl::StrCat("the body arguments of ", op_name, " here must be "), args));
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kRParen, absl::StrCat("(the body of ", op_name, " takes two arguments)")));
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "after the block label"));
  PCP_ASSIGN_OR_RETURN(ReducerBody kind, ParseReducerBody(op, scalar, args, scope, assign));
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kRBrace,
                             absl::StrCat("after stablehlo.return (the body of ", op_name, " is a single operation)")));
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kRParen, absl::StrCat("(", op_name, " has one region)")));
  return kind;
}

absl::Status Parser::ParseScalarArgPair(const Scope& scope, const TensorType& scalar, absl::string_view comma_hint,
                                        absl::string_view type_error, std::string (&args)[2]) {
  for (int i = 0; i < 2; ++i) {
    if (i == 1) PCP_RETURN_IF_ERROR(Expect(TokenKind::kComma, comma_hint));
    if (!Is(TokenKind::kPercentId)) return Expected("an argument name");
    args[i] = std::string(cur_.text);
    if (scope.values.count(args[i]) != 0 || (i == 1 && args[1] == args[0])) {
      return ErrorAt(cur_.offset, absl::StrCat("redefinition of ", args[i]));
    }
    Advance();
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "after the argument name"));
    const size_t type_offset = cur_.offset;
    PCP_ASSIGN_OR_RETURN(TensorType t, ParseTensorType());
    if (t != scalar) return ErrorAt(type_offset, absl::StrCat(type_error, scalar.ToString(), ", got ", t.ToString()));
  }
  return absl::OkStatus();
}

absl::StatusOr<ReducerBody> Parser::ParseReducerBody(Op op, const TensorType& scalar, const std::string (&args)[2],
                                                     const Scope& scope, bool* assign) {
  const std::string op_name(OpName(op));
  // A scatter that assigns: the body returns the update, its second argument.
  if (assign != nullptr && op == Op::kScatter && IsOp("stablehlo.return")) {
    PCP_RETURN_IF_ERROR(ParseRegionReturn(args[1], scalar));
    *assign = true;
    return ReducerBody::kAdd;
  }
  // %r = "stablehlo.add"(%lhs, %rhs) : (t, t) -> t, or %r = stablehlo.add %lhs, %rhs : t
  if (!Is(TokenKind::kPercentId)) return Expected(absl::StrCat("the body's operation (%r = stablehlo.add ...)"));
  std::string r(cur_.text);
  if (scope.values.count(r) != 0 || r == args[0] || r == args[1]) {
    return ErrorAt(cur_.offset, absl::StrCat("redefinition of ", r));
  }
  Advance();
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kEqual, "after the result name"));
  const bool generic = Is(TokenKind::kString);
  PCP_ASSIGN_OR_RETURN(ReducerBody kind, ReducerOf(op, scalar.dtype, /*generic=*/true));
  Advance();
  size_t operands_offset = cur_.offset;
  if (generic) PCP_RETURN_IF_ERROR(Expect(TokenKind::kLParen, "to start the operand list"));
  std::string used[2];
  for (int i = 0; i < 2; ++i) {
    if (i == 1) PCP_RETURN_IF_ERROR(Expect(TokenKind::kComma, "between the two operands"));
    if (!Is(TokenKind::kPercentId)) return Expected("an operand (%name)");
    used[i] = std::string(cur_.text);
    Advance();
  }
  if (generic) PCP_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "to close the operand list"));
  if (!((used[0] == args[0] && used[1] == args[1]) || (used[0] == args[1] && used[1] == args[0]))) {
    return ErrorAt(operands_offset, absl::StrCat("the body of ", op_name, " must combine its two block arguments ",
                                                 args[0], " and ", args[1]));
  }
  auto check_type = [&](size_t type_offset, const std::vector<TensorType>& in, const std::vector<TensorType>& out,
                        const std::vector<TensorType>& want_in, const std::vector<TensorType>& want_out) {
    if (in == want_in && out == want_out) return absl::OkStatus();
    return ErrorAt(type_offset, absl::StrCat("expected type ", FunctionTypeString(want_in, want_out), ", got ",
                                             FunctionTypeString(in, out)));
  };
  {
    size_t type_offset = 0;
    std::vector<TensorType> in, out;
    if (generic) {
      PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "before the operation's type"));
      type_offset = cur_.offset;
      PCP_RETURN_IF_ERROR(ParseTypeList(&in));
      PCP_RETURN_IF_ERROR(Expect(TokenKind::kArrow, "in the operation's type"));
      PCP_RETURN_IF_ERROR(ParseResultTypes(&out));
    } else {
      PCP_RETURN_IF_ERROR(ParsePrettyType(2, &type_offset, &in, &out));
    }
    PCP_RETURN_IF_ERROR(check_type(type_offset, in, out, {scalar, scalar}, {scalar}));
  }
  PCP_RETURN_IF_ERROR(ParseRegionReturn(r, scalar));
  return kind;
}

absl::Status Parser::ParseRegionReturn(const std::string& r, const TensorType& scalar) {
  // "stablehlo.return"(%r) : (t) -> (), or stablehlo.return %r : t
  const bool generic_return = Is(TokenKind::kString) && IsOp("stablehlo.return");
  if (!IsOp("stablehlo.return")) return Expected("stablehlo.return ending the body");
  Advance();
  if (generic_return) PCP_RETURN_IF_ERROR(Expect(TokenKind::kLParen, "after \"stablehlo.return\""));
  if (!Is(TokenKind::kPercentId) || cur_.text != r) return Expected(absl::StrCat("'", r, "' (the body's result)"));
  Advance();
  std::vector<TensorType> in, out;
  size_t type_offset;
  if (generic_return) {
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "(stablehlo.return takes one operand here)"));
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "before the operation's type"));
    type_offset = cur_.offset;
    PCP_RETURN_IF_ERROR(ParseTypeList(&in));
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kArrow, "in the operation's type"));
    PCP_RETURN_IF_ERROR(ParseTypeList(&out));
  } else {
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "before the type of stablehlo.return"));
    type_offset = cur_.offset;
    PCP_ASSIGN_OR_RETURN(TensorType t, ParseTensorType());
    in = {t};
  }
  if (in == std::vector<TensorType>{scalar} && out.empty()) return absl::OkStatus();
  return ErrorAt(type_offset, absl::StrCat("expected type ", FunctionTypeString({scalar}, {}), ", got ",
                                           FunctionTypeString(in, out)));
}

}  // namespace pcp::text_internal

namespace pcp {

absl::StatusOr<Module> ParseModule(absl::string_view text, absl::string_view source_name) {
  return ParseModule(text, source_name, ParseOptions{});
}

absl::StatusOr<Module> ParseModule(absl::string_view text, absl::string_view source_name, const ParseOptions& options) {
  text_internal::Parser parser(text, source_name, options);
  return parser.ParseTopLevel();
}

}  // namespace pcp
