// stablehlo.custom_call and stablehlo.composite, which PCP refuses with a message naming the
// target (or the decomposition), and the checks of StableHLO's test suites, which it reads
// only when ParseOptions::checks asks for them:
//   check.expect_eq %a, %b : t                       check.expect_eq_const %a, dense<..> : t
//   check.expect_almost_eq %a, %b, tolerance = X : t check.expect_almost_eq_const %a, dense<..> : t
//   check.expect_close %a, %b, max_ulp_difference = N[, min_ulp_difference = M] : t, t
//   stablehlo.custom_call @check.expect_close(%a, %b) {has_side_effect = true} : (t, t) -> ()
// and the same in the generic form ("check.expect_eq_const"(%a) <{value = dense<..> : t}> : (t) -> ()).
// IREE's tests put the operands in parentheses: check.expect_almost_eq_const(%a, dense<..> : t) : t.
// A check's operands are appended to its function's results when calls are linked
// (text_calls.cc). See text.h.
#include <cstdlib>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "text_parser.h"

namespace pcp::text_internal {
namespace {

constexpr absl::string_view kForeignCode = "PCP cannot run foreign code";

// The check a custom_call target or check op name stands for, if any.
bool CheckKind(absl::string_view name, ParsedCheck::Kind* kind, bool* constant) {
  struct Entry {
    absl::string_view name;
    ParsedCheck::Kind kind;
    bool constant;
  };
  static constexpr Entry kChecks[] = {
      {"check.expect_eq", ParsedCheck::Kind::kEq, false},
      {"check.expect_eq_const", ParsedCheck::Kind::kEq, true},
      {"check.expect_almost_eq", ParsedCheck::Kind::kAlmostEq, false},
      {"check.expect_almost_eq_const", ParsedCheck::Kind::kAlmostEq, true},
      {"check.expect_close", ParsedCheck::Kind::kClose, false},
  };
  for (const Entry& e : kChecks) {
    if (e.name == name) {
      *kind = e.kind;
      *constant = e.constant;
      return true;
    }
  }
  return false;
}

}  // namespace

absl::Status Parser::AddCheck(ParsedCheck check, ValueId lhs, ValueId rhs, size_t op_offset) {
  if (options_.checks == nullptr) {
    return ErrorAt(op_offset, absl::StrCat(check.op,
                                           " is not supported: checks of StableHLO's test suites are "
                                           "read only by conformance tools"));
  }
  check.location = lexer_.Location(op_offset);
  links_[function_index_].checks.push_back(PendingCheck{std::move(check), lhs, rhs});
  return absl::OkStatus();
}

absl::Status Parser::ParseCustomCall(Function* f, Scope* scope, const Token& result, size_t op_offset) {
  const bool generic = Is(TokenKind::kString);
  Advance();
  std::string target;
  std::vector<ValueId> operands;
  std::vector<size_t> offsets;
  if (!generic) {
    if (!Is(TokenKind::kAtId)) return Expected("the custom call's target (@name)");
    target = SymbolName(cur_);
    Advance();
  }
  auto refuse = [&](absl::string_view target) {
    return ErrorAt(op_offset, absl::StrCat("custom_call @", target, " is not supported: ", kForeignCode));
  };
  ParsedCheck::Kind kind;
  bool constant = false;
  const bool check = CheckKind(target, &kind, &constant) && !constant;
  if (!generic && (!check || options_.checks == nullptr)) return refuse(target);
  PCP_RETURN_IF_ERROR(ParseOperandList(*scope, &operands, &offsets));
  // Attributes (properties <{...}> and / or a dictionary): the target's name in the generic
  // form; has_side_effect, backend_config, api_version... say nothing a check needs.
  PCP_RETURN_IF_ERROR(ParseAttributeDicts(
      [&](const std::string& key, size_t) -> absl::Status {
        if (key != "call_target_name") return SkipAttributeValue();
        PCP_ASSIGN_OR_RETURN(target, ParseString("the target's name"));
        return absl::OkStatus();
      },
      /*unit_attributes=*/true));
  if (target.empty()) return ErrorAt(op_offset, "stablehlo.custom_call needs a call_target_name");
  if (!CheckKind(target, &kind, &constant) || constant || options_.checks == nullptr) return refuse(target);
  if (result.kind != TokenKind::kEof)
    return ErrorAt(op_offset, absl::StrCat("custom_call @", target, " has no results"));
  if (operands.size() != 2) {
    return ErrorAt(op_offset, absl::StrCat("custom_call @", target, " takes 2 operands, got ", operands.size()));
  }
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "before the custom call's type"));
  const size_t type_offset = cur_.offset;
  std::vector<TensorType> in, out;
  PCP_RETURN_IF_ERROR(ParseTypeList(&in));
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kArrow, "in the custom call's type"));
  PCP_RETURN_IF_ERROR(ParseResultTypes(&out));
  if (in.size() != 2 || !out.empty() || in[0] != f->type(operands[0]) || in[1] != f->type(operands[1]) ||
      in[0] != in[1]) {
    return ErrorAt(type_offset,
                   absl::StrCat("custom_call @", target,
                                " takes two operands of one type and returns "
                                "nothing: expected (",
                                f->type(operands[0]).ToString(), ", ", f->type(operands[0]).ToString(), ") -> ()"));
  }
  ParsedCheck parsed;
  parsed.kind = kind;
  parsed.op = absl::StrCat("custom_call @", target);
  parsed.custom_call = true;
  return AddCheck(std::move(parsed), operands[0], operands[1], op_offset);
}

absl::Status Parser::CompositeError(size_t op_offset) {
  // Read up to the op's type for its name and decomposition: the message names both.
  const bool generic = Is(TokenKind::kString);
  Advance();
  std::string name, decomposition;
  if (!generic && Is(TokenKind::kString)) name = DecodeString(cur_);
  int depth = 0;
  for (int steps = 0; steps < 100000 && !Is(TokenKind::kEof) && !(depth == 0 && Is(TokenKind::kColon)); ++steps) {
    if (Is(TokenKind::kLParen) || Is(TokenKind::kLSquare) || Is(TokenKind::kLBrace) || Is(TokenKind::kLess)) ++depth;
    if (Is(TokenKind::kRParen) || Is(TokenKind::kRSquare) || Is(TokenKind::kRBrace) || Is(TokenKind::kGreater)) --depth;
    const bool decomposition_key = IsWord("decomposition");
    const bool name_key = generic && IsWord("name");
    Advance();
    if ((decomposition_key || name_key) && ConsumeIf(TokenKind::kEqual)) {
      if (decomposition_key && Is(TokenKind::kAtId)) decomposition = SymbolName(cur_);
      if (name_key && Is(TokenKind::kString)) name = DecodeString(cur_);
    }
  }
  return ErrorAt(op_offset, absl::StrCat("stablehlo.composite ", name.empty() ? "" : absl::StrCat("\"", name, "\" "),
                                         "is not supported",
                                         decomposition.empty()
                                             ? ""
                                             : absl::StrCat(": call its decomposition @", decomposition, " instead")));
}

absl::Status Parser::BeginCheckOp(const std::string& name, const Token& result, size_t op_offset, ParsedCheck* check,
                                  bool* constant) {
  if (!CheckKind(name, &check->kind, constant)) {
    return ErrorAt(op_offset, absl::StrCat("unsupported check op '", name, "'"));
  }
  check->op = name;
  Advance();
  if (result.kind != TokenKind::kEof) return ErrorAt(op_offset, absl::StrCat(name, " has no results"));
  return absl::OkStatus();
}

absl::Status Parser::ParseGenericCheckOp(Function* f, Scope* scope, const Token& result, size_t op_offset) {
  const std::string name = DecodeString(cur_);
  ParsedCheck check;
  bool constant = false;
  PCP_RETURN_IF_ERROR(BeginCheckOp(name, result, op_offset, &check, &constant));
  std::vector<ValueId> operands;
  std::vector<size_t> offsets;
  PCP_RETURN_IF_ERROR(ParseOperandList(*scope, &operands, &offsets));
  if (operands.size() != (constant ? 1u : 2u)) {
    return ErrorAt(op_offset, absl::StrCat(name, " takes ", constant ? 1 : 2, " operands, got ", operands.size()));
  }
  // {value = dense<..> : t, tolerance = X : f64, max_ulp_difference = N : i64, ...}, as
  // properties <{...}> and / or an attribute dictionary.
  std::optional<Tensor> value;
  TensorType value_type;
  size_t value_offset = op_offset;
  PCP_RETURN_IF_ERROR(ParseAttributeDicts([&](const std::string& key, size_t key_offset) -> absl::Status {
    if (key == "value" && constant) {
      value_offset = cur_.offset;
      PCP_ASSIGN_OR_RETURN(value, ParseDenseElements(&value_type));
      return absl::OkStatus();
    }
    const bool tolerance = key == "tolerance" && check.kind == ParsedCheck::Kind::kAlmostEq;
    const bool ulp =
        (key == "max_ulp_difference" || key == "min_ulp_difference") && check.kind == ParsedCheck::Kind::kClose;
    if (!tolerance && !ulp) return ErrorAt(key_offset, absl::StrCat("unsupported attribute '", key, "' on ", name));
    if (!Is(TokenKind::kInteger) && !Is(TokenKind::kFloat)) return Expected("a number");
    const std::string text(cur_.text);
    Advance();
    if (ConsumeIf(TokenKind::kColon)) {  // : f64, : i64
      if (!Is(TokenKind::kBareId)) return Expected("a type");
      Advance();
    }
    if (tolerance) {
      check.tolerance = std::strtod(text.c_str(), nullptr);
    } else {
      (key == "max_ulp_difference" ? check.max_ulp : check.min_ulp) = std::strtoull(text.c_str(), nullptr, 0);
    }
    return absl::OkStatus();
  }));
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, absl::StrCat("before the type of ", name)));
  const size_t type_offset = cur_.offset;
  std::vector<TensorType> in, out;
  PCP_RETURN_IF_ERROR(ParseTypeList(&in));
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kArrow, absl::StrCat("in the type of ", name)));
  PCP_RETURN_IF_ERROR(ParseResultTypes(&out));
  std::vector<TensorType> actual;
  for (ValueId v : operands) actual.push_back(f->type(v));
  if (in != actual || !out.empty()) {
    return ErrorAt(type_offset, absl::StrCat("the type of ", name, " must be its operands' types -> ()"));
  }
  if (constant) {
    if (!value.has_value()) return ErrorAt(op_offset, absl::StrCat(name, " needs a value attribute"));
    if (value_type != actual[0]) {
      return ErrorAt(value_offset, absl::StrCat("the expected value has type ", value_type.ToString(),
                                                " but the operand has ", actual[0].ToString()));
    }
    Attributes attrs;
    attrs.literal = *std::move(value);
    operands.push_back(f->AddInstruction(Op::kConstant, {}, value_type, std::move(attrs)));
  } else if (actual[0] != actual[1]) {
    return ErrorAt(type_offset, absl::StrCat(name, " takes two operands of one type"));
  }
  return AddCheck(std::move(check), operands[0], operands[1], op_offset);
}

absl::Status Parser::ParseCheckOp(Function* f, Scope* scope, const Token& result, size_t op_offset) {
  if (Is(TokenKind::kString)) return ParseGenericCheckOp(f, scope, result, op_offset);
  const std::string name(cur_.text);
  ParsedCheck check;
  bool constant = false;
  PCP_RETURN_IF_ERROR(BeginCheckOp(name, result, op_offset, &check, &constant));
  std::vector<ValueId> operands;
  std::vector<size_t> offsets;
  // IREE's tests write the operands in parentheses: check.expect_eq_const(%a, dense<..> : t) : t.
  const bool parenthesised = ConsumeIf(TokenKind::kLParen);
  if (!Is(TokenKind::kPercentId)) {
    return Expected(absl::StrCat("the operands of ", name, " (", name, " %a, ", constant ? "dense<...> : t" : "%b : t",
                                 ", or in parentheses as IREE writes them)"));
  }
  PCP_RETURN_IF_ERROR(ParseOperand(*scope, &operands, &offsets));
  const TensorType lhs_type = f->type(operands[0]);
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kComma, absl::StrCat("after the first operand of ", name)));
  if (constant) {  // check.expect_eq_const %a, dense<...> : t
    const size_t value_offset = cur_.offset;
    TensorType type;
    Attributes attrs;
    PCP_ASSIGN_OR_RETURN(attrs.literal, ParseDenseElements(&type));
    if (type != lhs_type) {
      return ErrorAt(value_offset, absl::StrCat("the expected value has type ", type.ToString(),
                                                " but the operand has ", lhs_type.ToString()));
    }
    operands.push_back(f->AddInstruction(Op::kConstant, {}, type, std::move(attrs)));
  } else {
    PCP_RETURN_IF_ERROR(ParseOperand(*scope, &operands, &offsets));
  }
  if (parenthesised) {
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kRParen, absl::StrCat("to close the operands of ", name)));
    if (constant && Is(TokenKind::kColon)) {  // `: t`, the operand's type again
      Advance();
      const size_t type_offset = cur_.offset;
      PCP_ASSIGN_OR_RETURN(TensorType t, ParseTensorType());
      if (t != lhs_type) {
        return ErrorAt(type_offset, absl::StrCat("the type ", t.ToString(), " of ", name, " is not its operand's, ",
                                                 lhs_type.ToString()));
      }
    }
  }
  // `, tolerance = X [: f64]`, `, max_ulp_difference = N`, `, min_ulp_difference = M`.
  while (ConsumeIf(TokenKind::kComma)) {
    const size_t key_offset = cur_.offset;
    const std::string key = Is(TokenKind::kBareId) ? std::string(cur_.text) : "";
    const bool tolerance = key == "tolerance" && check.kind == ParsedCheck::Kind::kAlmostEq;
    const bool ulp =
        (key == "max_ulp_difference" || key == "min_ulp_difference") && check.kind == ParsedCheck::Kind::kClose;
    if (!tolerance && !ulp) return ErrorAt(key_offset, absl::StrCat("unexpected ", Describe(cur_), " in ", name));
    Advance();
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kEqual, absl::StrCat("after '", key, "'")));
    if (!Is(TokenKind::kInteger) && !(tolerance && Is(TokenKind::kFloat))) return Expected("a number");
    const std::string text(cur_.text);
    Advance();
    if (tolerance) {
      check.tolerance = std::strtod(text.c_str(), nullptr);
      if (Is(TokenKind::kColon)) {  // `tolerance = 0.001 : f64`, unless the colon starts the op's type
        const Token next = PeekToken();
        if (next.kind == TokenKind::kBareId && (next.text == "f64" || next.text == "f32")) {
          Advance();
          Advance();
        }
      }
    } else {
      const uint64_t value = std::strtoull(text.c_str(), nullptr, 0);
      (key == "max_ulp_difference" ? check.max_ulp : check.min_ulp) = value;
    }
  }
  PCP_RETURN_IF_ERROR(ParseIgnorableAttributes(name));
  if (!constant) {  // `: t`, or `: t, t` for expect_close
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, absl::StrCat("before the type of ", name)));
    const size_t type_offset = cur_.offset;
    std::vector<TensorType> types;
    do {
      PCP_ASSIGN_OR_RETURN(TensorType t, ParseTensorType());
      types.push_back(std::move(t));
    } while (ConsumeIf(TokenKind::kComma));
    const TensorType rhs_type = f->type(operands[1]);
    const bool two = check.kind == ParsedCheck::Kind::kClose;
    if (types.size() != (two ? 2u : 1u) || types[0] != lhs_type || types.back() != rhs_type || lhs_type != rhs_type) {
      return ErrorAt(type_offset, absl::StrCat(name, " takes two operands of one type, got ", lhs_type.ToString(),
                                               " and ", rhs_type.ToString()));
    }
  }
  return AddCheck(std::move(check), operands[0], operands[1], op_offset);
}

}  // namespace pcp::text_internal
