#include "pcp/shepherd/outer_optimizer.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "pcp/base/status_macros.h"
#include "pcp/diloco/screening.h"
#include "pcp/diloco/trimmed_mean.h"

namespace pcp::shepherd {
namespace {

absl::Status CheckF32(const Tensor& t, const Shape& shape, absl::string_view what) {
  if (t.dtype() != DType::kF32 || t.shape() != shape) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": expected ", TypeString(DType::kF32, shape), ", got ", t.TypeString()));
  }
  return absl::OkStatus();
}

// Checks `deltas` for WeightedAverage / TrimmedMean; returns the total weight.
absl::StatusOr<double> CheckDeltas(const std::vector<WeightedDelta>& deltas) {
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
  return total;
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> WeightedAverage(const std::vector<WeightedDelta>& deltas) {
  PCP_ASSIGN_OR_RETURN(const double total, CheckDeltas(deltas));
  const std::vector<Tensor>& first = deltas[0].delta;
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

absl::StatusOr<std::vector<Tensor>> TrimmedMean(const std::vector<WeightedDelta>& deltas, double fraction) {
  PCP_RETURN_IF_ERROR(CheckDeltas(deltas).status());
  std::vector<double> weights;
  for (const WeightedDelta& d : deltas) weights.push_back(d.weight);
  std::vector<Tensor> out;
  std::vector<absl::Span<const float>> inputs(deltas.size());
  for (size_t i = 0; i < deltas[0].delta.size(); ++i) {
    const Tensor& like = deltas[0].delta[i];
    for (size_t w = 0; w < deltas.size(); ++w) {
      inputs[w] = absl::MakeConstSpan(deltas[w].delta[i].data<float>(), static_cast<size_t>(like.num_elements()));
    }
    Tensor t(DType::kF32, like.shape());
    PCP_RETURN_IF_ERROR(diloco::TrimmedMean(inputs, weights, fraction,
                                            absl::MakeSpan(t.data<float>(), static_cast<size_t>(t.num_elements()))),
                        _ << "tensor " << i);
    out.push_back(std::move(t));
  }
  return out;
}

bool AllFinite(const std::vector<Tensor>& tensors) {
  for (const Tensor& t : tensors) {
    if (t.dtype() != DType::kF32) continue;
    if (!diloco::AllFinite(absl::MakeConstSpan(t.data<float>(), static_cast<size_t>(t.num_elements())))) return false;
  }
  return true;
}

OuterOptimizer::OuterOptimizer(OuterOptimizerOptions options, const std::vector<TensorSpec>& specs)
    : options_(options), specs_(specs) {
  for (const TensorSpec& s : specs_) {
    // Written now, so that its pages are mapped before the first outer step needs them (it
    // reads b, then writes it: on untouched zero pages, two faults a page inside the step).
    Tensor& b = momentum_.emplace_back(DType::kF32, s.shape);
    std::memset(b.raw_data(), 0, static_cast<size_t>(b.byte_size()));
  }
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

absl::Status OuterOptimizer::Check(const std::vector<Tensor>& gradient, const std::vector<Tensor>& params) const {
  if (gradient.size() != specs_.size() || params.size() != specs_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("outer step: expected ", specs_.size(), " tensors, got ",
                                                   gradient.size(), " gradients and ", params.size(), " parameters"));
  }
  for (size_t i = 0; i < specs_.size(); ++i) {
    absl::Status s = CheckF32(gradient[i], specs_[i].shape, absl::StrCat("outer gradient '", specs_[i].name, "'"));
    if (s.ok()) s = CheckF32(params[i], specs_[i].shape, absl::StrCat("parameter '", specs_[i].name, "'"));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

void OuterOptimizer::Apply(const Tensor& gradient, const Tensor& momentum, const Tensor& param, Tensor& momentum_out,
                           Tensor& param_out) const {
  const float mu = static_cast<float>(options_.momentum);
  const float lr = static_cast<float>(options_.lr);
  const int64_t n = gradient.num_elements();
  const float* g = gradient.data<float>();
  const float* b_in = momentum.data<float>();
  const float* p_in = param.data<float>();
  float* b = momentum_out.data<float>();
  float* p = param_out.data<float>();
  for (int64_t k = 0; k < n; ++k) {
    b[k] = mu * b_in[k] + g[k];
    const float update = options_.nesterov ? g[k] + mu * b[k] : b[k];
    p[k] = p_in[k] - lr * update;
  }
}

absl::Status OuterOptimizer::Step(const std::vector<Tensor>& gradient, std::vector<Tensor>* params) {
  PCP_RETURN_IF_ERROR(Check(gradient, *params));
  for (size_t i = 0; i < specs_.size(); ++i) {
    Apply(gradient[i], momentum_[i], (*params)[i], momentum_[i], (*params)[i]);
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> OuterOptimizer::StepIfFinite(const std::vector<Tensor>& gradient, std::vector<Tensor>* params) {
  PCP_RETURN_IF_ERROR(Check(gradient, *params));
  std::vector<Tensor> momentum, next;
  for (size_t i = 0; i < specs_.size(); ++i) {
    momentum.emplace_back(DType::kF32, specs_[i].shape);
    next.emplace_back(DType::kF32, specs_[i].shape);
    Apply(gradient[i], momentum_[i], (*params)[i], momentum.back(), next.back());
  }
  if (!AllFinite(momentum) || !AllFinite(next)) return false;
  momentum_ = std::move(momentum);
  *params = std::move(next);
  return true;
}

absl::StatusOr<bool> OuterOptimizer::StepInPlaceIfFinite(std::vector<Tensor> gradient, std::vector<Tensor>* params) {
  PCP_RETURN_IF_ERROR(Check(gradient, *params));
  const float mu = static_cast<float>(options_.momentum);
  const float lr = static_cast<float>(options_.lr);
  // Pass 1: would every result be finite? (The same arithmetic as Apply, nothing stored.)
  for (size_t i = 0; i < specs_.size(); ++i) {
    const int64_t n = gradient[i].num_elements();
    const float* g = gradient[i].data<float>();
    const float* b_in = momentum_[i].data<float>();
    const float* p_in = (*params)[i].data<float>();
    bool finite = true;
    for (int64_t k = 0; k < n; ++k) {
      const float b = mu * b_in[k] + g[k];
      const float update = options_.nesterov ? g[k] + mu * b : b;
      const float p = p_in[k] - lr * update;
      finite &= std::isfinite(b);  // two &=, not &&: no branch in the loop
      finite &= std::isfinite(p);
    }
    if (!finite) return false;
  }
  // Pass 2: b in place, θ' over the gradient (each element read before it is written).
  for (size_t i = 0; i < specs_.size(); ++i) Apply(gradient[i], momentum_[i], (*params)[i], momentum_[i], gradient[i]);
  *params = std::move(gradient);
  return true;
}

}  // namespace pcp::shepherd
