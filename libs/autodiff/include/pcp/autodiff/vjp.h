// Reverse-mode automatic differentiation, graph to graph: the backward pass is new IR
// appended to a function, built from one VJP rule per op (vjp_rules.cc holds the table).
//
//   FunctionBuilder b(std::move(forward));             // forward returns the scalar loss
//   ValueId loss = forward_results[0];
//   PCP_ASSIGN_OR_RETURN(std::vector<ValueId> grads, AppendGradients(b, loss, params));
//   b.Return(...);
//
//   // Or as a whole new function: the original results followed by one gradient per
//   // differentiated parameter, named "grad.<param name>".
//   absl::StatusOr<Function> g = BuildGradientFunction(forward, /*wrt=*/{0, 1});
//
// Gradients flowing into a value from several uses are summed; broadcast_in_dim's rule
// reduces gradients back to the operand's shape. An op without a rule is an error
// (Unimplemented "no VJP for stablehlo.foo"), never a silent zero; integer and boolean
// operands (indices, predicates) are not differentiable.
#ifndef PCP_AUTODIFF_VJP_H_
#define PCP_AUTODIFF_VJP_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/ir.h"

namespace pcp {

// A VJP rule: given the instruction and the gradient `g` of its result (a value in `b`),
// emits IR for the gradient of each operand and returns them, one per operand, kNoValue
// where an operand receives no gradient (not differentiable).
using VjpRule = absl::StatusOr<std::vector<ValueId>> (*)(FunctionBuilder& b, const Instruction& inst, ValueId g);

// How an op is differentiated: by a rule, or declared to have no gradient at all (its
// result does not depend differentiably on any operand: constant, iota, compare).
struct VjpEntry {
  VjpRule rule = nullptr;
  bool non_differentiable = false;
};
// The table entry for `op` (both fields empty if the op has no rule: an error to use).
VjpEntry GetVjpEntry(Op op);

// Appends the gradient of the scalar `output` with respect to each value in `wrt` to the
// function under construction in `builder`. `seed` is d(final)/d(output) (default: 1.0).
// A value in `wrt` that `output` does not depend on gets a zero tensor.
absl::StatusOr<std::vector<ValueId>> AppendGradients(FunctionBuilder& builder, ValueId output,
                                                     absl::Span<const ValueId> wrt, ValueId seed = kNoValue);

// A new function with `forward`'s parameters, its results, then d(result[loss_result])/d(param)
// for each parameter index in `wrt`, named "grad.<param name>".
absl::StatusOr<Function> BuildGradientFunction(const Function& forward, absl::Span<const int> wrt, int loss_result = 0);

}  // namespace pcp

#endif  // PCP_AUTODIFF_VJP_H_
