// The reference interpreter: evaluates IR on host tensors, one instruction at a time, with
// plain loops written for clarity, not speed. It is the oracle that the finite-difference
// tests, constant folding and the backend conformance suite compare against.
// f32 reductions and dot products accumulate in double.
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
