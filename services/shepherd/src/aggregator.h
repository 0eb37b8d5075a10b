// Private: how a round's Δs become the one Δ the outer step applies. The rule is chosen once
// per job (ChooseAggregator) and is the round engine's only notion of it: JobRun hands every
// screened Δ to the rule and asks for the result as the round closes, whatever the rule.
//
//   std::unique_ptr<Aggregator> agg = ChooseAggregator(config, delta_elements);
//   // As a worker is told to expect round r's result: a streamable rule gives the sink its
//   // chunks go into (round_sum.h; the session screens the header and adds each chunk).
//   std::shared_ptr<RoundSum> sink = agg->SinkFor(r, specs, screen, steps, tokens);  // null: buffered
//   // As round r closes:
//   RoundSeal seal = agg->Seal(r);                     // streamed: who lied, whether the sum is tainted
//   for (each buffered Δ admitted by Screen) PCP_RETURN_IF_ERROR(agg->Add(r, {delta, tokens, verdict}));
//   PCP_ASSIGN_OR_RETURN(Combined avg, agg->Finish(r));
//   agg->DropThrough(r);                               // (or Drop(r) when the round is rolled back)
//
// Implementations, one file each: weighted average (buffered; weighted_average_aggregator.cc),
// coordinate-wise trimmed mean (buffered; trimmed_mean_aggregator.cc) and streaming sum
// (streaming_sum_aggregator.cc). State is kept per round number, so rounds may overlap
// (Streaming DiLoCo fills round r + 1's sum while r is open; asynchronous rounds may keep
// several open). A new rule (a median, a loss-scored average, a sparse sum) is a new class
// here and one line in ChooseAggregator. Single-threaded except for the RoundSum sinks, which
// worker sessions feed from their own threads (round_sum.h).
#ifndef PCP_SHEPHERD_SRC_AGGREGATOR_H_
#define PCP_SHEPHERD_SRC_AGGREGATOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pcp/diloco/screening.h"
#include "pcp/rpc/tensor_proto.h"
#include "pcp/tensor/tensor.h"
#include "pcp/training/job_config.h"
#include "round_sum.h"

namespace pcp::shepherd {

// One whole Δ of a round, screened and admitted (Screen, screen.h).
struct Contribution {
  std::vector<Tensor> delta;  // in the round's spec order, f32; the aggregator takes it
  double weight = 0;          // tokens processed, > 0
  // kAccept, or kClip: the aggregator scales the Δ by verdict.scale.
  diloco::ScreenVerdict verdict;
  double mean_loss = 0;  // the sender's mean inner loss over the round
  std::string worker;    // its supervisor id
};

// The round's combined Δ.
struct Combined {
  std::vector<Tensor> delta;
  // The tensors are the aggregator's own buffers, read by nothing after this: the outer step
  // may write θ' into them (OuterOptimizer::StepInPlaceIfFinite) instead of allocating.
  bool scratch = false;
  // The fraction of a round's worth of Δs it holds: 1 for a round, n / workers for an
  // asynchronous group of n (the delayed Nesterov step counts them, delayed_nesterov_step.h).
  double share = 1;
};

// What the round's streams left behind once sealed.
struct RoundSeal {
  // Senders whose streamed values broke the norm they declared (refused: kDeclaredNorm).
  std::vector<std::string> liars;
  // Some of a refused sender's chunks are in the sum: the round must be redone without it.
  bool tainted = false;
  // The threshold the streamed headers were judged against (for the liars' verdicts).
  diloco::ScreenThreshold threshold;
};

class Aggregator {
 public:
  virtual ~Aggregator() = default;

  // The rule, for logs ("weighted average", "trimmed mean", "streaming sum").
  virtual absl::string_view name() const = 0;
  // True when Δs are summed chunk by chunk as they arrive (SinkFor gives the sink); false
  // when whole Δs are kept until the round closes and come to Add.
  virtual bool streamable() const = 0;

  // Streamable rules: round `round`'s sink, created by the first call; each Δ's header is
  // judged with `screen` against ArrivalThreshold(screen) as of that call, and must announce
  // `steps` and `tokens`. Others: null (the session keeps the Δ whole).
  virtual std::shared_ptr<RoundSum> SinkFor(uint64_t round, const std::vector<TensorSpec>& specs,
                                            const diloco::DeltaScreen& screen, uint32_t steps, uint64_t tokens) = 0;
  // A Δ already (partly) in round `round`'s sink must not count: Seal reports the round
  // tainted. No-op for rules without sinks.
  virtual void Taint(uint64_t round) = 0;
  // No more chunks for round `round` (it closes). Call once per closing, before Add / Finish.
  virtual RoundSeal Seal(uint64_t round) = 0;
  // A whole Δ of round `round` (buffered rules). FailedPrecondition for a streamable rule.
  virtual absl::Status Add(uint64_t round, Contribution contribution) = 0;
  // The combined Δ of round `round`'s admitted Δs. InvalidArgument when it has none (or they
  // do not match each other); Internal for a streamed round that has no sink.
  virtual absl::StatusOr<Combined> Finish(uint64_t round) = 0;
  // Forgets round `round` (rolled back: a redone round starts afresh).
  virtual void Drop(uint64_t round) = 0;
  // Forgets every round up to and including `round` (closed).
  virtual void DropThrough(uint64_t round) = 0;
};

// The rules, for ChooseAggregator and tests.
std::unique_ptr<Aggregator> NewWeightedAverageAggregator();
// `fraction` in (0, 0.5): dropped at each end of every coordinate.
std::unique_ptr<Aggregator> NewTrimmedMeanAggregator(double fraction);
std::unique_ptr<Aggregator> NewStreamingSumAggregator();

// The job's rule, chosen once: a trimmed mean when diloco.screening.trimmed_mean > 0; else
// the streaming sum when diloco.aggregation streams (auto: when `workers` Δs of
// `delta_elements` values pass kDeltaStagingBytes, pcp/diloco/delta_sum.h); else the weighted
// average.
std::unique_ptr<Aggregator> ChooseAggregator(const JobConfig& config, int64_t delta_elements);

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_AGGREGATOR_H_
