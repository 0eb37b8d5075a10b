// Result-type rules of every op, in one place: the builder uses them to construct
// instructions and the verifier to check them.
//
//   absl::StatusOr<TensorType> t = InferResultType(Op::kAdd, {a, b}, Attributes{});
//   // Ops whose result type is not implied by operands and attributes (constant, iota,
//   // reshape, convert, broadcast_in_dim) need the declared type, which is then validated:
//   t = InferResultType(Op::kReshape, {a}, {}, &declared);
#ifndef PCP_AUTODIFF_TYPE_INFERENCE_H_
#define PCP_AUTODIFF_TYPE_INFERENCE_H_

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "pcp/autodiff/ir.h"

namespace pcp {

// True for ops whose result type must be declared (it does not follow from the operands).
bool ResultTypeIsDeclared(Op op);

// Returns the result type of `op` over operands of `operand_types` with `attrs`, or
// InvalidArgument naming the op and the rule broken. If `declared` is not null, it must be
// consistent with (for inferable ops: equal to) the inferred type.
absl::StatusOr<TensorType> InferResultType(Op op, absl::Span<const TensorType> operand_types, const Attributes& attrs,
                                           const TensorType* declared = nullptr);

}  // namespace pcp

#endif  // PCP_AUTODIFF_TYPE_INFERENCE_H_
