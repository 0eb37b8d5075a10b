#include "expr_codegen.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/substitute.h"
#include "glsl_ops.h"

namespace pcp::vulkan {
namespace {

// Op's GLSL on operands of type d (glsl_ops.h).
std::string Elementwise(Op op, DType d, const std::string& a, const std::string& b = "") {
  const std::string_view glsl = GlslOf(op, d);
  return absl::Substitute(absl::string_view(glsl.data(), glsl.size()), a, b);
}

const char* CompareOp(ComparisonDirection c) {
  switch (c) {
    case ComparisonDirection::kEQ: return "==";
    case ComparisonDirection::kNE: return "!=";
    case ComparisonDirection::kLT: return "<";
    case ComparisonDirection::kLE: return "<=";
    case ComparisonDirection::kGT: return ">";
    case ComparisonDirection::kGE: return ">=";
  }
  return "==";
}

std::string Convert(DType from, DType to, const std::string& a) {
  if (from == to) return a;
  // f32 <-> bf16 / f16 (halves are their bits in a uint): glsl_prelude.cc's conversions.
  if (from == DType::kF32 && to == DType::kBF16) return absl::StrCat("pcp_f2bf(", a, ")");
  if (from == DType::kF32 && to == DType::kF16) return absl::StrCat("pcp_f2h(", a, ")");
  if (from == DType::kBF16 && to == DType::kF32) return absl::StrCat("pcp_bf2f(", a, ")");
  if (from == DType::kF16 && to == DType::kF32) return absl::StrCat("pcp_h2f(", a, ")");
  if (to == DType::kBool) {
    if (from == DType::kF32) return absl::StrCat("!(", a, " == 0.0)");  // NaN -> true
    return absl::StrCat("(", a, " != ", GlslType(from), "(0))");
  }
  if (from == DType::kBool) return absl::StrCat("(", a, " ? ", GlslType(to), "(1) : ", GlslType(to), "(0))");
  if (from == DType::kF32) return absl::StrCat(to == DType::kI32 ? "pcp_f2i(" : "pcp_f2l(", a, ")");
  return absl::StrCat(GlslType(to), "(", a, ")");
}

}  // namespace

const char* GlslType(DType d) {
  switch (d) {
    case DType::kF32: return "float";
    case DType::kI32: return "int";
    case DType::kI64: return "int64_t";
    case DType::kBool: return "bool";
    case DType::kF16:
    case DType::kBF16: return "uint";   // only moved: the bits, widened
    case DType::kF64: return "double";  // never reached: CheckSupported rejects f64
  }
  return "float";
}

const char* GlslStorageType(DType d) {
  if (d == DType::kBool) return "uint8_t";
  if (d == DType::kF16 || d == DType::kBF16) return "uint16_t";
  return GlslType(d);
}

std::string GlslLiteral(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kF32: {
      uint32_t bits;
      std::memcpy(&bits, t.data<float>() + i, 4);
      return absl::StrFormat("uintBitsToFloat(0x%08xu)", bits);
    }
    case DType::kI32: return absl::StrFormat("int(0x%08xu)", static_cast<uint32_t>(t.data<int32_t>()[i]));
    case DType::kI64: return absl::StrFormat("int64_t(0x%016xul)", static_cast<uint64_t>(t.data<int64_t>()[i]));
    case DType::kBool: return static_cast<const uint8_t*>(t.raw_data())[i] ? "true" : "false";
    case DType::kF16:
    case DType::kBF16: return absl::StrFormat("0x%04xu", static_cast<const uint16_t*>(t.raw_data())[i]);
    default: return "0";
  }
}

std::string Linearize(const std::vector<std::string>& idx, const Shape& shape) {
  std::vector<std::string> terms;
  int64_t stride = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] != 1)
      terms.push_back(stride == 1 ? absl::StrCat("(", idx[d], ")") : absl::StrCat("(", idx[d], ") * ", stride));
    stride *= shape[d];
  }
  if (terms.empty()) return "0";
  return absl::StrJoin(terms.rbegin(), terms.rend(), " + ");
}

std::vector<std::string> ExprCodegen::Delinearize(const std::string& linear, const Shape& shape, std::string* body) {
  std::vector<std::string> idx(shape.size(), "0");
  int64_t stride = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] != 1) {
      const std::string name = NewName("c");
      const bool first = [&] {
        for (int e = 0; e < d; ++e)
          if (shape[e] != 1) return false;
        return true;
      }();
      if (first) {
        absl::StrAppend(body, "int ", name, " = (", linear, ") / ", stride, ";\n");
      } else {
        absl::StrAppend(body, "int ", name, " = ((", linear, ") / ", stride, ") % ", shape[d], ";\n");
      }
      idx[d] = name;
    }
    stride *= shape[d];
  }
  return idx;
}

int ExprCodegen::ViewBinding(ValueId v, const char* view) {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const bool same_view = view_[i] == nullptr ? view == nullptr : view != nullptr && std::strcmp(view_[i], view) == 0;
    if (inputs_[i] == v && same_view) return static_cast<int>(i);
  }
  inputs_.push_back(v);
  view_.push_back(view);
  return static_cast<int>(inputs_.size() - 1);
}

int ExprCodegen::Binding(ValueId v) { return ViewBinding(v, nullptr); }
int ExprCodegen::Vec4Binding(ValueId v) { return ViewBinding(v, "vec4"); }
int ExprCodegen::Quad16Binding(ValueId v) { return ViewBinding(v, "uvec2"); }

std::string ExprCodegen::Load(ValueId v, const std::vector<std::string>& idx, std::string* body) {
  const TensorType& t = f_.type(v);
  const int b = Binding(v);
  const std::string name = NewName();
  const std::string at = absl::StrCat("in", b, ".d[", Linearize(idx, t.shape), "]");
  if (t.dtype == DType::kBool) {
    absl::StrAppend(body, "bool ", name, " = uint(", at, ") != 0u;\n");
  } else if (t.dtype == DType::kF16 || t.dtype == DType::kBF16) {
    absl::StrAppend(body, "uint ", name, " = uint(", at, ");\n");
  } else {
    absl::StrAppend(body, GlslType(t.dtype), " ", name, " = ", at, ";\n");
  }
  return name;
}

std::string ExprCodegen::Emit(ValueId v, const std::vector<std::string>& idx, std::string* body) {
  if (resolve_) {
    std::string resolved = resolve_(v, idx, body);
    if (!resolved.empty()) return resolved;
  }
  if (plan_.materialized[static_cast<size_t>(v)]) return Load(v, idx, body);
  return EmitInstruction(f_.instructions[static_cast<size_t>(plan_.producer[static_cast<size_t>(v)])], idx, body);
}

std::string ExprCodegen::EmitInstruction(const Instruction& inst, const std::vector<std::string>& idx,
                                         std::string* body) {
  const TensorType& rt = f_.type(inst.result);
  const char* type = GlslType(rt.dtype);
  auto operand_type = [&](int k) -> const TensorType& { return f_.type(inst.operands[static_cast<size_t>(k)]); };
  auto define = [&](const std::string& expr) {
    const std::string name = NewName();
    absl::StrAppend(body, type, " ", name, " = ", expr, ";\n");
    return name;
  };
  switch (inst.op) {
    case Op::kConstant: {
      // Only scalars (or one-element tensors) are inlined; others are materialized.
      return GlslLiteral(inst.attrs.literal, 0);
    }
    case Op::kIota: return define(absl::StrCat(type, "(", idx[static_cast<size_t>(inst.attrs.dimension)], ")"));
    case Op::kBroadcastInDim: {
      const Shape& in = operand_type(0).shape;
      std::vector<std::string> sub(in.size(), "0");
      for (size_t i = 0; i < in.size(); ++i) {
        if (in[i] != 1) sub[i] = idx[static_cast<size_t>(inst.attrs.dims[i])];
      }
      return Emit(inst.operands[0], sub, body);
    }
    case Op::kReshape: {
      const Shape& in = operand_type(0).shape;
      if (in == rt.shape) return Emit(inst.operands[0], idx, body);
      const std::string lin = NewName("l");
      absl::StrAppend(body, "int ", lin, " = ", Linearize(idx, rt.shape), ";\n");
      return Emit(inst.operands[0], Delinearize(lin, in, body), body);
    }
    case Op::kTranspose: {
      std::vector<std::string> sub(idx.size());
      for (size_t i = 0; i < idx.size(); ++i) sub[static_cast<size_t>(inst.attrs.dims[i])] = idx[i];
      return Emit(inst.operands[0], sub, body);
    }
    case Op::kSlice: {
      std::vector<std::string> sub(idx.size());
      for (size_t i = 0; i < idx.size(); ++i) {
        const int64_t st = inst.attrs.stride.empty() ? 1 : inst.attrs.stride[i];
        sub[i] = absl::StrCat(inst.attrs.start[i], " + (", idx[i], ")", st == 1 ? "" : absl::StrCat(" * ", st));
      }
      return Emit(inst.operands[0], sub, body);
    }
    case Op::kConcatenate: {
      const auto dim = static_cast<size_t>(inst.attrs.dimension);
      const std::string name = NewName();
      absl::StrAppend(body, type, " ", name, ";\n");
      int64_t offset = 0;
      for (size_t k = 0; k < inst.operands.size(); ++k) {
        const int64_t size = operand_type(static_cast<int>(k)).shape[dim];
        if (size == 0) continue;
        const bool last = k + 1 == inst.operands.size();
        absl::StrAppend(body, last ? "{\n" : absl::StrCat("if ((", idx[dim], ") < ", offset + size, ") {\n"));
        std::vector<std::string> sub = idx;
        sub[dim] = absl::StrCat("(", idx[dim], ") - ", offset);
        std::string inner;
        const std::string x = Emit(inst.operands[k], sub, &inner);
        absl::StrAppend(body, inner, name, " = ", x, ";\n}", last ? "\n" : " else ");
        offset += size;
      }
      if (!body->empty() && body->back() == ' ') absl::StrAppend(body, "{}\n");
      return name;
    }
    case Op::kGather: {
      const TensorType& table = operand_type(0);
      const TensorType& indices = operand_type(1);
      const size_t ni = indices.shape.size();
      std::vector<std::string> iidx(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(ni));
      const std::string k = Emit(inst.operands[1], iidx, body);
      const std::string row = NewName("r");
      absl::StrAppend(body, "int ", row, " = int(clamp(", k, ", ", GlslType(indices.dtype), "(0), ",
                      GlslType(indices.dtype), "(", table.shape[0] - 1, ")));\n");
      std::vector<std::string> tidx = {row};
      tidx.insert(tidx.end(), idx.begin() + static_cast<std::ptrdiff_t>(ni), idx.end());
      return Emit(inst.operands[0], tidx, body);
    }
    case Op::kCompare: {
      const std::string a = Emit(inst.operands[0], idx, body);
      const std::string b = Emit(inst.operands[1], idx, body);
      if (operand_type(0).dtype == DType::kBool) {
        return define(absl::StrCat("int(", a, ") ", CompareOp(inst.attrs.comparison), " int(", b, ")"));
      }
      return define(absl::StrCat(a, " ", CompareOp(inst.attrs.comparison), " ", b));
    }
    case Op::kSelect: {
      const std::string p = Emit(inst.operands[0], idx, body);
      const std::string a = Emit(inst.operands[1], idx, body);
      const std::string b = Emit(inst.operands[2], idx, body);
      return define(absl::StrCat(p, " ? ", a, " : ", b));
    }
    case Op::kClamp: {  // min(max(x, lo), hi); pcp_max / pcp_min propagate NaN like the interpreter
      const std::string lo = Emit(inst.operands[0], idx, body);
      const std::string x = Emit(inst.operands[1], idx, body);
      const std::string hi = Emit(inst.operands[2], idx, body);
      const std::string m = define(Elementwise(Op::kMaximum, rt.dtype, x, lo));
      return define(Elementwise(Op::kMinimum, rt.dtype, m, hi));
    }
    case Op::kConvert: {
      const std::string a = Emit(inst.operands[0], idx, body);
      return define(Convert(operand_type(0).dtype, rt.dtype, a));
    }
    default: break;
  }
  if (IsElementwise(inst.op)) {
    const DType d = operand_type(0).dtype;
    if (inst.operands.size() == 1) return define(Elementwise(inst.op, d, Emit(inst.operands[0], idx, body)));
    const std::string a = Emit(inst.operands[0], idx, body);
    const std::string b = Emit(inst.operands[1], idx, body);
    return define(Elementwise(inst.op, d, a, b));
  }
  return absl::StrCat("/* cannot inline ", OpName(inst.op), " */");
}

std::string ExprCodegen::InputDeclarations() const {
  std::string s;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    absl::StrAppend(&s, "layout(std430, set = 0, binding = ", i, ") readonly buffer In", i, " { ",
                    view_[i] != nullptr ? view_[i] : GlslStorageType(f_.type(inputs_[i]).dtype), " d[]; } in", i,
                    ";\n");
  }
  return s;
}

std::string ExprCodegen::OutputDeclarations(const std::vector<ValueId>& outputs) const {
  std::string s;
  for (size_t i = 0; i < outputs.size(); ++i) {
    absl::StrAppend(&s, "layout(std430, set = 0, binding = ", inputs_.size() + i, ") writeonly buffer Out", i, " { ",
                    GlslStorageType(f_.type(outputs[i]).dtype), " d[]; } out", i, "_;\n");
  }
  return s;
}

std::string ExprCodegen::BufferDeclarations(DType out_dtype) const {
  std::string s = InputDeclarations();
  absl::StrAppend(&s, "layout(std430, set = 0, binding = ", inputs_.size(), ") writeonly buffer Out { ",
                  GlslStorageType(out_dtype), " d[]; } out_;\n");
  return s;
}

std::string ExprCodegen::ConvertValue(DType from, DType to, const std::string& a) { return Convert(from, to, a); }

std::string ExprCodegen::StoreTo(const std::string& buffer, DType d, const std::string& index,
                                 const std::string& value) {
  const std::string at = absl::StrCat(buffer, ".d[", index, "] = ");
  if (d == DType::kBool) return absl::StrCat(at, "uint8_t(", value, " ? 1u : 0u);\n");
  if (d == DType::kF16 || d == DType::kBF16) return absl::StrCat(at, "uint16_t(", value, ");\n");
  return absl::StrCat(at, value, ";\n");
}

}  // namespace pcp::vulkan
