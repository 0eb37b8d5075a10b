// Expression ops: superinstructions of the loop kernel's register machine. A tree of f32
// ops (those of PCP_CPU_EXPRESSION_NODES below, select, and compare as a select's
// condition) whose inner results nothing else reads becomes one loop that keeps the intermediate values in vector
// registers instead of one pass over the block per op (expression_fusion.h finds the trees).
//
// There is no code generation at run time: each tree shape that may be fused is a template
// instantiation compiled in (expression_ops.cc), looked up by its signature. A signature
// writes the tree in prefix form with the op names below and its leaves (the op's source
// registers, op.src[k]) numbered in order of first appearance, e.g.
//   "mul(mul(0,1),add(2,3))"   for (src0 * src1) * (src2 + src3)
//   "add(mul(0,1),mul(0,2))"   for src0 * src1 + src0 * src2 (a register read twice).
// Results are bit-identical to the ops run one by one: the same f32 operations in the same
// order, each rounded (the library is compiled without a*b+c contraction into FMA), except for
// which NaN comes out of an op on two NaNs (IEEE 754 leaves it open; the compiler may order a
// commutative op's operands either way).
#ifndef PCP_KERNELS_CPU_EXPRESSION_OPS_H_
#define PCP_KERNELS_CPU_EXPRESSION_OPS_H_

#include <string>
#include <string_view>
#include <vector>

#include "fused_kernel.h"

namespace pcp::cpu {

// V(op, node name): the ops an expression tree may contain besides select and compare, and
// their names in signatures. Each computes through its functor (elementwise_functors.h), so
// a tree gives the bits of its ops run one by one; an op added here fuses once a tree shape
// using it is compiled in (expression_ops.cc).
#define PCP_CPU_EXPRESSION_NODES(V) \
  V(kAdd, "add")                    \
  V(kSubtract, "sub")               \
  V(kMultiply, "mul")               \
  V(kDivide, "div")                 \
  V(kNegate, "neg")                 \
  V(kMaximum, "max")                \
  V(kMinimum, "min")                \
  V(kAbs, "abs")                    \
  V(kExponential, "exp")            \
  V(kLog, "log")                    \
  V(kTanh, "tanh")                  \
  V(kLogistic, "logistic")          \
  V(kErf, "erf")                    \
  V(kSqrt, "sqrt")                  \
  V(kRsqrt, "rsqrt")

// Node names in signatures, by IR op: PCP_CPU_EXPRESSION_NODES's, "select" (its condition an
// i1 leaf or a compare node), "cmp_eq", "cmp_ne", "cmp_lt", "cmp_le", "cmp_gt", "cmp_ge".
// Empty for an op that cannot be an expression node. Every operand and result is f32 but a
// select's condition and a compare's result (i1).
std::string_view ExpressionNodeName(Op op, ComparisonDirection direction = ComparisonDirection::kEQ);

// Whether the node computes an i1 (a compare): never a tree's root.
bool IsPredicateNode(std::string_view node);

// The loop for the tree with this signature (f32 sources and result), or nullptr if that
// shape is not compiled in.
ElementwiseFn GetExpressionFn(std::string_view signature);

// Every signature compiled in (for tests).
std::vector<std::string> ExpressionSignatures();

}  // namespace pcp::cpu

#endif  // PCP_KERNELS_CPU_EXPRESSION_OPS_H_
