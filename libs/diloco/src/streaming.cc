#include "pcp/diloco/streaming.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace pcp::diloco {

absl::StatusOr<FragmentPlan> FragmentPlan::Create(absl::Span<const int64_t> sizes, int64_t fragments) {
  int64_t n = 0;
  for (int64_t s : sizes) {
    if (s < 0) return absl::InvalidArgumentError(absl::StrCat("a parameter of ", s, " elements"));
    n += s;
  }
  if (fragments < 1 || fragments > n) {
    return absl::InvalidArgumentError(
        absl::StrCat("diloco.streaming.fragments: ", fragments, " fragments of ", n, " parameter values"));
  }
  FragmentPlan plan;
  plan.sizes_.assign(sizes.begin(), sizes.end());
  plan.fragments_.resize(static_cast<size_t>(fragments));
  // Fragment p: flat elements [p·n/P, (p+1)·n/P), cut into per-tensor segments.
  size_t tensor = 0;
  int64_t tensor_start = 0;  // flat index of tensor's element 0
  for (int64_t p = 0; p < fragments; ++p) {
    const int64_t lo = p * n / fragments, hi = (p + 1) * n / fragments;
    int64_t at = lo;
    while (at < hi) {
      while (at >= tensor_start + plan.sizes_[tensor]) tensor_start += plan.sizes_[tensor++];
      const int64_t end = std::min(hi, tensor_start + plan.sizes_[tensor]);
      plan.fragments_[static_cast<size_t>(p)].push_back({tensor, at - tensor_start, end - tensor_start});
      at = end;
    }
  }
  return plan;
}

int64_t FragmentPlan::elements(int64_t p) const {
  int64_t n = 0;
  for (const Segment& s : segments(p)) n += s.size();
  return n;
}

std::string FragmentPlan::SegmentName(absl::string_view param_name, const Segment& s) const {
  if (s.begin == 0 && s.end == sizes_[s.tensor]) return std::string(param_name);
  return absl::StrCat(param_name, "[", s.begin, ":", s.end, "]");
}

void MixInto(absl::Span<float> local, absl::Span<const float> global, float alpha) {
  const float beta = 1.0f - alpha;
  for (size_t k = 0; k < local.size(); ++k) local[k] = alpha * local[k] + beta * global[k];
}

}  // namespace pcp::diloco
