// The reference interpreter's pcp.attention* kernels (attention.h), in double per element.
#ifndef PCP_AUTODIFF_SRC_ATTENTION_EVAL_H_
#define PCP_AUTODIFF_SRC_ATTENTION_EVAL_H_

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "pcp/autodiff/ir.h"

namespace pcp {

// `inst` is a pcp.attention* op whose operand and result types were checked against
// InferResultType; `rt` its result type.
absl::StatusOr<Tensor> EvalAttention(const Instruction& inst, const TensorType& rt, absl::Span<const Tensor> in);

}  // namespace pcp

#endif  // PCP_AUTODIFF_SRC_ATTENTION_EVAL_H_
