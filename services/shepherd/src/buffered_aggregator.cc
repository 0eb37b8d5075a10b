#include "buffered_aggregator.h"

#include "absl/strings/str_cat.h"
#include "pcp/base/status_macros.h"

namespace pcp::shepherd {
namespace {

// Multiplies every element of the Δ by `scale` (clipping it to the threshold), in f32 as the
// streamed sum scales each chunk.
void Scale(std::vector<Tensor>* delta, double scale) {
  const float f = static_cast<float>(scale);
  for (Tensor& t : *delta) {
    float* p = t.data<float>();
    for (int64_t k = 0; k < t.num_elements(); ++k) p[k] *= f;
  }
}

}  // namespace

absl::Status BufferedAggregator::Add(uint64_t round, Contribution c) {
  if (c.verdict.action == diloco::ScreenVerdict::kReject) {
    return absl::InvalidArgumentError(absl::StrCat("round ", round, ": a rejected Δ of ", c.worker, " was added"));
  }
  if (c.verdict.action == diloco::ScreenVerdict::kClip) Scale(&c.delta, c.verdict.scale);
  rounds_[round].push_back(WeightedDelta{std::move(c.delta), c.weight});
  return absl::OkStatus();
}

absl::StatusOr<Combined> BufferedAggregator::Finish(uint64_t round) {
  auto it = rounds_.find(round);
  if (it == rounds_.end()) return absl::InvalidArgumentError(absl::StrCat("round ", round, " has no Δs to combine"));
  std::vector<WeightedDelta> deltas = std::move(it->second);
  rounds_.erase(it);
  PCP_ASSIGN_OR_RETURN(std::vector<Tensor> combined, Combine(deltas));
  // (Fresh tensors, but the outer step keeps its copying form for buffered rounds: the
  // in-place one makes two passes, which only streaming's memory bound pays for.)
  return Combined{.delta = std::move(combined), .scratch = false};
}

}  // namespace pcp::shepherd
