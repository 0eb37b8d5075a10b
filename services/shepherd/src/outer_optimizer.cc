#include "pcp/shepherd/outer_optimizer.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace pcp::shepherd {
namespace {

absl::Status CheckF32(const Tensor& t, const Shape& shape, absl::string_view what) {
  if (t.dtype() != DType::kF32 || t.shape() != shape) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": expected ", TypeString(DType::kF32, shape), ", got ", t.TypeString()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> WeightedAverage(const std::vector<WeightedDelta>& deltas) {
  if (deltas.empty()) return absl::InvalidArgumentError("no results to average");
  const std::vector<Tensor>& first = deltas[0].delta;
  double total = 0;
  for (size_t w = 0; w < deltas.size(); ++w) {
    if (!(deltas[w].weight > 0) || !std::isfinite(deltas[w].weight)) {
      return absl::InvalidArgumentError(absl::StrCat("result ", w, ": weight must be > 0, got ", deltas[w].weight));
    }
    if (deltas[w].delta.size() != first.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("result ", w, ": ", deltas[w].delta.size(), " tensors, expected ", first.size()));
    }
    for (size_t i = 0; i < first.size(); ++i) {
      absl::Status s = CheckF32(deltas[w].delta[i], first[i].shape(), absl::StrCat("result ", w, " tensor ", i));
      if (!s.ok()) return s;
    }
    total += deltas[w].weight;
  }
  std::vector<Tensor> out;
  out.reserve(first.size());
  std::vector<double> acc;
  for (size_t i = 0; i < first.size(); ++i) {
    const int64_t n = first[i].num_elements();
    acc.assign(static_cast<size_t>(n), 0.0);
    for (const WeightedDelta& d : deltas) {
      const double scale = d.weight / total;
      const float* src = d.delta[i].data<float>();
      for (int64_t k = 0; k < n; ++k) acc[k] += scale * static_cast<double>(src[k]);
    }
    Tensor avg(DType::kF32, first[i].shape());
    float* dst = avg.data<float>();
    for (int64_t k = 0; k < n; ++k) dst[k] = static_cast<float>(acc[k]);
    out.push_back(std::move(avg));
  }
  return out;
}

bool AllFinite(const std::vector<Tensor>& tensors) {
  for (const Tensor& t : tensors) {
    if (t.dtype() != DType::kF32) continue;
    const float* p = t.data<float>();
    for (int64_t k = 0; k < t.num_elements(); ++k) {
      if (!std::isfinite(p[k])) return false;
    }
  }
  return true;
}

OuterOptimizer::OuterOptimizer(OuterOptimizerOptions options, const std::vector<TensorSpec>& specs)
    : options_(options), specs_(specs) {
  for (const TensorSpec& s : specs_) momentum_.emplace_back(DType::kF32, s.shape);
}

absl::Status OuterOptimizer::SetMomentum(std::vector<Tensor> momentum) {
  if (momentum.size() != specs_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("outer momentum: ", momentum.size(), " tensors, expected ", specs_.size()));
  }
  for (size_t i = 0; i < specs_.size(); ++i) {
    absl::Status s = CheckF32(momentum[i], specs_[i].shape, absl::StrCat("outer momentum '", specs_[i].name, "'"));
    if (!s.ok()) return s;
  }
  momentum_ = std::move(momentum);
  return absl::OkStatus();
}

absl::Status OuterOptimizer::Step(const std::vector<Tensor>& gradient, std::vector<Tensor>* params) {
  if (gradient.size() != specs_.size() || params->size() != specs_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("outer step: expected ", specs_.size(), " tensors, got ",
                                                   gradient.size(), " gradients and ", params->size(), " parameters"));
  }
  for (size_t i = 0; i < specs_.size(); ++i) {
    absl::Status s = CheckF32(gradient[i], specs_[i].shape, absl::StrCat("outer gradient '", specs_[i].name, "'"));
    if (s.ok()) s = CheckF32((*params)[i], specs_[i].shape, absl::StrCat("parameter '", specs_[i].name, "'"));
    if (!s.ok()) return s;
  }
  const float mu = static_cast<float>(options_.momentum);
  const float lr = static_cast<float>(options_.lr);
  for (size_t i = 0; i < specs_.size(); ++i) {
    const int64_t n = gradient[i].num_elements();
    const float* g = gradient[i].data<float>();
    float* b = momentum_[i].data<float>();
    float* p = (*params)[i].data<float>();
    for (int64_t k = 0; k < n; ++k) {
      b[k] = mu * b[k] + g[k];
      const float update = options_.nesterov ? g[k] + mu * b[k] : b[k];
      p[k] -= lr * update;
    }
  }
  return absl::OkStatus();
}

}  // namespace pcp::shepherd
