// The one list of IR operations. Everything about an op that is not behaviour (its enum,
// StableHLO name, arity, category and properties) derives from PCP_OP_LIST; adding an op
// means one line here, one VJP rule, the kernels (each backend's op -> code table) and one
// test case. Passes and backends ask the predicates below instead of listing ops.
//
//   Op op = Op::kAdd;
//   OpName(op) == "stablehlo.add"; OpArity(op) == 2; IsElementwise(op) == true;
//   IsTranscendental(Op::kTanh) == true; IsFloatOnly(Op::kSqrt) == true;
//   absl::StatusOr<Op> parsed = ParseOp("stablehlo.dot_general");
//
// A new elementwise unary op, say stablehlo.cosine, is this row
//   V(kCosine, "stablehlo.cosine", 1, kElementwise, kFloatOnly | kTranscendental)
// (and the count in kNumOps's static_assert) plus its VJP rule (vjp_rules.cc), its reference
// kernel (interpreter.cc, FloatKernel), its CPU functor and table row
// (kernels/cpu/src/elementwise_functors.h; a row in expression_ops.h's
// PCP_CPU_EXPRESSION_NODES if expression trees may contain it), its GLSL row
// (kernels/vulkan/src/glsl_ops.h) and its test cases. Type inference rejects it on integers
// and the CPU fusion costs it as a transcendental from the properties alone; each backend's
// table fails to compile (static_assert) until it has the op's row.
#ifndef PCP_AUTODIFF_OP_LIST_H_
#define PCP_AUTODIFF_OP_LIST_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pcp {

// Categories, named once so passes and backends do not re-list ops.
enum class OpCategory : uint8_t {
  kSource,       // no tensor operands: constant, iota
  kElementwise,  // result[i] depends only on operands[i]; all operands have the result's shape
  kLayout,       // moves or copies elements: broadcast, reshape, transpose, slice, concatenate
  kReduction,    // reduce over dimensions with an add or max body
  kContraction,  // dot_general
  kIndexing,     // gather rows / scatter-add rows
  kAttention,    // fused scaled-dot-product attention and its gradient's parts (attention.h)
};

inline constexpr int kVariadic = -1;

// Properties, the list's last column: kNone or an | of these bits (elementwise ops only).
namespace op_property {
inline constexpr uint8_t kNone = 0;
// Defined on floating-point operands only: type inference rejects integers and i1.
inline constexpr uint8_t kFloatOnly = 1 << 0;
// A math-library function per element (exp, log, tanh, ...), costly to recompute: the CPU
// fusion keeps such values stored rather than recomputing them in each reader.
inline constexpr uint8_t kTranscendental = 1 << 1;
// Logical on i1, bitwise on integers, not defined on floats (and, or, not).
inline constexpr uint8_t kLogical = 1 << 2;
// The result's dtype is not the first operand's (compare -> i1, convert -> declared).
inline constexpr uint8_t kChangesDType = 1 << 3;
}  // namespace op_property

// V(enumerator, MLIR op name, operand count or kVariadic, category, properties)
// and / or / not: logical on i1, bitwise on i32 / i64 (the interpreter and both backends
// compute all three types); not defined on floats.
// Operand order follows StableHLO: reduce(input, init), select(pred, on_true, on_false),
// gather(table, indices), scatter(operand, indices, updates), clamp(min, x, max) = min(max(x,
// min), max) with all three of one type (the parser broadcasts StableHLO's scalar bounds).
// The pcp.attention ops are PCP's own (attention.h): RaiseAttention makes them from the
// decomposed softmax(q kᵀ) v where a job asks for fused attention, and ExpandAttention turns
// them back into StableHLO for backends without attention kernels.
#define PCP_OP_LIST(V)                                                                    \
  V(kConstant, "stablehlo.constant", 0, kSource, kNone)                                   \
  V(kIota, "stablehlo.iota", 0, kSource, kNone)                                           \
  V(kAdd, "stablehlo.add", 2, kElementwise, kNone)                                        \
  V(kSubtract, "stablehlo.subtract", 2, kElementwise, kNone)                              \
  V(kMultiply, "stablehlo.multiply", 2, kElementwise, kNone)                              \
  V(kDivide, "stablehlo.divide", 2, kElementwise, kNone)                                  \
  V(kMaximum, "stablehlo.maximum", 2, kElementwise, kNone)                                \
  V(kMinimum, "stablehlo.minimum", 2, kElementwise, kNone)                                \
  V(kPower, "stablehlo.power", 2, kElementwise, kFloatOnly | kTranscendental)             \
  V(kNegate, "stablehlo.negate", 1, kElementwise, kNone)                                  \
  V(kExponential, "stablehlo.exponential", 1, kElementwise, kFloatOnly | kTranscendental) \
  V(kLog, "stablehlo.log", 1, kElementwise, kFloatOnly | kTranscendental)                 \
  V(kSqrt, "stablehlo.sqrt", 1, kElementwise, kFloatOnly)                                 \
  V(kRsqrt, "stablehlo.rsqrt", 1, kElementwise, kFloatOnly)                               \
  V(kTanh, "stablehlo.tanh", 1, kElementwise, kFloatOnly | kTranscendental)               \
  V(kLogistic, "stablehlo.logistic", 1, kElementwise, kFloatOnly | kTranscendental)       \
  V(kAbs, "stablehlo.abs", 1, kElementwise, kNone)                                        \
  V(kCeil, "stablehlo.ceil", 1, kElementwise, kFloatOnly)                                 \
  V(kErf, "chlo.erf", 1, kElementwise, kFloatOnly | kTranscendental)                      \
  V(kAnd, "stablehlo.and", 2, kElementwise, kLogical)                                     \
  V(kOr, "stablehlo.or", 2, kElementwise, kLogical)                                       \
  V(kNot, "stablehlo.not", 1, kElementwise, kLogical)                                     \
  V(kCompare, "stablehlo.compare", 2, kElementwise, kChangesDType)                        \
  V(kSelect, "stablehlo.select", 3, kElementwise, kNone)                                  \
  V(kClamp, "stablehlo.clamp", 3, kElementwise, kNone)                                    \
  V(kConvert, "stablehlo.convert", 1, kElementwise, kChangesDType)                        \
  V(kBroadcastInDim, "stablehlo.broadcast_in_dim", 1, kLayout, kNone)                     \
  V(kReshape, "stablehlo.reshape", 1, kLayout, kNone)                                     \
  V(kTranspose, "stablehlo.transpose", 1, kLayout, kNone)                                 \
  V(kSlice, "stablehlo.slice", 1, kLayout, kNone)                                         \
  V(kConcatenate, "stablehlo.concatenate", kVariadic, kLayout, kNone)                     \
  V(kReduce, "stablehlo.reduce", 2, kReduction, kNone)                                    \
  V(kDotGeneral, "stablehlo.dot_general", 2, kContraction, kNone)                         \
  V(kGather, "stablehlo.gather", 2, kIndexing, kNone)                                     \
  V(kScatter, "stablehlo.scatter", 3, kIndexing, kNone)                                   \
  V(kAttention, "pcp.attention", 3, kAttention, kNone)                                    \
  V(kAttentionLse, "pcp.attention_lse", 2, kAttention, kNone)                             \
  V(kAttentionGradQ, "pcp.attention_grad_q", 6, kAttention, kNone)                        \
  V(kAttentionGradK, "pcp.attention_grad_k", 6, kAttention, kNone)                        \
  V(kAttentionGradV, "pcp.attention_grad_v", 4, kAttention, kNone)

enum class Op : uint8_t {
#define PCP_OP_ENUM_(e, name, arity, category, properties) e,
  PCP_OP_LIST(PCP_OP_ENUM_)
#undef PCP_OP_ENUM_
};

#define PCP_OP_COUNT_(e, name, arity, category, properties) +1
inline constexpr int kNumOps = 0 PCP_OP_LIST(PCP_OP_COUNT_);
#undef PCP_OP_COUNT_
static_assert(kNumOps == 40, "update kNumOps users (VJP table, kernels, tests) when adding ops");

namespace op_list_internal {
inline constexpr int kArity[] = {
#define PCP_OP_ARITY_(e, name, arity, category, properties) arity,
    PCP_OP_LIST(PCP_OP_ARITY_)
#undef PCP_OP_ARITY_
};
inline constexpr OpCategory kCategory[] = {
#define PCP_OP_CATEGORY_(e, name, arity, category, properties) OpCategory::category,
    PCP_OP_LIST(PCP_OP_CATEGORY_)
#undef PCP_OP_CATEGORY_
};
}  // namespace op_list_internal
namespace op_property {
// The property column by op, expanded here so that the column's bit names resolve unqualified.
inline constexpr uint8_t kOfOp[] = {
#define PCP_OP_PROPERTIES_(e, name, arity, category, properties) static_cast<uint8_t>(properties),
    PCP_OP_LIST(PCP_OP_PROPERTIES_)
#undef PCP_OP_PROPERTIES_
};
}  // namespace op_property

absl::string_view OpName(Op op);
absl::StatusOr<Op> ParseOp(absl::string_view name);

constexpr int OpArity(Op op) { return op_list_internal::kArity[static_cast<int>(op)]; }  // kVariadic: concatenate
constexpr OpCategory GetOpCategory(Op op) { return op_list_internal::kCategory[static_cast<int>(op)]; }
// Whether op has every bit of `properties` (op_property::k...).
constexpr bool HasOpProperty(Op op, uint8_t properties) {
  return (op_property::kOfOp[static_cast<int>(op)] & properties) == properties;
}

constexpr bool IsElementwise(Op op) { return GetOpCategory(op) == OpCategory::kElementwise; }
// exp, log, sqrt, rsqrt, tanh, logistic, erf, power, ceil: floating-point operands only.
constexpr bool IsFloatOnly(Op op) { return HasOpProperty(op, op_property::kFloatOnly); }
// exp, log, tanh, logistic, erf, power: a math-library call per element.
constexpr bool IsTranscendental(Op op) { return HasOpProperty(op, op_property::kTranscendental); }
// and, or, not: logical on i1, bitwise on integers.
constexpr bool IsLogical(Op op) { return HasOpProperty(op, op_property::kLogical); }
// Elementwise ops whose result dtype is not the first operand's (compare -> i1, convert).
constexpr bool ChangesDType(Op op) { return HasOpProperty(op, op_property::kChangesDType); }

// The columns agree with each other: properties only on elementwise ops; a transcendental op
// is float-only; a logical op is not.
static_assert(
    [] {
      for (int i = 0; i < kNumOps; ++i) {
        const Op op = static_cast<Op>(i);
        if (op_property::kOfOp[i] != op_property::kNone && !IsElementwise(op)) return false;
        if (IsTranscendental(op) && !IsFloatOnly(op)) return false;
        if (IsLogical(op) && IsFloatOnly(op)) return false;
      }
      return true;
    }(),
    "PCP_OP_LIST: inconsistent property column");

// All ops, in list order, for tests and tables that must cover every op.
const Op* AllOps();  // kNumOps entries

}  // namespace pcp

#endif  // PCP_AUTODIFF_OP_LIST_H_
