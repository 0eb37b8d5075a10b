// JobRun's Δ aggregation (job_run.h): whether the job's rounds stream their Δs into a
// RoundSum as they arrive (pcp/diloco/delta_sum.h) or keep them whole until the round closes,
// what each worker is told to expect, and the round's average.
#include "absl/strings/str_cat.h"
#include "job_run.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/enum_names.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {

void JobRun::DecideAggregation() {
  const JobConfig& c = prepared_->config;
  int64_t delta_elements = 0;  // the largest Δ of a round: θ, or with Streaming DiLoCo ⌈|θ| / P⌉
  for (const TensorSpec& spec : prepared_->param_specs) delta_elements += NumElements(spec.shape);
  const int64_t fragments = c.diloco.streaming.fragments;
  delta_elements = (delta_elements + fragments - 1) / fragments;
  stream_deltas_ = diloco::StreamsDeltas(c.diloco.aggregation, c.diloco.workers, delta_elements,
                                         c.diloco.screening.trimmed_mean > 0);
  spdlog::info("job {}: Δ aggregation {} (diloco.aggregation {}; {} workers x {:.1f} MiB per Δ)", job_.id,
               stream_deltas_ ? "streaming: each Δ is summed as it arrives" : "buffered: the round's Δs are kept until it closes",
               NameOf(diloco::kAggregationNames, c.diloco.aggregation), c.diloco.workers,
               static_cast<double>(delta_elements) * 4 / (1 << 20));
}

void JobRun::ExpectResultOf(WorkerSession& s, uint64_t round) {
  const std::vector<TensorSpec> specs = streaming() ? RoundSpecs(round) : prepared_->param_specs;
  s.ExpectResult(round, specs, prepared_->config.diloco.compression.up, stream_deltas_ ? SumFor(round, specs) : nullptr);
}

std::shared_ptr<RoundSum> JobRun::SumFor(uint64_t round, const std::vector<TensorSpec>& specs) {
  std::shared_ptr<RoundSum>& sum = round_sums_[round];
  if (sum == nullptr) {
    const JobConfig& c = prepared_->config;
    const int64_t steps = c.diloco.StepsOfRound(round);
    sum = RoundSum::Create(specs, *screen_, screen_->RoundThreshold({}), static_cast<uint32_t>(steps),
                           static_cast<uint64_t>(steps * c.training.batch_size * c.model.block_size));
  }
  return sum;
}

absl::StatusOr<std::vector<Tensor>> JobRun::AverageOf(uint64_t round, const std::vector<WeightedDelta>& deltas) {
  if (stream_deltas_) {
    auto it = round_sums_.find(round);
    if (it == round_sums_.end()) return absl::InternalError(absl::StrCat("round ", round, " has no sum"));
    return it->second->sums;  // Finish made them the average
  }
  const double trim = prepared_->config.diloco.screening.trimmed_mean;
  return trim > 0 ? TrimmedMean(deltas, trim) : WeightedAverage(deltas);
}

}  // namespace pcp::shepherd
