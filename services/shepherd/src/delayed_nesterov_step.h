// Private: the outer step of asynchronous DiLoCo with delayed Nesterov momentum
// (diloco.async.momentum: delayed; Liu et al. 2024, "Asynchronous Local-SGD Training for
// Language Modeling"). The job's Nesterov step on a round's average Δ g,
//
//   b' = μ·b + g,   θ ← θ − lr·g − lr·μ·b',
//
// is split in two. Each asynchronous group's combined Δ c (Combined::share of a round's worth
// of Δs: n / workers for n Δs) moves θ at once by its gradient part, θ ← θ − lr·c, and is added
// to a buffer; once the shares add up to a round's worth, the momentum takes the buffer,
// b' = μ·b + buffer, and θ moves by the momentum part, −lr·μ·b'. With all of a round's Δs fresh
// in one group this is exactly the synchronous step; in between, a stale Δ moves θ by its own
// part only, never amplified by a momentum it did not see.
//
//   PCP_ASSIGN_OR_RETURN(auto step, NewDelayedNesterovStep(options, specs, checkpoint_momentum));
//   Combined c = ...;  c.share = 1.0 / workers;           // one Δ of three
//   PCP_ASSIGN_OR_RETURN(bool stepped, step->Apply(r, std::move(c), &next));  // false: not finite
//
// Plain momentum (diloco.nesterov: false; θ ← θ − lr·b') splits the same way: the momentum part
// is then −lr·μ·b with the momentum before the update. The buffer of a round's worth in
// progress is not checkpointed: a resumed job's momentum misses the Δs taken since its last
// momentum update (their gradient parts are in θ).
#ifndef PCP_SHEPHERD_SRC_DELAYED_NESTEROV_STEP_H_
#define PCP_SHEPHERD_SRC_DELAYED_NESTEROV_STEP_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "outer_step.h"

namespace pcp::shepherd {

// `momentum`: a checkpoint's (θ's layout; empty: zeros).
absl::StatusOr<std::unique_ptr<OuterStep>> NewDelayedNesterovStep(const OuterOptimizerOptions& options,
                                                                  const std::vector<TensorSpec>& param_specs,
                                                                  std::vector<Tensor> momentum);

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_DELAYED_NESTEROV_STEP_H_
