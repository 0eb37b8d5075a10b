// The streaming sum (aggregator.h; diloco.aggregation streaming, pcp/diloco/delta_sum.h): each
// round's Δs are summed into one RoundSum chunk by chunk as the worker sessions receive them,
// so the shepherd holds |Δ| values however many workers send. A Δ is screened on the norm its
// header declares (screen.h), before its first chunk.
#include <map>

#include "absl/strings/str_cat.h"
#include "aggregator.h"
#include "screen.h"

namespace pcp::shepherd {
namespace {

class StreamingSumAggregator final : public Aggregator {
 public:
  absl::string_view name() const override { return "streaming sum"; }
  bool streamable() const override { return true; }

  std::shared_ptr<RoundSum> SinkFor(uint64_t round, const std::vector<TensorSpec>& specs,
                                    const diloco::DeltaScreen& screen, uint32_t steps, uint64_t tokens) override {
    std::shared_ptr<RoundSum>& sum = sums_[round];
    if (sum == nullptr) sum = RoundSum::Create(specs, screen, ArrivalThreshold(screen), steps, tokens);
    return sum;
  }

  void Taint(uint64_t round) override {
    if (auto it = sums_.find(round); it != sums_.end()) it->second->sum.Taint();
  }

  RoundSeal Seal(uint64_t round) override {
    auto it = sums_.find(round);
    if (it == sums_.end()) return {};
    RoundSum& sum = *it->second;
    sum.sum.Finish();  // no chunk is added after this; the buffers now hold the weighted average
    return RoundSeal{.liars = sum.sum.liars(), .tainted = sum.sum.tainted(), .threshold = sum.threshold};
  }

  absl::Status Add(uint64_t round, Contribution c) override {
    return absl::FailedPreconditionError(absl::StrCat("round ", round, ": a whole Δ of ", c.worker,
                                                      " for a streamed round (its chunks go to the sink)"));
  }

  absl::StatusOr<Combined> Finish(uint64_t round) override {
    auto it = sums_.find(round);
    if (it == sums_.end()) return absl::InternalError(absl::StrCat("round ", round, " has no sum"));
    // (The sessions still holding the sum add nothing after Seal: its buffers are ours.)
    return Combined{.delta = it->second->sums, .scratch = true};
  }

  void Drop(uint64_t round) override { sums_.erase(round); }
  void DropThrough(uint64_t round) override { sums_.erase(sums_.begin(), sums_.upper_bound(round)); }

 private:
  // Each open or upcoming round's sum (with Streaming DiLoCo the next round's may fill while
  // one is open).
  std::map<uint64_t, std::shared_ptr<RoundSum>> sums_;
};

}  // namespace

std::unique_ptr<Aggregator> NewStreamingSumAggregator() { return std::make_unique<StreamingSumAggregator>(); }

}  // namespace pcp::shepherd
