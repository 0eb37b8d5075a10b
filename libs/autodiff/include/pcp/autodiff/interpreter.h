// The reference interpreter: evaluates IR on host tensors, one instruction at a time, with
// plain loops written for clarity, not speed. It is the oracle that the finite-difference
// tests, constant folding and the backend conformance suite compare against.
// f32 reductions, dot products and scatter-adds accumulate in double. Where StableHLO leaves
// room, the interpreter (and so every backend's conformance) follows: maximum/minimum
// propagate NaN and order -0 < +0; integer arithmetic wraps, x / 0 = -1 and INT_MIN / -1 =
// INT_MIN; float -> int convert truncates (NaN -> 0, out of range saturates); -> i1 is x != 0.
// Layout ops work on every dtype; arithmetic on f16/bf16 is Unimplemented.
//
//   absl::StatusOr<std::vector<Tensor>> out = Interpret(function, {x, w});
#ifndef PCP_AUTODIFF_INTERPRETER_H_
#define PCP_AUTODIFF_INTERPRETER_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "pcp/autodiff/ir.h"

namespace pcp {

// Runs `function` on `args` (one per parameter, types must match exactly) and returns its
// results. Errors name the argument or instruction at fault.
absl::StatusOr<std::vector<Tensor>> Interpret(const Function& function, absl::Span<const Tensor> args);

// Evaluates one instruction whose operands have the values `operands`; `result_type` is the
// instruction's result type. Used by constant folding.
absl::StatusOr<Tensor> EvaluateInstruction(const Instruction& instruction, const TensorType& result_type,
                                           absl::Span<const Tensor> operands);

}  // namespace pcp

#endif  // PCP_AUTODIFF_INTERPRETER_H_
