// Printer of the text form (text.h). The output is what `mlir-opt --mlir-print-op-generic`
// prints back for the same module, up to float spelling: attributes in sorted order,
// values numbered %0, %1, ... and %arg0, ..., region values numbered after the function's.
// The pretty form is in text_pretty_printer.cc; the helpers both use are in text_printer.h.
#include <charconv>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pcp/autodiff/text.h"
#include "pcp/tensor/convert.h"
#include "text_lexer.h"
#include "text_printer.h"

namespace pcp {
namespace text_internal {
namespace {

constexpr char kHexDigits[] = "0123456789ABCDEF";

std::string HexBits(uint32_t bits, int digits) {
  std::string s = "0x";
  for (int i = digits - 1; i >= 0; --i) s.push_back(kHexDigits[(bits >> (4 * i)) & 15]);
  return s;
}

// The shortest "%.Ne" spelling (N = 6..8) that reads back as exactly `value` through
// decimal -> double -> float, the path MLIR's parser takes. f16 / bf16 values are exact
// floats, and a decimal that rounds to an f32 on the 16-bit grid rounds to the same 16-bit
// value directly, so the check covers them too. inf and nan print as their bits in hex.
std::string FormatFloat(float value, uint32_t bits, int hex_digits) {
  if (!std::isfinite(value)) return HexBits(bits, hex_digits);
  char buf[64];
  for (int precision = 6; precision <= 8; ++precision) {
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific, precision);
    if (ec != std::errc()) break;
    double back = 0.0;
    std::from_chars(buf, end, back);
    auto f = static_cast<float>(back);
    if (std::memcmp(&f, &value, sizeof(float)) == 0 || precision == 8) return std::string(buf, end);
  }
  return HexBits(bits, hex_digits);  // unreachable: 9 significant digits round-trip every float
}

// f64: the shortest "%.Ne" spelling (N = 6..16) that reads back as exactly `value`; inf
// and nan as their 16 hex digits.
std::string FormatDouble(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, 8);
  if (!std::isfinite(value)) {
    std::string s = "0x";
    for (int i = 15; i >= 0; --i) s.push_back(kHexDigits[(bits >> (4 * i)) & 15]);
    return s;
  }
  char buf[64];
  for (int precision = 6;; ++precision) {
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific, precision);
    double back = 0.0;
    std::from_chars(buf, end, back);
    if (std::memcmp(&back, &value, 8) == 0 || precision == 16) return std::string(buf, end);
  }
}

// One element of `t` at flat index `i`, in MLIR's literal syntax.
std::string Element(const Tensor& t, int64_t i) {
  const auto* p = static_cast<const uint8_t*>(t.raw_data());
  switch (t.dtype()) {
    case DType::kF32: {
      float v;
      uint32_t bits;
      std::memcpy(&v, p + 4 * i, 4);
      std::memcpy(&bits, p + 4 * i, 4);
      return FormatFloat(v, bits, 8);
    }
    case DType::kF16:
    case DType::kBF16: {
      uint16_t bits;
      std::memcpy(&bits, p + 2 * i, 2);
      float v = t.dtype() == DType::kF16 ? HalfToFloat(bits) : BFloat16ToFloat(bits);
      return FormatFloat(v, bits, 4);
    }
    case DType::kI32: {
      int32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      return absl::StrCat(v);
    }
    case DType::kI64: {
      int64_t v;
      std::memcpy(&v, p + 8 * i, 8);
      return absl::StrCat(v);
    }
    case DType::kBool: return p[i] != 0 ? "true" : "false";
    case DType::kF64: {
      double v;
      std::memcpy(&v, p + 8 * i, 8);
      return FormatDouble(v);
    }
  }
  return "?";
}

bool ElementsEqual(const Tensor& t, int64_t i, int64_t j) {
  const auto* p = static_cast<const uint8_t*>(t.raw_data());
  if (t.dtype() == DType::kBool) return (p[i] != 0) == (p[j] != 0);
  auto size = static_cast<size_t>(SizeOf(t.dtype()));
  return std::memcmp(p + i * size, p + j * size, size) == 0;
}

}  // namespace

std::string DenseLiteral(const Tensor& t) {
  std::string type = TensorType{t.dtype(), t.shape()}.ToString();
  if (!t.valid()) return absl::StrCat("dense<> : ", type);
  int64_t n = t.num_elements();
  if (n == 0) return absl::StrCat("dense<> : ", type);
  bool splat = true;
  for (int64_t i = 1; i < n && splat; ++i) splat = ElementsEqual(t, 0, i);
  if (splat) return absl::StrCat("dense<", Element(t, 0), "> : ", type);
  std::string hex = "\"0x";
  const auto* p = static_cast<const uint8_t*>(t.raw_data());
  auto byte = [&hex](uint8_t b) {
    hex.push_back(kHexDigits[b >> 4]);
    hex.push_back(kHexDigits[b & 15]);
  };
  if (t.dtype() == DType::kBool) {
    for (int64_t i = 0; i < n; i += 8) {
      uint8_t b = 0;
      for (int64_t j = i; j < n && j < i + 8; ++j) b |= static_cast<uint8_t>((p[j] != 0 ? 1 : 0) << (j - i));
      byte(b);
    }
  } else {
    for (int64_t i = 0; i < t.byte_size(); ++i) byte(p[i]);
  }
  return absl::StrCat("dense<", hex, "\"> : ", type);
}

namespace {

// A list of i64 as MLIR prints it: dense<[0, 1]>, dense<1> when all equal, dense<> if empty.
std::string I64List(const std::vector<int64_t>& v) {
  std::string type = absl::StrCat("tensor<", v.size(), "xi64>");
  if (v.empty()) return absl::StrCat("dense<> : ", type);
  bool splat = true;
  for (int64_t x : v) splat = splat && x == v[0];
  if (splat) return absl::StrCat("dense<", v[0], "> : ", type);
  return absl::StrCat("dense<[", absl::StrJoin(v, ", "), "]> : ", type);
}

}  // namespace

std::string IntList(const std::vector<int64_t>& v) { return absl::StrCat("[", absl::StrJoin(v, ", "), "]"); }

namespace {

// #stablehlo.NAME<field = [..], ...>; like StableHLO's printer, empty lists are left out.
std::string Struct(absl::string_view name, const std::vector<std::pair<absl::string_view, std::vector<int64_t>>>& lists,
                   absl::string_view scalar_name = "", int64_t scalar = 0) {
  std::vector<std::string> parts;
  for (const auto& [field, values] : lists) {
    if (!values.empty()) parts.push_back(absl::StrCat(field, " = ", IntList(values)));
  }
  if (!scalar_name.empty()) parts.push_back(absl::StrCat(scalar_name, " = ", scalar));
  return absl::StrCat("#stablehlo.", name, "<", absl::StrJoin(parts, ", "), ">");
}

}  // namespace

std::string TypeList(const Function& f, const std::vector<ValueId>& values) {
  std::vector<std::string> parts;
  for (ValueId v : values) parts.push_back(v >= 0 && v < f.num_values() ? f.type(v).ToString() : "tensor<?>");
  return absl::StrCat("(", absl::StrJoin(parts, ", "), ")");
}

std::string TypeOf(const Function& f, ValueId v) {
  return v >= 0 && v < f.num_values() ? f.type(v).ToString() : "tensor<?>";
}

namespace {

// Attributes of `inst`, sorted by name as MLIR prints a dictionary.
std::vector<std::string> InstructionAttributes(const Function& f, const Instruction& inst) {
  const Attributes& a = inst.attrs;
  switch (inst.op) {
    case Op::kConstant: return {absl::StrCat("value = ", DenseLiteral(a.literal))};
    case Op::kIota: return {absl::StrCat("iota_dimension = ", a.dimension, " : i64")};
    case Op::kConcatenate: return {absl::StrCat("dimension = ", a.dimension, " : i64")};
    case Op::kBroadcastInDim: return {absl::StrCat("broadcast_dimensions = ", I64List(a.dims))};
    case Op::kTranspose: return {absl::StrCat("permutation = ", I64List(a.dims))};
    case Op::kReduce: return {absl::StrCat("dimensions = ", I64List(a.dims))};
    case Op::kSlice:
      return {absl::StrCat("limit_indices = ", I64List(a.limit)), absl::StrCat("start_indices = ", I64List(a.start)),
              absl::StrCat("strides = ", I64List(a.stride))};
    case Op::kCompare:
      return {
          absl::StrCat("comparison_direction = #stablehlo<comparison_direction ", ComparisonName(a.comparison), ">")};
    case Op::kDotGeneral:
      return {absl::StrCat("dot_dimension_numbers = ",
                           Struct("dot", {{"lhs_batching_dimensions", a.dot.lhs_batch},
                                          {"rhs_batching_dimensions", a.dot.rhs_batch},
                                          {"lhs_contracting_dimensions", a.dot.lhs_contract},
                                          {"rhs_contracting_dimensions", a.dot.rhs_contract}}))};
    case Op::kGather:
    case Op::kScatter: {
      // The row forms of ir.h: table[V, D...], indices[I...] (rank k).
      if (inst.operands.size() < 2) return {};
      auto valid = [&](ValueId v) { return v >= 0 && v < f.num_values(); };
      if (!valid(inst.operands[0]) || !valid(inst.operands[1])) return {};
      const TensorType& table = f.type(inst.operands[0]);
      int64_t k = f.type(inst.operands[1]).rank();
      std::vector<int64_t> window, sizes = {1};
      for (int64_t i = 1; i < table.rank(); ++i) {
        window.push_back(k + i - 1);
        sizes.push_back(table.shape[i]);
      }
      if (inst.op == Op::kGather) {
        return {absl::StrCat("dimension_numbers = ",
                             Struct("gather",
                                    {{"offset_dims", window}, {"collapsed_slice_dims", {0}}, {"start_index_map", {0}}},
                                    "index_vector_dim", k)),
                absl::StrCat("slice_sizes = ", I64List(sizes))};
      }
      return {absl::StrCat("scatter_dimension_numbers = ", Struct("scatter",
                                                                  {{"update_window_dims", window},
                                                                   {"inserted_window_dims", {0}},
                                                                   {"scatter_dims_to_operand_dims", {0}}},
                                                                  "index_vector_dim", k))};
    }
    case Op::kAttention:
    case Op::kAttentionLse:
    case Op::kAttentionGradQ:
    case Op::kAttentionGradK:
    case Op::kAttentionGradV:
      return {absl::StrCat("causal = ", a.causal ? "true" : "false"),
              absl::StrCat("scale = ", FormatDouble(a.scale), " : f64")};
    default: return {};
  }
}

}  // namespace

std::string ValueNames::Name(ValueId v) const {
  return v >= 0 && static_cast<size_t>(v) < names.size() ? names[static_cast<size_t>(v)]
                                                         : absl::StrCat("%<invalid", v, ">");
}

std::string ValueNames::Operands(const std::vector<ValueId>& values) const {
  std::vector<std::string> parts;
  for (ValueId v : values) parts.push_back(Name(v));
  return absl::StrJoin(parts, ", ");
}

ValueNames::ValueNames(const Function& f) {
  names.assign(static_cast<size_t>(f.num_values()), "");
  for (size_t i = 0; i < names.size(); ++i) names[i] = absl::StrCat("%<invalid", i, ">");
  auto set = [&](ValueId v, std::string name) {
    if (v >= 0 && v < f.num_values()) names[static_cast<size_t>(v)] = std::move(name);
  };
  for (size_t i = 0; i < f.params.size(); ++i) set(f.params[i], absl::StrCat("%arg", i));
  for (size_t i = 0; i < f.instructions.size(); ++i) set(f.instructions[i].result, absl::StrCat("%", i));
}

void PrintGenericInstruction(const Function& f, const Instruction& inst, const ValueNames& names, std::string* out) {
  absl::StrAppend(out, "    ", names.Name(inst.result), " = \"", OpName(inst.op), "\"(", names.Operands(inst.operands),
                  ")");
  if ((inst.op == Op::kReduce || inst.op == Op::kScatter) && !inst.operands.empty()) {
    // MLIR numbers a region's values after those of the enclosing function.
    std::string t = TensorType{DType::kF32, {}}.ToString();
    if (inst.operands[0] >= 0 && inst.operands[0] < f.num_values()) {
      t = TensorType{f.type(inst.operands[0]).dtype, {}}.ToString();
    }
    std::string lhs = absl::StrCat("%arg", f.params.size()), rhs = absl::StrCat("%arg", f.params.size() + 1);
    std::string r = absl::StrCat("%", f.instructions.size());
    bool max = inst.op == Op::kReduce && inst.attrs.reduce_kind == ReduceKind::kMax;
    absl::StrAppend(out, " ({\n    ^bb0(", lhs, ": ", t, ", ", rhs, ": ", t, "):\n", "      ", r, " = \"",
                    max ? "stablehlo.maximum" : "stablehlo.add", "\"(", lhs, ", ", rhs, ") : (", t, ", ", t, ") -> ", t,
                    "\n", "      \"stablehlo.return\"(", r, ") : (", t, ") -> ()\n    })");
  }
  std::vector<std::string> attrs = InstructionAttributes(f, inst);
  if (!attrs.empty()) absl::StrAppend(out, " {", absl::StrJoin(attrs, ", "), "}");
  absl::StrAppend(out, " : ", TypeList(f, inst.operands), " -> ", TypeOf(f, inst.result), "\n");
}

bool HasNames(const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    if (!n.empty()) return true;
  }
  return false;
}

namespace {

std::string NameAttrs(const std::vector<std::string>& names) {
  std::vector<std::string> parts;
  for (const std::string& n : names) {
    parts.push_back(n.empty() ? "{}" : absl::StrCat("{pcp.name = \"", EscapeString(n), "\"}"));
  }
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

void PrintGenericFunction(const Function& f, std::string* out) {
  ValueNames names(f);
  absl::StrAppend(out, "  \"func.func\"() ({\n");
  if (!f.params.empty()) {
    std::vector<std::string> args;
    for (ValueId p : f.params) args.push_back(absl::StrCat(names.Name(p), ": ", TypeOf(f, p)));
    absl::StrAppend(out, "  ^bb0(", absl::StrJoin(args, ", "), "):\n");
  }
  for (const Instruction& inst : f.instructions) PrintGenericInstruction(f, inst, names, out);
  absl::StrAppend(out, "    \"func.return\"(", names.Operands(f.results), ") : ", TypeList(f, f.results), " -> ()\n");
  std::vector<std::string> attrs;
  if (HasNames(f.param_names)) attrs.push_back(absl::StrCat("arg_attrs = ", NameAttrs(f.param_names)));
  std::vector<std::string> params;
  for (ValueId p : f.params) params.push_back(TypeOf(f, p));
  std::string results = TypeList(f, f.results);
  if (f.results.size() == 1) results = results.substr(1, results.size() - 2);
  attrs.push_back(absl::StrCat("function_type = (", absl::StrJoin(params, ", "), ") -> ", results));
  if (HasNames(f.result_names)) attrs.push_back(absl::StrCat("res_attrs = ", NameAttrs(f.result_names)));
  attrs.push_back(absl::StrCat("sym_name = \"", EscapeString(f.name), "\""));
  absl::StrAppend(out, "  }) {", absl::StrJoin(attrs, ", "), "} : () -> ()\n");
}

std::string PrintFunctions(const std::vector<const Function*>& functions, TextForm form) {
  if (form == TextForm::kPretty) return PrintPrettyFunctions(functions);
  std::string out = "\"builtin.module\"() ({\n";
  if (functions.empty()) out += "^bb0:\n";  // as MLIR prints an empty module
  for (const Function* f : functions) PrintGenericFunction(*f, &out);
  out += "}) : () -> ()\n";
  return out;
}

}  // namespace
}  // namespace text_internal

std::string PrintModule(const Module& module, TextForm form) {
  std::vector<const Function*> functions;
  for (const Function& f : module.functions) functions.push_back(&f);
  return text_internal::PrintFunctions(functions, form);
}

std::string PrintFunction(const Function& function, TextForm form) {
  return text_internal::PrintFunctions({&function}, form);
}

}  // namespace pcp
