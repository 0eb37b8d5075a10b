// Private: the outer step of a round (DiLoCo's outer Nesterov SGD, pcp/shepherd/outer_optimizer.h)
// as the round engine applies it: on the whole θ every round, or, with Streaming DiLoCo
// (pcp/diloco/streaming.h), on the one fragment of θ that round syncs, each fragment with its
// own momentum. JobRun asks it which Δ shape a round has and hands it the round's combined Δ;
// it never needs to know which form it has.
//
//   PCP_ASSIGN_OR_RETURN(std::unique_ptr<OuterStep> step,
//                        NewFragmentOuterStep(options, param_specs, plan, checkpoint_momentum));
//   std::vector<TensorSpec> specs = step->RoundSpecs(r);          // what round r's Δs look like
//   std::vector<Tensor> next = theta;                             // shares θ's tensors
//   PCP_ASSIGN_OR_RETURN(bool stepped, step->Apply(r, std::move(combined), &next));
//   if (!stepped) ...θ' or the momentum would not be finite: nothing changed, roll back...
//   std::vector<Tensor> b = step->Momentum();                     // whole-θ layout, checkpoints
//
// A new form (e.g. a step that weighs stale Δs of asynchronous rounds, or applies a sparse Δ
// to the coordinates it touches) is a new implementation here. Coordinator thread only.
#ifndef PCP_SHEPHERD_SRC_OUTER_STEP_H_
#define PCP_SHEPHERD_SRC_OUTER_STEP_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "aggregator.h"
#include "pcp/diloco/streaming.h"
#include "pcp/rpc/tensor_proto.h"
#include "pcp/shepherd/outer_optimizer.h"
#include "pcp/tensor/tensor.h"

namespace pcp::shepherd {

class OuterStep {
 public:
  virtual ~OuterStep() = default;

  // The Δ specs of round `round`: θ's, or its fragment's.
  virtual std::vector<TensorSpec> RoundSpecs(uint64_t round) const = 0;
  // Applies round `round`'s combined Δ to `next` (θ on entry; its tensors may be shared with
  // streams still sending them: replaced, never written). With `combined.scratch` the step
  // writes θ' into the combined Δ's buffers (no |θ|-sized temporaries). False: θ' or the
  // momentum would not be finite, and nothing changed.
  virtual absl::StatusOr<bool> Apply(uint64_t round, Combined combined, std::vector<Tensor>* next) = 0;
  // The outer momentum of every parameter, in θ's layout (checkpoints).
  virtual std::vector<Tensor> Momentum() const = 0;
};

// The whole θ every round; `momentum` restores a checkpoint's (empty: zeros).
absl::StatusOr<std::unique_ptr<OuterStep>> NewWholeOuterStep(const OuterOptimizerOptions& options,
                                                             const std::vector<TensorSpec>& param_specs,
                                                             std::vector<Tensor> momentum);
// One fragment of θ per round (`plan`), one optimizer per fragment; `momentum` (θ's layout, a
// checkpoint's; empty: zeros) is split among them.
absl::StatusOr<std::unique_ptr<OuterStep>> NewFragmentOuterStep(const OuterOptimizerOptions& options,
                                                                const std::vector<TensorSpec>& param_specs,
                                                                diloco::FragmentPlan plan,
                                                                const std::vector<Tensor>& momentum);

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_OUTER_STEP_H_
