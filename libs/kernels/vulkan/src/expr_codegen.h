// Turns the inlined part of a function into GLSL: Emit(v, coordinates) writes the
// statements that compute value v at one element (coordinates are GLSL int expressions,
// one per dimension of v) and returns the GLSL expression holding it. Layout ops only
// rewrite coordinates, elementwise ops combine their operands' expressions, materialized
// values are loaded from storage buffers, which become the kernel's bindings 0..n-1 in
// first-use order.
//
//   ExprCodegen gen(f, plan);
//   std::string body;
//   std::string x = gen.EmitInstruction(inst, {"c0", "c1"}, &body);   // the kernel's root
//   std::string decls = gen.BufferDeclarations(out_dtype);            // inputs + output
#ifndef PCP_KERNELS_VULKAN_SRC_EXPR_CODEGEN_H_
#define PCP_KERNELS_VULKAN_SRC_EXPR_CODEGEN_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernel_plan.h"
#include "pcp/autodiff/ir.h"

namespace pcp::vulkan {

// "float", "int", "int64_t", "bool".
const char* GlslType(DType d);
// The GLSL type a buffer of `d` holds ("uint8_t" for bool).
const char* GlslStorageType(DType d);
// A GLSL literal of type d with the value of element `i` of `t`.
std::string GlslLiteral(const Tensor& t, int64_t i);
// sum idx[d] * stride[d] over row-major strides of `shape`.
std::string Linearize(const std::vector<std::string>& idx, const Shape& shape);

class ExprCodegen {
 public:
  ExprCodegen(const Function& f, const KernelPlan& plan) : f_(f), plan_(plan) {}

  // v at coordinates `idx`; statements go to *body.
  std::string Emit(ValueId v, const std::vector<std::string>& idx, std::string* body);
  // The instruction's value computed inline (for a kernel's root, which is materialized).
  std::string EmitInstruction(const Instruction& inst, const std::vector<std::string>& idx, std::string* body);
  // Declares `int <names>` for the coordinates of linear index `linear` in `shape`.
  std::vector<std::string> Delinearize(const std::string& linear, const Shape& shape, std::string* body);

  // Values the caller computes itself (a row kernel's members, row_kernel_source.h): Emit asks
  // `resolve` first, which returns v's GLSL expression at `idx`, or "" to emit v as usual.
  using Resolver = std::function<std::string(ValueId v, const std::vector<std::string>& idx, std::string* body)>;
  void set_resolver(Resolver resolve) { resolve_ = std::move(resolve); }

  // A binding that reads materialized f32 value v as `vec4 d[]` (a second view of the same
  // buffer; the caller guarantees 16-byte aligned accesses). Returns the binding index.
  int Vec4Binding(ValueId v);
  // The same for a materialized bf16 / f16 value read four elements at a time, as `uvec2 d[]`
  // (element 4i + j in bits 16 (j % 2) of component j / 2; 8-byte aligned accesses).
  int Quad16Binding(ValueId v);

  // Materialized values read, in binding order.
  const std::vector<ValueId>& inputs() const { return inputs_; }
  // Storage-buffer declarations: inputs as bindings 0..n-1 (named in0..), the output as
  // binding n, named `out_`, holding `out_dtype`.
  std::string BufferDeclarations(DType out_dtype) const;
  // The inputs' declarations alone, and a kernel's several outputs' (bindings n, n + 1, ...,
  // named out0_, out1_, ...; declared once every input is known).
  std::string InputDeclarations() const;
  std::string OutputDeclarations(const std::vector<ValueId>& outputs) const;
  // GLSL converting `a` (a GLSL value of `from`) to `to`: mixed precision's roundings included.
  static std::string ConvertValue(DType from, DType to, const std::string& a);
  // GLSL statement storing `value` (of dtype d) at `index` of the output buffer.
  static std::string Store(DType d, const std::string& index, const std::string& value) {
    return StoreTo("out_", d, index, value);
  }
  // The same into the output buffer named `buffer`.
  static std::string StoreTo(const std::string& buffer, DType d, const std::string& index, const std::string& value);
  std::string NewName(const char* prefix = "t") { return prefix + std::to_string(counter_++); }

 private:
  int Binding(ValueId v);
  int ViewBinding(ValueId v, const char* view);  // view: null (the value's own type) or a GLSL type
  std::string Load(ValueId v, const std::vector<std::string>& idx, std::string* body);

  const Function& f_;
  const KernelPlan& plan_;
  std::vector<ValueId> inputs_;
  std::vector<const char*> view_;  // per input: its element type in a second view, or null
  int counter_ = 0;
  Resolver resolve_;
};

}  // namespace pcp::vulkan

#endif  // PCP_KERNELS_VULKAN_SRC_EXPR_CODEGEN_H_
