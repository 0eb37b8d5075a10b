// The coordinate-wise trimmed mean of a round's whole Δs (aggregator.h; diloco.screening.
// trimmed_mean): per element the smallest and largest fraction are dropped and the rest
// averaged weighted (outer_optimizer.h, TrimmedMean). Needs every Δ of a coordinate at once,
// so it never streams.
#include "aggregator.h"
#include "buffered_aggregator.h"

namespace pcp::shepherd {
namespace {

class TrimmedMeanAggregator final : public BufferedAggregator {
 public:
  explicit TrimmedMeanAggregator(double fraction) : fraction_(fraction) {}
  absl::string_view name() const override { return "trimmed mean"; }

 protected:
  absl::StatusOr<std::vector<Tensor>> Combine(const std::vector<WeightedDelta>& deltas) const override {
    return TrimmedMean(deltas, fraction_);
  }

 private:
  const double fraction_;
};

}  // namespace

std::unique_ptr<Aggregator> NewTrimmedMeanAggregator(double fraction) {
  return std::make_unique<TrimmedMeanAggregator>(fraction);
}

}  // namespace pcp::shepherd
