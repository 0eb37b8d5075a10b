// stablehlo.while with a static trip count, unrolled as it is read (text_parser.h).
//
// PCP's IR is straight-line: a loop whose condition folds to a constant on every iteration
// (a counter against a bound, as JAX prints lax.scan / fori_loop over layers) is replaced by
// copies of its body, so the interpreter, both backends, fusion and autodiff (the VJP of the
// unrolled body, iteration by iteration) need nothing new. The regions are read again for
// each iteration (the lexer seeks back to them): cond, folded with KnownValue and then
// dropped from the function; body, appended with its block arguments bound to the values
// the previous iteration returned. Carried values that fold (the counter) are re-emitted as
// constants, so folding the next condition never looks through the whole chain.
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pcp/base/status_macros.h"
#include "text_parser.h"

namespace pcp::text_internal {
namespace {

// Bounds on what one loop may unroll into.
constexpr int64_t kMaxWhileIterations = 100'000;
constexpr size_t kMaxUnrolledInstructions = 2'000'000;
// Carried values at most this big are re-emitted as constants when they fold.
constexpr int64_t kMaxCarriedConstantElements = 64;

}  // namespace

absl::Status Parser::SkipRegion() {
  const size_t start = cur_.offset;
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kLBrace, "to start the region"));
  int depth = 1;
  while (depth > 0) {
    if (Is(TokenKind::kEof)) return ErrorAt(start, "region is not closed (no matching '}')");
    if (Is(TokenKind::kError)) return lexer_.Error(cur_.offset, cur_.text);
    if (IsWord("tensor")) {  // its dimensions are not tokens (4x8xf32, 0xi64): read the type
      PCP_RETURN_IF_ERROR(ParseTensorType().status());
      continue;
    }
    if (Is(TokenKind::kLBrace)) ++depth;
    if (Is(TokenKind::kRBrace)) --depth;
    Advance();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ValueId>> Parser::InlineWhileRegion(Function* f, const Scope& outer,
                                                               const WhileRegion& region,
                                                               const std::vector<ValueId>& carried) {
  lexer_.Seek(region.offset);
  Advance();
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kLBrace, absl::StrCat("to start the ", region.what)));
  Scope scope = outer;
  std::vector<std::string> names = region.arg_names;
  if (region.generic) {  // ^bb0(%a: t, ...):
    if (!Is(TokenKind::kCaretId))
      return Expected(absl::StrCat("the ", region.what, "'s block (^bb0(%arg: type, ...):)"));
    Advance();
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kLParen, "after the block label"));
    names.clear();
    if (!Is(TokenKind::kRParen)) {
      do {
        if (!Is(TokenKind::kPercentId)) return Expected("a block argument (%name: type)");
        const size_t name_offset = cur_.offset;
        names.emplace_back(cur_.text);
        Advance();
        PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "after the block argument's name"));
        PCP_ASSIGN_OR_RETURN(TensorType t, ParseTensorType());
        const size_t i = names.size() - 1;
        if (i < carried.size() && t != f->type(carried[i])) {
          return ErrorAt(name_offset, absl::StrCat("the ", region.what, "'s argument #", i, " is ", t.ToString(),
                                                   " but the loop carries ", f->type(carried[i]).ToString()));
        }
      } while (ConsumeIf(TokenKind::kComma));
    }
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "to close the block's arguments"));
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "after the block's arguments"));
  }
  if (names.size() != carried.size()) {
    return ErrorAt(region.offset, absl::StrCat("the ", region.what, " takes ", names.size(),
                                               " arguments but the loop carries ", carried.size()));
  }
  for (size_t i = 0; i < names.size(); ++i) scope.values[names[i]] = carried[i];
  std::vector<TensorType> unused_types;
  bool returned = false;
  while (!IsOp("stablehlo.return")) {
    if (Is(TokenKind::kRBrace) || Is(TokenKind::kEof)) {
      return Expected(absl::StrCat("stablehlo.return ending the ", region.what));
    }
    PCP_RETURN_IF_ERROR(ParseOperation(f, &scope, &unused_types, &returned));
    if (returned) return ErrorAt(cur_.offset, absl::StrCat("the ", region.what, " must end in stablehlo.return"));
    if (f->instructions.size() > kMaxUnrolledInstructions) {
      return ErrorAt(region.loop_offset,
                     absl::StrCat("unrolling stablehlo.while exceeds ", kMaxUnrolledInstructions, " instructions"));
    }
  }
  // "stablehlo.return"(%a, ...) : (t, ...) -> ()  or  stablehlo.return %a, ... : t, ...
  const bool generic = Is(TokenKind::kString);
  Advance();
  std::vector<ValueId> values;
  std::vector<size_t> offsets;
  std::vector<TensorType> types;
  const size_t return_offset = cur_.offset;
  if (generic) {
    PCP_RETURN_IF_ERROR(ParseOperandList(scope, &values, &offsets));
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "before stablehlo.return's type"));
    std::vector<TensorType> none;
    PCP_RETURN_IF_ERROR(ParseTypeList(&types));
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kArrow, "in stablehlo.return's type"));
    PCP_RETURN_IF_ERROR(ParseTypeList(&none));
  } else {
    if (Is(TokenKind::kPercentId)) PCP_RETURN_IF_ERROR(ParsePrettyOperands(scope, &values, &offsets));
    if (ConsumeIf(TokenKind::kColon)) {
      do {
        PCP_ASSIGN_OR_RETURN(TensorType t, ParseTensorType());
        types.push_back(std::move(t));
      } while (ConsumeIf(TokenKind::kComma));
    }
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (i >= types.size() || f->type(values[i]) != types[i]) {
      return ErrorAt(return_offset,
                     absl::StrCat("stablehlo.return's operand #", i, " is ", f->type(values[i]).ToString(),
                                  i < types.size() ? " but its type says " : "",
                                  i < types.size() ? types[i].ToString() : " with no type listed"));
    }
  }
  PCP_RETURN_IF_ERROR(
      Expect(TokenKind::kRBrace, absl::StrCat("after stablehlo.return (it ends the ", region.what, ")")));
  return values;
}

absl::Status Parser::ParseWhile(Function* f, Scope* scope, const std::vector<std::string>& result_names,
                                size_t op_offset) {
  const bool generic = Is(TokenKind::kString);
  Advance();
  std::vector<ValueId> carried;
  std::vector<size_t> offsets;
  WhileRegion cond{.what = "condition", .generic = generic, .loop_offset = op_offset};
  WhileRegion body{.what = "body", .generic = generic, .loop_offset = op_offset};
  std::vector<TensorType> declared;
  if (generic) {  // "stablehlo.while"(%a, ...) ({cond}, {body}) {attrs} : (t, ...) -> (t, ...)
    PCP_RETURN_IF_ERROR(ParseOperandList(*scope, &carried, &offsets));
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kLParen, "and the regions of stablehlo.while ({cond}, {body})"));
    cond.offset = cur_.offset;
    PCP_RETURN_IF_ERROR(SkipRegion());
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kComma, "between the condition and the body of stablehlo.while"));
    body.offset = cur_.offset;
    PCP_RETURN_IF_ERROR(SkipRegion());
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "(stablehlo.while has two regions)"));
    PCP_RETURN_IF_ERROR(ParseIgnorableAttributes("stablehlo.while"));
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "before the type of stablehlo.while"));
    std::vector<TensorType> in;
    const size_t type_offset = cur_.offset;
    PCP_RETURN_IF_ERROR(ParseTypeList(&in));
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kArrow, "in the type of stablehlo.while"));
    PCP_RETURN_IF_ERROR(ParseResultTypes(&declared));
    if (in != declared) {
      return ErrorAt(type_offset, absl::StrCat("stablehlo.while's type ", FunctionTypeString(in, declared),
                                               " must return what it takes"));
    }
  } else {  // stablehlo.while(%iterArg = %a, ...) : t, ... [attributes {...}] cond {...} do {...}
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kLParen, "after stablehlo.while"));
    if (!Is(TokenKind::kRParen)) {
      do {
        if (!Is(TokenKind::kPercentId)) return Expected("a loop variable (%iterArg = %value)");
        body.arg_names.emplace_back(cur_.text);
        Advance();
        PCP_RETURN_IF_ERROR(Expect(TokenKind::kEqual, "after the loop variable"));
        PCP_RETURN_IF_ERROR(ParseOperand(*scope, &carried, &offsets));
      } while (ConsumeIf(TokenKind::kComma));
    }
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "to close the loop variables"));
    cond.arg_names = body.arg_names;
    if (ConsumeIf(TokenKind::kColon)) {
      do {
        PCP_ASSIGN_OR_RETURN(TensorType t, ParseTensorType());
        declared.push_back(std::move(t));
      } while (ConsumeIf(TokenKind::kComma));
    }
    if (IsWord("attributes")) {
      Advance();
      PCP_RETURN_IF_ERROR(ParseIgnorableAttributes("stablehlo.while"));
    }
    PCP_RETURN_IF_ERROR(ExpectWord("cond", "(the condition region of stablehlo.while)"));
    cond.offset = cur_.offset;
    PCP_RETURN_IF_ERROR(SkipRegion());
    PCP_RETURN_IF_ERROR(ExpectWord("do", "(the body region of stablehlo.while)"));
    body.offset = cur_.offset;
    PCP_RETURN_IF_ERROR(SkipRegion());
  }
  std::vector<TensorType> carried_types;
  for (ValueId v : carried) carried_types.push_back(f->type(v));
  if (declared != carried_types) {
    return ErrorAt(op_offset, absl::StrCat("stablehlo.while's types ", TypesString(declared),
                                           " do not match its operands ", TypesString(carried_types)));
  }
  if (result_names.size() != carried.size()) {
    return ErrorAt(op_offset, absl::StrCat("stablehlo.while returns ", carried.size(), " values but ",
                                           result_names.size(), " are named"));
  }
  const size_t resume = cur_.offset;
  int64_t constant_bytes = 0;
  for (int64_t iteration = 0;; ++iteration) {
    if (iteration == kMaxWhileIterations) {
      return ErrorAt(op_offset, absl::StrCat("stablehlo.while runs more than ", kMaxWhileIterations,
                                             " iterations (PCP unrolls loops)"));
    }
    // The condition: folded, then dropped (its values and instructions were appended last).
    const size_t instructions = f->instructions.size(), values = f->value_types.size();
    const size_t resources = pending_resources_.size(), calls = links_[function_index_].calls.size();
    PCP_ASSIGN_OR_RETURN(std::vector<ValueId> c, InlineWhileRegion(f, *scope, cond, carried));
    if (c.size() != 1 || f->type(c[0]) != TensorType{DType::kBool, {}}) {
      return ErrorAt(cond.offset, "the condition of stablehlo.while must return one tensor<i1>");
    }
    std::optional<Tensor> go = KnownValue(*f, c[0], 0);
    if (!go.has_value() || links_[function_index_].calls.size() != calls) {  // a call's result: not known yet
      return ErrorAt(cond.offset,
                     absl::StrCat("the condition of stablehlo.while does not fold to a constant on iteration ",
                                  iteration,
                                  ": PCP unrolls loops, so the trip count must not depend on "
                                  "the arguments (a counter against a constant bound, as lax.scan and "
                                  "fori_loop write)"));
    }
    f->instructions.resize(instructions);
    f->value_types.resize(values);
    pending_resources_.resize(resources);
    if (static_cast<const uint8_t*>(go->raw_data())[0] == 0) break;
    const size_t body_start = f->instructions.size();
    PCP_ASSIGN_OR_RETURN(std::vector<ValueId> next, InlineWhileRegion(f, *scope, body, carried));
    // Each copy of the body holds its own constants: bound what the copies hold together.
    for (size_t i = body_start; i < f->instructions.size(); ++i) {
      if (f->instructions[i].op == Op::kConstant) constant_bytes += f->instructions[i].attrs.literal.byte_size();
    }
    if (constant_bytes > kMaxConstantBytes) {
      return ErrorAt(op_offset, absl::StrCat("unrolling stablehlo.while copies more than ", kMaxConstantBytes,
                                             " bytes of constants"));
    }
    if (next.size() != carried.size()) {
      return ErrorAt(body.offset, absl::StrCat("the body of stablehlo.while returns ", next.size(),
                                               " values but the loop carries ", carried.size()));
    }
    for (size_t i = 0; i < next.size(); ++i) {
      if (f->type(next[i]) != carried_types[i]) {
        return ErrorAt(body.offset,
                       absl::StrCat("the body of stablehlo.while returns ", f->type(next[i]).ToString(), " as value #",
                                    i, ", which the loop carries as ", carried_types[i].ToString()));
      }
      if (carried_types[i].num_elements() <= kMaxCarriedConstantElements) {
        if (std::optional<Tensor> known = KnownValue(*f, next[i], 0); known.has_value()) {
          Attributes attrs;
          attrs.literal = *std::move(known);
          next[i] = f->AddInstruction(Op::kConstant, {}, carried_types[i], std::move(attrs));
        }
      }
    }
    carried = std::move(next);
  }
  lexer_.Seek(resume);
  Advance();
  for (size_t i = 0; i < result_names.size(); ++i) {
    if (!scope->values.emplace(result_names[i], carried[i]).second) {
      return ErrorAt(op_offset, absl::StrCat("redefinition of ", result_names[i]));
    }
  }
  return absl::OkStatus();
}

}  // namespace pcp::text_internal
