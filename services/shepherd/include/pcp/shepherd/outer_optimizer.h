// DiLoCo's outer step on the shepherd: average the workers' pseudo-gradients weighted by the
// tokens each processed, then apply SGD with (Nesterov) momentum using the average as the
// gradient, exactly as torch.optim.SGD(params, lr=outer_lr, momentum=μ, nesterov=True)
// (dampening 0, no weight decay) would:
//
//   b ← μ·b + Δ                 (b starts at 0, so the first b is Δ, as torch's clone)
//   θ ← θ − lr·(Δ + μ·b)        nesterov
//   θ ← θ − lr·b                plain momentum
//
//   std::vector<WeightedDelta> results = {{delta_a, 3072}, {delta_b, 1024}};
//   PCP_ASSIGN_OR_RETURN(std::vector<Tensor> avg, WeightedAverage(results));
//   OuterOptimizer outer({.lr = 0.7, .momentum = 0.9, .nesterov = true}, SpecsOf(theta));
//   PCP_RETURN_IF_ERROR(outer.Step(avg, &theta));                  // updates θ in place
//   PCP_ASSIGN_OR_RETURN(bool stepped, outer.StepIfFinite(avg, &theta));   // or rolls back
//   PCP_ASSIGN_OR_RETURN(bool stepped, outer.StepInPlaceIfFinite(std::move(avg), &theta));  // avg becomes θ
//   const std::vector<Tensor>& b = outer.momentum();               // for checkpoints
//
// Tensors are f32; the average is accumulated in double per element.
#ifndef PCP_SHEPHERD_OUTER_OPTIMIZER_H_
#define PCP_SHEPHERD_OUTER_OPTIMIZER_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pcp/rpc/tensor_proto.h"  // TensorSpec
#include "pcp/tensor/tensor.h"

namespace pcp::shepherd {

// One worker's Δ (tensors in parameter order) and its weight (tokens processed, > 0).
struct WeightedDelta {
  std::vector<Tensor> delta;
  double weight = 0;
};

// Σ w_i Δ_i / Σ w_i. InvalidArgument for an empty list, a non-positive weight, or lists
// whose lengths, dtypes (f32 only) or shapes differ.
absl::StatusOr<std::vector<Tensor>> WeightedAverage(const std::vector<WeightedDelta>& deltas);

// The coordinate-wise trimmed mean of the Δs (pcp/diloco/trimmed_mean.h): per element, the
// floor(fraction × n) smallest and largest values are dropped and the rest averaged weighted.
// Same checks as WeightedAverage; fraction in [0, 0.5).
absl::StatusOr<std::vector<Tensor>> TrimmedMean(const std::vector<WeightedDelta>& deltas, double fraction);

// True when every element of every tensor is finite.
bool AllFinite(const std::vector<Tensor>& tensors);

struct OuterOptimizerOptions {
  double lr = 0.7;
  double momentum = 0.9;
  bool nesterov = true;
};

class OuterOptimizer {
 public:
  // Momentum buffers start at zero, one per spec (f32).
  OuterOptimizer(OuterOptimizerOptions options, const std::vector<TensorSpec>& specs);

  // Applies one step to `params` (modified in place; each must match its spec).
  absl::Status Step(const std::vector<Tensor>& gradient, std::vector<Tensor>* params);
  // The step, all or nothing: θ' and b' are computed into new tensors and replace `params`'
  // tensors and the momentum only if every element of both is finite; returns false (and
  // nothing changed, `params`' storage never written) otherwise: the round is rolled back.
  absl::StatusOr<bool> StepIfFinite(const std::vector<Tensor>& gradient, std::vector<Tensor>* params);
  // The same step with no |θ|-sized temporaries (streaming aggregation's memory bound): a first
  // pass checks that every θ' and b' element would be finite (else false, nothing written);
  // the second writes b' into the momentum in place and θ' into `gradient`'s buffers, which
  // then replace `params`' tensors (whose storage is never written). `gradient`'s storage must
  // not be shared with anything that reads it later.
  absl::StatusOr<bool> StepInPlaceIfFinite(std::vector<Tensor> gradient, std::vector<Tensor>* params);

  const std::vector<Tensor>& momentum() const { return momentum_; }
  // Restores buffers saved from momentum() (checkpoint resume); shapes must match.
  absl::Status SetMomentum(std::vector<Tensor> momentum);

 private:
  absl::Status Check(const std::vector<Tensor>& gradient, const std::vector<Tensor>& params) const;
  // b_out = μ·b + g, p_out = p − lr·(nesterov ? g + μ·b_out : b_out); out may alias in.
  void Apply(const Tensor& gradient, const Tensor& momentum, const Tensor& param, Tensor& momentum_out,
             Tensor& param_out) const;

  OuterOptimizerOptions options_;
  std::vector<TensorSpec> specs_;
  std::vector<Tensor> momentum_;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_OUTER_OPTIMIZER_H_
