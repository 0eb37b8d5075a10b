// ChooseAggregator (aggregator.h): the one place a job's aggregation rule is decided.
#include "aggregator.h"

#include "pcp/diloco/delta_sum.h"

namespace pcp::shepherd {

std::unique_ptr<Aggregator> ChooseAggregator(const JobConfig& config, int64_t delta_elements) {
  const double trim = config.diloco.screening.trimmed_mean;
  if (diloco::StreamsDeltas(config.diloco.aggregation, config.diloco.workers, delta_elements, trim > 0)) {
    return NewStreamingSumAggregator();
  }
  return trim > 0 ? NewTrimmedMeanAggregator(trim) : NewWeightedAverageAggregator();
}

}  // namespace pcp::shepherd
