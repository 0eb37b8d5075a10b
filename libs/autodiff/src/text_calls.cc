// func.call: parsed into a PendingCall whose results are placeholder values of the caller,
// then linked once the whole file is read (callees may be defined after their callers, as
// JAX's @inputs / @expected are): each function is rebuilt with its callees' bodies inlined,
// callees first, and with the operands of its checks appended to its results. See text.h.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "text_parser.h"

namespace pcp::text_internal {
namespace {

std::string TypeList(const std::vector<TensorType>& types) {
  std::vector<std::string> parts;
  for (const TensorType& t : types) parts.push_back(t.ToString());
  return absl::StrCat("(", absl::StrJoin(parts, ", "), ")");
}

// "check.expect_close@12:5" for a check at source:12:5 (custom_call's "@" dropped).
std::string CheckResultName(const ParsedCheck& check) {
  absl::string_view op = check.op;
  if (const size_t at = op.find('@'); at != absl::string_view::npos) op = op.substr(at + 1);
  absl::string_view location = check.location;
  const size_t col = location.rfind(':');
  const size_t line = col == 0 || col == absl::string_view::npos ? col : location.rfind(':', col - 1);
  if (line != absl::string_view::npos) location = location.substr(line + 1);
  return absl::StrCat(op, "@", location);
}

enum LinkState { kUnlinked = 0, kLinking = 1, kLinked = 2 };

}  // namespace

Token Parser::PeekToken() {
  const size_t pos = lexer_.pos();
  const Token saved = cur_;
  const bool saved_location = after_location_;
  Advance();
  const Token next = cur_;
  lexer_.Seek(pos);
  cur_ = saved;
  after_location_ = saved_location;
  return next;
}

absl::Status Parser::ParseAttributeDicts(const std::function<absl::Status(const std::string&, size_t)>& on_key,
                                         bool unit_attributes) {
  for (int dict = 0; dict < 2; ++dict) {
    const bool properties = ConsumeIf(TokenKind::kLess);
    if (!Is(TokenKind::kLBrace)) {
      if (properties) return Expected("'{' after '<' (properties are written <{...}>)");
      break;
    }
    Advance();
    if (!Is(TokenKind::kRBrace)) {
      do {
        const size_t key_offset = cur_.offset;
        PCP_ASSIGN_OR_RETURN(std::string key, ParseAttrName());
        if (unit_attributes && !Is(TokenKind::kEqual)) continue;
        PCP_RETURN_IF_ERROR(Expect(TokenKind::kEqual, absl::StrCat("after '", key, "'")));
        PCP_RETURN_IF_ERROR(on_key(key, key_offset));
      } while (ConsumeIf(TokenKind::kComma));
    }
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kRBrace, "to close the attributes"));
    if (properties) PCP_RETURN_IF_ERROR(Expect(TokenKind::kGreater, "to close the properties <{...}>"));
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseCall(Function* f, Scope* scope, const Token& result, int num_results, size_t op_offset) {
  PendingCall call;
  call.op_offset = op_offset;
  std::vector<size_t> offsets;
  const bool generic = Is(TokenKind::kString);
  Advance();  // call / func.call / "func.call"
  if (generic) {
    PCP_RETURN_IF_ERROR(ParseOperandList(*scope, &call.operands, &offsets));
    // {callee = @f}, as properties <{...}> or an attribute dictionary (or both).
    PCP_RETURN_IF_ERROR(ParseAttributeDicts([&](const std::string& key, size_t key_offset) -> absl::Status {
      if (key == "callee") {
        if (!Is(TokenKind::kAtId)) return Expected("the callee (@name)");
        call.callee = SymbolName(cur_);
        call.callee_offset = cur_.offset;
        Advance();
        return absl::OkStatus();
      }
      if (key == "arg_attrs" || key == "res_attrs" || key == "no_inline") {
        return SkipAttributeValue();  // PCP inlines every call either way
      }
      return ErrorAt(key_offset, absl::StrCat("unsupported attribute '", key, "' on func.call"));
    }));
    if (call.callee.empty()) return ErrorAt(op_offset, "func.call needs a callee attribute ({callee = @name})");
  } else {
    if (!Is(TokenKind::kAtId)) return Expected("the callee (@name)");
    call.callee = SymbolName(cur_);
    call.callee_offset = cur_.offset;
    Advance();
    PCP_RETURN_IF_ERROR(ParseOperandList(*scope, &call.operands, &offsets));
    PCP_RETURN_IF_ERROR(ParseIgnorableAttributes(absl::StrCat("the call of @", call.callee)));
  }
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "before the call's type"));
  const size_t type_offset = cur_.offset;
  PCP_RETURN_IF_ERROR(ParseTypeList(&call.operand_types));
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kArrow, "in the call's type"));
  PCP_RETURN_IF_ERROR(ParseResultTypes(&call.result_types));
  if (call.operand_types.size() != call.operands.size()) {
    return ErrorAt(type_offset, absl::StrCat("the type lists ", call.operand_types.size(),
                                             " operands but the call has ", call.operands.size()));
  }
  for (size_t i = 0; i < call.operands.size(); ++i) {
    const TensorType& t = f->type(call.operands[i]);
    if (t != call.operand_types[i]) {
      return ErrorAt(offsets[i], absl::StrCat("operand #", i, " has type ", t.ToString(), " but the call's type says ",
                                              call.operand_types[i].ToString()));
    }
  }
  const size_t n = call.result_types.size();
  if (static_cast<size_t>(num_results) != n) {
    const std::string name = result.kind == TokenKind::kEof ? "%r" : std::string(result.text);
    return ErrorAt(op_offset,
                   absl::StrCat("the call of @", call.callee, " has ", n, n == 1 ? " result" : " results", " but ",
                                num_results == 0   ? "none is named"
                                : num_results == 1 ? "one is named"
                                                   : absl::StrCat(num_results, " are named"),
                                n == 0   ? ""
                                : n == 1 ? absl::StrCat(" (write ", name, " = call ...)")
                                         : absl::StrCat(" (write ", name, ":", n, " = call ...)")));
  }
  for (size_t i = 0; i < n; ++i) {
    const ValueId v = static_cast<ValueId>(f->value_types.size());
    f->value_types.push_back(call.result_types[i]);  // a placeholder until linked
    call.results.push_back(v);
    std::vector<std::string> names = {absl::StrCat(result.text, "#", i)};
    if (n == 1) names.emplace_back(result.text);
    for (const std::string& name : names) {
      if (!scope->values.emplace(name, v).second) return ErrorAt(result.offset, absl::StrCat("redefinition of ", name));
    }
  }
  call.position = f->instructions.size();
  links_[function_index_].calls.push_back(std::move(call));
  return absl::OkStatus();
}

absl::Status Parser::LinkCalls(Module* module) {
  std::vector<int> state(module->functions.size(), kUnlinked);
  std::vector<size_t> stack;
  for (size_t i = 0; i < module->functions.size(); ++i) {
    PCP_RETURN_IF_ERROR(LinkFunction(module, i, &stack, &state));
  }
  return absl::OkStatus();
}

absl::Status Parser::LinkFunction(Module* module, size_t index, std::vector<size_t>* stack, std::vector<int>* state) {
  if ((*state)[index] == kLinked) return absl::OkStatus();
  (*state)[index] = kLinking;
  stack->push_back(index);
  FunctionLinks& links = links_[index];
  // Callees first, so that each is straight-line code by the time it is inlined.
  for (const PendingCall& call : links.calls) {
    const Function* callee = module->Find(call.callee);
    if (callee == nullptr) {
      return ErrorAt(call.callee_offset, absl::StrCat("call of undefined function @", call.callee));
    }
    const size_t callee_index = static_cast<size_t>(callee - module->functions.data());
    if ((*state)[callee_index] == kLinking) {
      std::vector<std::string> cycle;
      auto from = std::find(stack->begin(), stack->end(), callee_index);
      for (auto it = from; it != stack->end(); ++it) cycle.push_back(absl::StrCat("@", module->functions[*it].name));
      cycle.push_back(absl::StrCat("@", call.callee));
      return ErrorAt(call.op_offset, absl::StrCat("recursive call: ", absl::StrJoin(cycle, " -> "),
                                                  " (PCP inlines every call, so calls must not form a cycle)"));
    }
    if (stack->size() >= static_cast<size_t>(kMaxCallDepth)) {
      return ErrorAt(call.op_offset, absl::StrCat("calls nest more than ", kMaxCallDepth, " functions deep"));
    }
    PCP_RETURN_IF_ERROR(LinkFunction(module, callee_index, stack, state));
    std::vector<TensorType> params, results;
    for (ValueId p : callee->params) params.push_back(callee->type(p));
    for (size_t r = 0; r < links_[callee_index].num_returned; ++r) results.push_back(callee->type(callee->results[r]));
    if (params != call.operand_types || results != call.result_types) {
      return ErrorAt(call.op_offset, absl::StrCat("the call's type ", TypeList(call.operand_types), " -> ",
                                                  TypeList(call.result_types), " does not match @", call.callee,
                                                  ", which has type ", TypeList(params), " -> ", TypeList(results)));
    }
  }
  Function& f = module->functions[index];
  if (!links.calls.empty()) {
    // Rebuild f: its own instructions in order, each call's callee body in its place.
    Function g;
    g.name = f.name;
    std::vector<ValueId> map(f.value_types.size(), kNoValue);
    for (size_t p = 0; p < f.params.size(); ++p) {
      map[f.params[p]] = g.AddParameter(f.type(f.params[p]), p < f.param_names.size() ? f.param_names[p] : "");
    }
    size_t next_call = 0;
    auto inline_calls_before = [&](size_t position) -> absl::Status {
      for (; next_call < links.calls.size() && links.calls[next_call].position == position; ++next_call) {
        const PendingCall& call = links.calls[next_call];
        const Function& callee = *module->Find(call.callee);
        if (g.instructions.size() + callee.instructions.size() > kMaxInlinedInstructions) {
          return ErrorAt(call.op_offset, absl::StrCat("inlining @", call.callee, " makes @", f.name, " longer than ",
                                                      kMaxInlinedInstructions, " instructions"));
        }
        std::vector<ValueId> inner(callee.value_types.size(), kNoValue);
        for (size_t p = 0; p < callee.params.size(); ++p) inner[callee.params[p]] = map[call.operands[p]];
        for (const Instruction& inst : callee.instructions) {
          std::vector<ValueId> operands;
          for (ValueId o : inst.operands) operands.push_back(inner[o]);
          inner[inst.result] = g.AddInstruction(inst.op, std::move(operands), callee.type(inst.result), inst.attrs);
        }
        for (size_t r = 0; r < call.results.size(); ++r) map[call.results[r]] = inner[callee.results[r]];
      }
      return absl::OkStatus();
    };
    for (size_t i = 0; i < f.instructions.size(); ++i) {
      PCP_RETURN_IF_ERROR(inline_calls_before(i));
      const Instruction& inst = f.instructions[i];
      std::vector<ValueId> operands;
      for (ValueId o : inst.operands) operands.push_back(map[o]);
      map[inst.result] = g.AddInstruction(inst.op, std::move(operands), f.type(inst.result), inst.attrs);
    }
    PCP_RETURN_IF_ERROR(inline_calls_before(f.instructions.size()));
    for (ValueId r : f.results) g.results.push_back(map[r]);
    g.result_names = f.result_names;
    for (PendingCheck& c : links.checks) {
      c.lhs = map[c.lhs];
      c.rhs = map[c.rhs];
    }
    f = std::move(g);
  }
  // The checks' operands become results (after the function's own, which callers inline).
  for (PendingCheck& c : links.checks) {
    const std::string name = CheckResultName(c.check);
    c.check.function = f.name;
    c.check.lhs_result = static_cast<int>(f.results.size());
    f.results.push_back(c.lhs);
    f.result_names.push_back(absl::StrCat(name, ":lhs"));
    c.check.rhs_result = static_cast<int>(f.results.size());
    f.results.push_back(c.rhs);
    f.result_names.push_back(absl::StrCat(name, ":rhs"));
    if (options_.checks != nullptr) options_.checks->push_back(c.check);
  }
  stack->pop_back();
  (*state)[index] = kLinked;
  return absl::OkStatus();
}

}  // namespace pcp::text_internal
