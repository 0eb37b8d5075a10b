// JobRun's aggregation rule (job_run.h, aggregator.h): chosen once per job, and what each
// worker is told to expect.
#include "absl/strings/str_cat.h"
#include "job_run.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/enum_names.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {

void JobRun::ChooseAggregation() {
  const JobConfig& c = prepared_->config;
  int64_t delta_elements = 0;  // the largest Δ of a round: θ, or with Streaming DiLoCo ⌈|θ| / P⌉
  for (const TensorSpec& spec : prepared_->param_specs) delta_elements += NumElements(spec.shape);
  const int64_t fragments = c.diloco.streaming.fragments;
  delta_elements = (delta_elements + fragments - 1) / fragments;
  if (c.diloco.mode == diloco::RoundMode::kAsync) {
    // Asynchronous groups keep their Δs whole: a Δ's group is known only as it arrives.
    JobConfig buffered = c;
    buffered.diloco.aggregation = diloco::Aggregation::kBuffered;
    aggregator_ = ChooseAggregator(buffered, delta_elements);
  } else {
    aggregator_ = ChooseAggregator(c, delta_elements);
  }
  spdlog::info("job {}: Δ aggregation {}, {} (diloco.aggregation {}; {} workers x {:.1f} MiB per Δ)", job_.id,
               aggregator_->streamable() ? "streaming: each Δ is summed as it arrives"
                                         : "buffered: the round's Δs are kept until it closes",
               aggregator_->name(), NameOf(diloco::kAggregationNames, c.diloco.aggregation), c.diloco.workers,
               static_cast<double>(delta_elements) * 4 / (1 << 20));
}

void JobRun::ExpectResultOf(WorkerSession& s, uint64_t round) {
  const JobConfig& c = prepared_->config;
  const std::vector<TensorSpec> specs = outer_step_->RoundSpecs(round);
  // Time-budgeted rounds: each worker runs its own steps (0: any; OnResult checks them).
  const int64_t steps = c.diloco.time_budget.enabled() ? 0 : c.diloco.StepsOfRound(round);
  s.ExpectResult(round, specs, c.diloco.compression.up,
                 aggregator_->SinkFor(round, specs, *screen_, static_cast<uint32_t>(steps),
                                      static_cast<uint64_t>(steps * c.training.batch_size * c.model.block_size)));
}

}  // namespace pcp::shepherd
