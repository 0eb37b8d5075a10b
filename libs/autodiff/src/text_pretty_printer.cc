// Printer of the pretty (custom) form (text.h), spelled as StableHLO's own printer spells
// each op, so the output reads like a JAX or torch-mlir export:
//   module {
//     func.func @f(%arg0: tensor<4x8xf32> {pcp.name = "x"}) -> (tensor<f32> {pcp.name = "loss"}) {
//       %0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
//       %1 = stablehlo.reduce(%arg0 init: %0) applies stablehlo.add across dimensions = [0, 1] : (...) -> tensor<f32>
//       return %1 : tensor<f32>
//     }
//   }
// Gather and scatter have no pretty form and print as in the generic form.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "text_lexer.h"
#include "text_printer.h"

namespace pcp::text_internal {
namespace {

bool IsBareSymbol(absl::string_view name) {
  if (name.empty()) return false;
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!letter(name[0])) return false;
  for (char c : name) {
    if (!letter(c) && !(c >= '0' && c <= '9') && c != '$' && c != '.') return false;
  }
  return true;
}

std::string Symbol(absl::string_view name) {
  return IsBareSymbol(name) ? absl::StrCat("@", name) : absl::StrCat("@\"", EscapeString(name), "\"");
}

std::string NameAttr(const std::string& name) {
  return name.empty() ? "" : absl::StrCat(" {pcp.name = \"", EscapeString(name), "\"}");
}

// `: t` when every operand and the result have type t, else `: (a, b) -> r`.
std::string SameOrFunctionalType(const Function& f, const Instruction& inst) {
  const std::string result = TypeOf(f, inst.result);
  bool same = true;
  for (ValueId v : inst.operands) same = same && TypeOf(f, v) == result;
  if (same) return absl::StrCat(" : ", result);
  return absl::StrCat(" : ", TypeList(f, inst.operands), " -> ", result);
}

std::string FunctionalType(const Function& f, const Instruction& inst) {
  return absl::StrCat(" : ", TypeList(f, inst.operands), " -> ", TypeOf(f, inst.result));
}

std::string DimPair(absl::string_view key, const std::vector<int64_t>& lhs, const std::vector<int64_t>& rhs) {
  return absl::StrCat(", ", key, " = ", IntList(lhs), " x ", IntList(rhs));
}

void PrintPrettyInstruction(const Function& f, const Instruction& inst, const ValueNames& names, std::string* out) {
  const Attributes& a = inst.attrs;
  const std::string operands = names.Operands(inst.operands);
  auto operand = [&](size_t i) { return i < inst.operands.size() ? names.Name(inst.operands[i]) : "%<missing>"; };
  std::string line = absl::StrCat("    ", names.Name(inst.result), " = ", OpName(inst.op));
  switch (inst.op) {
    case Op::kGather:
    case Op::kScatter:
    case Op::kAttention:
    case Op::kAttentionLse:
    case Op::kAttentionGradQ:
    case Op::kAttentionGradK:
    case Op::kAttentionGradV: PrintGenericInstruction(f, inst, names, out); return;
    case Op::kConstant: absl::StrAppend(&line, " ", DenseLiteral(a.literal)); break;
    case Op::kIota: absl::StrAppend(&line, " dim = ", a.dimension, " : ", TypeOf(f, inst.result)); break;
    case Op::kBroadcastInDim:
    case Op::kTranspose:
      absl::StrAppend(&line, " ", operands, ", dims = ", IntList(a.dims), FunctionalType(f, inst));
      break;
    case Op::kReshape: absl::StrAppend(&line, " ", operands, FunctionalType(f, inst)); break;
    case Op::kSlice: {
      std::vector<std::string> ranges;
      for (size_t i = 0; i < a.start.size(); ++i) {
        int64_t limit = i < a.limit.size() ? a.limit[i] : 0, stride = i < a.stride.size() ? a.stride[i] : 1;
        ranges.push_back(stride == 1 ? absl::StrCat(a.start[i], ":", limit)
                                     : absl::StrCat(a.start[i], ":", limit, ":", stride));
      }
      absl::StrAppend(&line, " ", operands, " [", absl::StrJoin(ranges, ", "), "]", FunctionalType(f, inst));
      break;
    }
    case Op::kConcatenate:
      absl::StrAppend(&line, " ", operands, ", dim = ", a.dimension, FunctionalType(f, inst));
      break;
    case Op::kCompare:
      absl::StrAppend(&line, " ", ComparisonName(a.comparison), ", ", operands, FunctionalType(f, inst));
      break;
    case Op::kSelect: {
      const std::string result = TypeOf(f, inst.result);
      bool pair =
          inst.operands.size() == 3 && TypeOf(f, inst.operands[1]) == result && TypeOf(f, inst.operands[2]) == result;
      absl::StrAppend(&line, " ", operands,
                      pair ? absl::StrCat(" : ", TypeOf(f, inst.operands[0]), ", ", result) : FunctionalType(f, inst));
      break;
    }
    case Op::kErf:  // chlo's unary form: `t -> r`
      absl::StrAppend(&line, " ", operands, " : ", inst.operands.empty() ? "tensor<?>" : TypeOf(f, inst.operands[0]),
                      " -> ", TypeOf(f, inst.result));
      break;
    case Op::kReduce:
      line = absl::StrCat("    ", names.Name(inst.result), " = stablehlo.reduce(", operand(0), " init: ", operand(1),
                          ") applies ", a.reduce_kind == ReduceKind::kMax ? "stablehlo.maximum" : "stablehlo.add",
                          " across dimensions = ", IntList(a.dims), FunctionalType(f, inst));
      break;
    case Op::kDotGeneral:
      absl::StrAppend(&line, " ", operands);
      if (!a.dot.lhs_batch.empty() || !a.dot.rhs_batch.empty()) {
        absl::StrAppend(&line, DimPair("batching_dims", a.dot.lhs_batch, a.dot.rhs_batch));
      }
      if (!a.dot.lhs_contract.empty() || !a.dot.rhs_contract.empty()) {
        absl::StrAppend(&line, DimPair("contracting_dims", a.dot.lhs_contract, a.dot.rhs_contract));
      }
      absl::StrAppend(&line, FunctionalType(f, inst));
      break;
    default:  // elementwise (convert included): `: t`, or `: (a) -> r` when the types differ
      absl::StrAppend(&line, " ", operands, SameOrFunctionalType(f, inst));
      break;
  }
  absl::StrAppend(out, line, "\n");
}

void PrintPrettyFunction(const Function& f, std::string* out) {
  ValueNames names(f);
  std::vector<std::string> args;
  for (size_t i = 0; i < f.params.size(); ++i) {
    args.push_back(absl::StrCat(names.Name(f.params[i]), ": ", TypeOf(f, f.params[i]),
                                i < f.param_names.size() ? NameAttr(f.param_names[i]) : ""));
  }
  std::string results;
  if (HasNames(f.result_names)) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < f.results.size(); ++i) {
      parts.push_back(
          absl::StrCat(TypeOf(f, f.results[i]), i < f.result_names.size() ? NameAttr(f.result_names[i]) : ""));
    }
    results = absl::StrCat(" -> (", absl::StrJoin(parts, ", "), ")");
  } else if (f.results.size() == 1) {
    results = absl::StrCat(" -> ", TypeOf(f, f.results[0]));
  } else if (!f.results.empty()) {
    results = absl::StrCat(" -> ", TypeList(f, f.results));
  }
  absl::StrAppend(out, "  func.func ", Symbol(f.name), "(", absl::StrJoin(args, ", "), ")", results, " {\n");
  for (const Instruction& inst : f.instructions) PrintPrettyInstruction(f, inst, names, out);
  if (f.results.empty()) {
    absl::StrAppend(out, "    return\n");
  } else {
    std::vector<std::string> types;
    for (ValueId v : f.results) types.push_back(TypeOf(f, v));
    absl::StrAppend(out, "    return ", names.Operands(f.results), " : ", absl::StrJoin(types, ", "), "\n");
  }
  absl::StrAppend(out, "  }\n");
}

}  // namespace

std::string PrintPrettyFunctions(const std::vector<const Function*>& functions) {
  std::string out = "module {\n";
  for (const Function* f : functions) PrintPrettyFunction(*f, &out);
  out += "}\n";
  return out;
}

}  // namespace pcp::text_internal
