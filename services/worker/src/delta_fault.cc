#include "pcp/worker/delta_fault.h"

#include <cmath>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace pcp::worker {

absl::StatusOr<DeltaFault> DeltaFault::Parse(absl::string_view spec) {
  DeltaFault fault;
  if (spec.empty()) return fault;
  for (absl::string_view text : absl::StrSplit(spec, '/')) {
    Step step{.text = std::string(text)};
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(text, absl::MaxSplits(':', 1));
    const absl::string_view name = kv.first;
    if (name == "none" || name == "nan") {
      if (!kv.second.empty())
        return absl::InvalidArgumentError(absl::StrCat("--fault_delta: '", text, "' takes no factor"));
      step.kind = name == "none" ? Kind::kNone : Kind::kNan;
    } else if (name == "scale" || name == "negate_scale" || name == "noise" || name == "lie") {
      double f = 0;
      if (!absl::SimpleAtod(kv.second, &f) || !std::isfinite(f) || f <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("--fault_delta: '", text, "': expected ", name, ":F with a finite F > 0"));
      }
      step.kind = name == "noise" ? Kind::kNoise : name == "lie" ? Kind::kLie : Kind::kScale;
      step.factor = name == "negate_scale" ? -f : f;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--fault_delta: unknown step '", text,
                       "'; expected none, scale:F, negate_scale:F, noise:F, lie:F or nan, "
                       "separated by '/'"));
    }
    fault.steps_.push_back(std::move(step));
  }
  return fault;
}

std::string DeltaFault::ApplyNext(std::vector<Tensor>* delta) {
  declared_norm_factor_ = 1;
  if (steps_.empty()) return "";
  const Step& step = steps_[next_];
  next_ = (next_ + 1) % steps_.size();
  switch (step.kind) {
    case Kind::kNone: return "";
    case Kind::kLie: declared_norm_factor_ = 1 / step.factor; [[fallthrough]];
    case Kind::kScale: {
      const float f = static_cast<float>(step.factor);
      for (Tensor& t : *delta) {
        float* p = t.data<float>();
        for (int64_t k = 0; k < t.num_elements(); ++k) p[k] *= f;
      }
      break;
    }
    case Kind::kNoise: {
      double delta_sq = 0, noise_sq = 0;
      std::normal_distribution<float> normal;
      for (Tensor& t : *delta) {
        float* p = t.data<float>();
        for (int64_t k = 0; k < t.num_elements(); ++k) {
          delta_sq += static_cast<double>(p[k]) * p[k];
          p[k] = normal(rng_);
          noise_sq += static_cast<double>(p[k]) * p[k];
        }
      }
      const float scale = noise_sq > 0 ? static_cast<float>(step.factor * std::sqrt(delta_sq / noise_sq)) : 0.0f;
      for (Tensor& t : *delta) {
        float* p = t.data<float>();
        for (int64_t k = 0; k < t.num_elements(); ++k) p[k] *= scale;
      }
      break;
    }
    case Kind::kNan:
      for (Tensor& t : *delta) {
        if (t.num_elements() > 0) {
          t.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
          break;
        }
      }
      break;
  }
  return step.text;
}

}  // namespace pcp::worker
