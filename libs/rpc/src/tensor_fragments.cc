#include "pcp/rpc/tensor_fragments.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"

namespace pcp {

std::vector<TensorSpec> FragmentSpecs(const diloco::FragmentPlan& plan, int64_t p,
                                      const std::vector<TensorSpec>& params) {
  std::vector<TensorSpec> specs;
  for (const diloco::Segment& s : plan.segments(p)) {
    specs.push_back({plan.SegmentName(params[s.tensor].name, s), DType::kF32, Shape{s.size()}});
  }
  return specs;
}

std::vector<Tensor> GatherFragment(const diloco::FragmentPlan& plan, int64_t p, const std::vector<Tensor>& full) {
  std::vector<Tensor> pieces;
  for (const diloco::Segment& s : plan.segments(p)) {
    Tensor piece(DType::kF32, Shape{s.size()});
    const float* from = full[s.tensor].data<float>() + s.begin;
    std::copy(from, from + s.size(), piece.data<float>());
    pieces.push_back(std::move(piece));
  }
  return pieces;
}

absl::Status ScatterFragment(const diloco::FragmentPlan& plan, int64_t p, const std::vector<Tensor>& pieces,
                             std::vector<Tensor>* full) {
  const std::vector<diloco::Segment>& segments = plan.segments(p);
  if (pieces.size() != segments.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("fragment ", p, ": ", pieces.size(), " tensors for ", segments.size(), " segments"));
  }
  for (size_t i = 0; i < segments.size(); ++i) {
    const diloco::Segment& s = segments[i];
    if (s.tensor >= full->size() || pieces[i].dtype() != DType::kF32 || pieces[i].num_elements() != s.size() ||
        (*full)[s.tensor].dtype() != DType::kF32 || (*full)[s.tensor].num_elements() < s.end) {
      return absl::InvalidArgumentError(absl::StrCat("fragment ", p, ", segment ", i, ": ", pieces[i].TypeString(),
                                                     " does not fit elements [", s.begin, ", ", s.end, ") of tensor ",
                                                     s.tensor));
    }
  }
  std::set<size_t> copied;
  for (size_t i = 0; i < segments.size(); ++i) {
    const diloco::Segment& s = segments[i];
    if (copied.insert(s.tensor).second) (*full)[s.tensor] = (*full)[s.tensor].Clone();
    const float* from = pieces[i].data<float>();
    std::copy(from, from + s.size(), (*full)[s.tensor].data<float>() + s.begin);
  }
  return absl::OkStatus();
}

}  // namespace pcp
