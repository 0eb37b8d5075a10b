#include "outer_step.h"

#include <utility>

#include "pcp/base/status_macros.h"
#include "pcp/rpc/tensor_fragments.h"

namespace pcp::shepherd {
namespace {

// OuterOptimizer's two forms of the all-or-nothing step (outer_optimizer.h): into the combined
// Δ's own buffers when they are scratch, else into new tensors.
absl::StatusOr<bool> StepIfFinite(OuterOptimizer& outer, Combined combined, std::vector<Tensor>* params) {
  if (combined.scratch) return outer.StepInPlaceIfFinite(std::move(combined.delta), params);
  return outer.StepIfFinite(combined.delta, params);
}

class WholeOuterStep final : public OuterStep {
 public:
  WholeOuterStep(const OuterOptimizerOptions& options, std::vector<TensorSpec> specs)
      : specs_(std::move(specs)), outer_(options, specs_) {}
  absl::Status Restore(std::vector<Tensor> momentum) {
    return momentum.empty() ? absl::OkStatus() : outer_.SetMomentum(std::move(momentum));
  }

  std::vector<TensorSpec> RoundSpecs(uint64_t) const override { return specs_; }
  absl::StatusOr<bool> Apply(uint64_t, Combined combined, std::vector<Tensor>* next) override {
    return StepIfFinite(outer_, std::move(combined), next);
  }
  std::vector<Tensor> Momentum() const override { return outer_.momentum(); }

 private:
  const std::vector<TensorSpec> specs_;
  OuterOptimizer outer_;
};

class FragmentOuterStep final : public OuterStep {
 public:
  FragmentOuterStep(std::vector<TensorSpec> specs, diloco::FragmentPlan plan)
      : specs_(std::move(specs)), plan_(std::move(plan)) {}
  absl::Status Init(const OuterOptimizerOptions& options, const std::vector<Tensor>& momentum) {
    for (int64_t p = 0; p < plan_.fragments(); ++p) {
      auto outer = std::make_unique<OuterOptimizer>(options, FragmentSpecs(plan_, p, specs_));
      if (!momentum.empty()) PCP_RETURN_IF_ERROR(outer->SetMomentum(GatherFragment(plan_, p, momentum)));
      outers_.push_back(std::move(outer));
    }
    return absl::OkStatus();
  }

  std::vector<TensorSpec> RoundSpecs(uint64_t round) const override {
    return FragmentSpecs(plan_, plan_.FragmentOfRound(round), specs_);
  }
  absl::StatusOr<bool> Apply(uint64_t round, Combined combined, std::vector<Tensor>* next) override {
    const int64_t p = plan_.FragmentOfRound(round);
    std::vector<Tensor> fragment = GatherFragment(plan_, p, *next);  // copies: the step replaces them
    PCP_ASSIGN_OR_RETURN(bool stepped, StepIfFinite(*outers_[static_cast<size_t>(p)], std::move(combined), &fragment));
    if (!stepped) return false;
    PCP_RETURN_IF_ERROR(ScatterFragment(plan_, p, fragment, next));
    return true;
  }
  std::vector<Tensor> Momentum() const override {
    std::vector<Tensor> full;
    for (const TensorSpec& spec : specs_)
      full.emplace_back(DType::kF32, spec.shape);  // every fragment overwrites its part
    for (int64_t p = 0; p < plan_.fragments(); ++p) {
      // Cannot fail: the fragment optimizers were built from the same plan.
      ScatterFragment(plan_, p, outers_[static_cast<size_t>(p)]->momentum(), &full).IgnoreError();
    }
    return full;
  }

 private:
  const std::vector<TensorSpec> specs_;
  const diloco::FragmentPlan plan_;
  std::vector<std::unique_ptr<OuterOptimizer>> outers_;  // one per fragment
};

}  // namespace

absl::StatusOr<std::unique_ptr<OuterStep>> NewWholeOuterStep(const OuterOptimizerOptions& options,
                                                             const std::vector<TensorSpec>& param_specs,
                                                             std::vector<Tensor> momentum) {
  auto step = std::make_unique<WholeOuterStep>(options, param_specs);
  PCP_RETURN_IF_ERROR(step->Restore(std::move(momentum)));
  return step;
}

absl::StatusOr<std::unique_ptr<OuterStep>> NewFragmentOuterStep(const OuterOptimizerOptions& options,
                                                                const std::vector<TensorSpec>& param_specs,
                                                                diloco::FragmentPlan plan,
                                                                const std::vector<Tensor>& momentum) {
  auto step = std::make_unique<FragmentOuterStep>(param_specs, std::move(plan));
  PCP_RETURN_IF_ERROR(step->Init(options, momentum));
  return step;
}

}  // namespace pcp::shepherd
