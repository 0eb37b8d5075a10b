// Private: the common part of the rules that keep a round's Δs whole until it closes
// (aggregator.h): the weighted average and the trimmed mean differ only in Combine.
#ifndef PCP_SHEPHERD_SRC_BUFFERED_AGGREGATOR_H_
#define PCP_SHEPHERD_SRC_BUFFERED_AGGREGATOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "aggregator.h"
#include "pcp/shepherd/outer_optimizer.h"

namespace pcp::shepherd {

class BufferedAggregator : public Aggregator {
 public:
  bool streamable() const final { return false; }
  std::shared_ptr<RoundSum> SinkFor(uint64_t, const std::vector<TensorSpec>&, const diloco::DeltaScreen&, uint32_t,
                                    uint64_t) final {
    return nullptr;
  }
  void Taint(uint64_t) final {}
  RoundSeal Seal(uint64_t) final { return {}; }
  // Keeps the Δ, scaled by the verdict (clipped to the threshold), in the order added.
  absl::Status Add(uint64_t round, Contribution contribution) final;
  absl::StatusOr<Combined> Finish(uint64_t round) final;
  void Drop(uint64_t round) final { rounds_.erase(round); }
  void DropThrough(uint64_t round) final { rounds_.erase(rounds_.begin(), rounds_.upper_bound(round)); }

 protected:
  // The round's Δs (in the order added) combined into one.
  virtual absl::StatusOr<std::vector<Tensor>> Combine(const std::vector<WeightedDelta>& deltas) const = 0;

 private:
  std::map<uint64_t, std::vector<WeightedDelta>> rounds_;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_BUFFERED_AGGREGATOR_H_
