// Streaming DiLoCo's fragments (pcp/diloco/streaming.h) of a parameter list as tensors: what
// a fragment's sync sends (one 1-D f32 tensor per segment, named by FragmentPlan::SegmentName)
// and how it is written back into the full list.
//
//   std::vector<TensorSpec> specs = FragmentSpecs(plan, p, param_specs);   // ExpectSpecs
//   std::vector<Tensor> piece = GatherFragment(plan, p, theta);            // copies
//   PCP_RETURN_IF_ERROR(ScatterFragment(plan, p, piece, &theta));          // copy-on-write
#ifndef PCP_RPC_TENSOR_FRAGMENTS_H_
#define PCP_RPC_TENSOR_FRAGMENTS_H_

#include <vector>

#include "absl/status/status.h"
#include "pcp/diloco/streaming.h"
#include "pcp/rpc/tensor_proto.h"  // TensorSpec
#include "pcp/tensor/tensor.h"

namespace pcp {

// Fragment p's segments as 1-D f32 specs, named after `params` (the full list's specs).
std::vector<TensorSpec> FragmentSpecs(const diloco::FragmentPlan& plan, int64_t p,
                                      const std::vector<TensorSpec>& params);

// Copies fragment p's segments out of `full` (f32 tensors of the plan's sizes).
std::vector<Tensor> GatherFragment(const diloco::FragmentPlan& plan, int64_t p, const std::vector<Tensor>& full);

// Writes `pieces` (GatherFragment's layout) into fragment p of `full`. Each tensor written
// is first replaced by a copy of itself, so storage shared with others (a chunk stream still
// sending θ, a snapshot) is never modified. InvalidArgument when the pieces do not fit.
absl::Status ScatterFragment(const diloco::FragmentPlan& plan, int64_t p, const std::vector<Tensor>& pieces,
                             std::vector<Tensor>* full);

}  // namespace pcp

#endif  // PCP_RPC_TENSOR_FRAGMENTS_H_
