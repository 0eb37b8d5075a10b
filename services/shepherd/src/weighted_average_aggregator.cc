// The weighted average of a round's whole Δs (aggregator.h): Σ w_i Δ_i / Σ w_i, weights the
// tokens each worker processed (outer_optimizer.h, WeightedAverage).
#include "aggregator.h"
#include "buffered_aggregator.h"

namespace pcp::shepherd {
namespace {

class WeightedAverageAggregator final : public BufferedAggregator {
 public:
  absl::string_view name() const override { return "weighted average"; }

 protected:
  absl::StatusOr<std::vector<Tensor>> Combine(const std::vector<WeightedDelta>& deltas) const override {
    return WeightedAverage(deltas);
  }
};

}  // namespace

std::unique_ptr<Aggregator> NewWeightedAverageAggregator() { return std::make_unique<WeightedAverageAggregator>(); }

}  // namespace pcp::shepherd
