// The Vulkan backend's op -> code table for elementwise ops: the GLSL expression of each op
// computed from operands of its own type, per element type. $0 and $1 stand for the
// operands' GLSL expressions (absl::Substitute); "" where the op list does not define the op
// on that type (pcp/autodiff/op_list.h: IsFloatOnly ops on f32 only, IsLogical ops on i1 and
// integers only, the others on f32 and integers). The pcp_* functions are the prelude's
// (glsl_prelude.cc), written to match the CPU backend's and the interpreter's semantics.
//
//   std::string glsl = absl::Substitute(GlslOf(Op::kMaximum, DType::kI32), "a", "b");
//   // "(a > b ? a : b)"
//
// Adding an elementwise op computed element by element: one row here (and a pcp_* prelude
// function if GLSL has no builtin with the interpreter's semantics). compare, select, clamp
// and convert are written by ExprCodegen::EmitInstruction itself.
#ifndef PCP_KERNELS_VULKAN_SRC_GLSL_OPS_H_
#define PCP_KERNELS_VULKAN_SRC_GLSL_OPS_H_

#include <string_view>

#include "pcp/autodiff/ir.h"
#include "pcp/autodiff/op_list.h"

namespace pcp::vulkan {

// V(op, f32, i32, i64, i1)
#define PCP_VULKAN_ELEMENTWISE_GLSL(V)                                             \
  V(kAdd, "($0 + $1)", "($0 + $1)", "($0 + $1)", "")                               \
  V(kSubtract, "($0 - $1)", "($0 - $1)", "($0 - $1)", "")                          \
  V(kMultiply, "($0 * $1)", "($0 * $1)", "($0 * $1)", "")                          \
  V(kDivide, "($0 / $1)", "pcp_idiv($0, $1)", "pcp_ldiv($0, $1)", "")              \
  V(kMaximum, "pcp_max($0, $1)", "($0 > $1 ? $0 : $1)", "($0 > $1 ? $0 : $1)", "") \
  V(kMinimum, "pcp_min($0, $1)", "($0 < $1 ? $0 : $1)", "($0 < $1 ? $0 : $1)", "") \
  V(kPower, "pcp_pow($0, $1)", "", "", "")                                         \
  V(kNegate, "(-$0)", "(-$0)", "(-$0)", "")                                        \
  V(kExponential, "pcp_exp($0)", "", "", "")                                       \
  V(kLog, "pcp_log($0)", "", "", "")                                               \
  V(kSqrt, "sqrt($0)", "", "", "")                                                 \
  V(kRsqrt, "pcp_rsqrt($0)", "", "", "")                                           \
  V(kTanh, "pcp_tanh($0)", "", "", "")                                             \
  V(kLogistic, "pcp_logistic($0)", "", "", "")                                     \
  V(kAbs, "abs($0)", "($0 < 0 ? -$0 : $0)", "($0 < 0 ? -$0 : $0)", "")             \
  V(kCeil, "ceil($0)", "", "", "")                                                 \
  V(kErf, "pcp_erf($0)", "", "", "")                                               \
  V(kAnd, "", "($0 & $1)", "($0 & $1)", "($0 && $1)")                              \
  V(kOr, "", "($0 | $1)", "($0 | $1)", "($0 || $1)")                               \
  V(kNot, "", "(~$0)", "(~$0)", "(!$0)")

// The GLSL of `op` on operands of type `d`; "" for ops without a row and types the op is not
// defined on (and for f16 / bf16 / f64, which the backend only moves or rejects).
constexpr std::string_view GlslOf(Op op, DType d) {
  switch (op) {
#define PCP_VULKAN_GLSL_CASE_(e, f32, i32, i64, i1) \
  case Op::e:                                       \
    return d == DType::kF32 ? f32 : d == DType::kI32 ? i32 : d == DType::kI64 ? i64 : d == DType::kBool ? i1 : "";
    PCP_VULKAN_ELEMENTWISE_GLSL(PCP_VULKAN_GLSL_CASE_)
#undef PCP_VULKAN_GLSL_CASE_
    default: return "";
  }
}

// The table covers every elementwise op but the four EmitInstruction writes itself, on
// exactly the types the op list's properties define it on.
static_assert(
    [] {
      for (int i = 0; i < kNumOps; ++i) {
        const Op op = static_cast<Op>(i);
        if (!IsElementwise(op) || op == Op::kCompare || op == Op::kSelect || op == Op::kClamp || op == Op::kConvert) {
          continue;
        }
        const bool f32 = !IsLogical(op), integers = !IsFloatOnly(op), i1 = IsLogical(op);
        if (GlslOf(op, DType::kF32).empty() == f32 || GlslOf(op, DType::kI32).empty() == integers ||
            GlslOf(op, DType::kI64).empty() == integers || GlslOf(op, DType::kBool).empty() == i1) {
          return false;
        }
      }
      return true;
    }(),
    "PCP_VULKAN_ELEMENTWISE_GLSL: an elementwise op of PCP_OP_LIST lacks GLSL for a type it is defined on, "
    "or has GLSL for one it is not");

}  // namespace pcp::vulkan

#endif  // PCP_KERNELS_VULKAN_SRC_GLSL_OPS_H_
