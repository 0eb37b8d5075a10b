#include "delayed_nesterov_step.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "pcp/base/status_macros.h"

namespace pcp::shepherd {
namespace {

// Shares add up to a round's worth within this (n / workers in floating point).
constexpr double kShareSlack = 1e-9;

class DelayedNesterovStep final : public OuterStep {
 public:
  DelayedNesterovStep(const OuterOptimizerOptions& options, std::vector<TensorSpec> specs)
      : options_(options), specs_(std::move(specs)) {
    for (const TensorSpec& spec : specs_) {
      momentum_.emplace_back(DType::kF32, spec.shape);  // zeros
      buffer_.emplace_back(DType::kF32, spec.shape);
    }
  }
  absl::Status Restore(std::vector<Tensor> momentum) {
    if (momentum.empty()) return absl::OkStatus();
    if (momentum.size() != specs_.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("outer momentum: ", momentum.size(), " tensors, expected ", specs_.size()));
    }
    for (size_t i = 0; i < specs_.size(); ++i) {
      if (momentum[i].dtype() != DType::kF32 || momentum[i].shape() != specs_[i].shape) {
        return absl::InvalidArgumentError(
            absl::StrCat("outer momentum tensor ", i, " does not match parameter '", specs_[i].name, "'"));
      }
    }
    momentum_ = std::move(momentum);
    return absl::OkStatus();
  }

  std::vector<TensorSpec> RoundSpecs(uint64_t) const override { return specs_; }
  std::vector<Tensor> Momentum() const override { return momentum_; }

  absl::StatusOr<bool> Apply(uint64_t, Combined combined, std::vector<Tensor>* next) override {
    if (combined.delta.size() != specs_.size() || next->size() != specs_.size()) {
      return absl::InvalidArgumentError(absl::StrCat("outer step: ", combined.delta.size(), " Δ tensors and ",
                                                     next->size(), " θ tensors, expected ", specs_.size()));
    }
    if (!(combined.share > 0) || !std::isfinite(combined.share)) {
      return absl::InvalidArgumentError(absl::StrCat("outer step: share ", combined.share, " of a round's worth"));
    }
    const bool momentum_due = taken_ + combined.share >= 1.0 - kShareSlack;
    const float lr = static_cast<float>(options_.lr), mu = static_cast<float>(options_.momentum);
    // All or nothing: θ', the buffer and (when due) b' go to new tensors first.
    std::vector<Tensor> theta(specs_.size()), buffer(specs_.size()), momentum(specs_.size());
    for (size_t i = 0; i < specs_.size(); ++i) {
      const Tensor& g = combined.delta[i];
      const Tensor& p = (*next)[i];
      if (g.dtype() != DType::kF32 || g.shape() != specs_[i].shape || p.dtype() != DType::kF32 ||
          p.shape() != specs_[i].shape) {
        return absl::InvalidArgumentError(
            absl::StrCat("outer step: tensor ", i, " does not match parameter '", specs_[i].name, "'"));
      }
      theta[i] = Tensor(DType::kF32, specs_[i].shape);
      buffer[i] = Tensor(DType::kF32, specs_[i].shape);
      if (momentum_due) momentum[i] = Tensor(DType::kF32, specs_[i].shape);
      const float* gv = g.data<float>();
      const float* pv = p.data<float>();
      const float* bv = momentum_[i].data<float>();
      const float* acc = buffer_[i].data<float>();
      float* tv = theta[i].data<float>();
      float* nb = buffer[i].data<float>();
      float* nm = momentum_due ? momentum[i].data<float>() : nullptr;
      for (int64_t k = 0; k < g.num_elements(); ++k) {
        float t = pv[k] - lr * gv[k];
        const float sum = acc[k] + gv[k];
        if (momentum_due) {
          const float b = mu * bv[k] + sum;
          nm[k] = b;
          t -= lr * mu * (options_.nesterov ? b : bv[k]);
          nb[k] = 0.0f;
          if (!std::isfinite(b)) return false;
        } else {
          nb[k] = sum;
          if (!std::isfinite(sum)) return false;
        }
        if (!std::isfinite(t)) return false;
        tv[k] = t;
      }
    }
    *next = std::move(theta);
    buffer_ = std::move(buffer);
    if (momentum_due) {
      momentum_ = std::move(momentum);
      taken_ = std::max(0.0, taken_ + combined.share - 1.0);
    } else {
      taken_ += combined.share;
    }
    return true;
  }

 private:
  const OuterOptimizerOptions options_;
  const std::vector<TensorSpec> specs_;
  std::vector<Tensor> momentum_;  // b
  std::vector<Tensor> buffer_;    // the Δs since the last momentum update
  double taken_ = 0;              // their shares of a round's worth
};

}  // namespace

absl::StatusOr<std::unique_ptr<OuterStep>> NewDelayedNesterovStep(const OuterOptimizerOptions& options,
                                                                  const std::vector<TensorSpec>& param_specs,
                                                                  std::vector<Tensor> momentum) {
  auto step = std::make_unique<DelayedNesterovStep>(options, param_specs);
  PCP_RETURN_IF_ERROR(step->Restore(std::move(momentum)));
  return step;
}

}  // namespace pcp::shepherd
