#include "pcp/autodiff/ir.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace pcp {

std::string TensorType::ToString() const {
  std::string s = "tensor<";
  for (int64_t d : shape) absl::StrAppend(&s, d, "x");
  absl::StrAppend(&s, MlirName(dtype), ">");
  return s;
}

absl::string_view ComparisonName(ComparisonDirection d) {
  static constexpr absl::string_view kNames[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  return kNames[static_cast<int>(d)];
}

bool AttributesEqual(const Attributes& a, const Attributes& b) {
  if (a.literal.valid() != b.literal.valid()) return false;
  if (a.literal.valid() && !BitwiseEqual(a.literal, b.literal)) return false;
  return a.dimension == b.dimension && a.dims == b.dims && a.start == b.start && a.limit == b.limit &&
         a.stride == b.stride && a.dot == b.dot && a.comparison == b.comparison && a.reduce_kind == b.reduce_kind &&
         a.scale == b.scale && a.causal == b.causal;
}

ValueId Function::AddParameter(TensorType type, std::string param_name) {
  ValueId v = static_cast<ValueId>(value_types.size());
  value_types.push_back(std::move(type));
  params.push_back(v);
  param_names.push_back(std::move(param_name));
  return v;
}

ValueId Function::AddInstruction(Op op, std::vector<ValueId> operands, TensorType result_type, Attributes attrs) {
  ValueId v = static_cast<ValueId>(value_types.size());
  value_types.push_back(std::move(result_type));
  instructions.push_back(Instruction{op, std::move(operands), v, std::move(attrs)});
  return v;
}

int Function::FindParam(absl::string_view n) const {
  for (size_t i = 0; i < param_names.size(); ++i) {
    if (param_names[i] == n) return static_cast<int>(i);
  }
  return -1;
}

int Function::FindResult(absl::string_view n) const {
  for (size_t i = 0; i < result_names.size(); ++i) {
    if (result_names[i] == n) return static_cast<int>(i);
  }
  return -1;
}

const Function* Module::Find(absl::string_view n) const {
  for (const Function& f : functions) {
    if (f.name == n) return &f;
  }
  return nullptr;
}

Function* Module::Find(absl::string_view n) {
  for (Function& f : functions) {
    if (f.name == n) return &f;
  }
  return nullptr;
}

}  // namespace pcp
