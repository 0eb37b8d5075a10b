// Δ screening: a worker cannot wreck the model. Each round every Δ's L2 norm is compared with
// a threshold; a Δ above it is refused: rejected (left out of the round) or clipped (scaled
// down to the threshold), as the job says. A worker refused `quarantine_after` times in a job
// is quarantined for that job.
//
// The threshold of a round is the smaller of
//   - norm_k × the median of the round's finite Δ norms, when the round has 3 or more of them
//     (the median of ≥ 3 cannot be moved by one attacker), else norm_k × the running median
//     of past rounds (the median of the per-round medians of accepted norms, last
//     kScreenHistoryRounds rounds); in the first rounds of a job with fewer than 3 workers
//     there is no history yet and this bound does not apply;
//   - max_norm, the absolute cap (0: none).
// A Δ that is not finite is always rejected (clipping cannot repair it).
//
// Δs of different lengths (time-budgeted rounds and asynchronous tasks run the steps that fit)
// are judged alike: a screen made with `judged_at_steps` S judges a Δ of s steps on its norm
// scaled to S steps, norm × S / s (JudgedNorm), everywhere: the round's median, the history,
// the cap and the clip. AdamW bounds each step's update, so an honest Δ's norm grows at most
// linearly with its steps; unscaled, a first round of one slow step would leave a history that
// refuses every longer Δ after it. S = 0 (fixed-length rounds) judges norms as they are.
//
//   DeltaScreen screen(job.diloco.screening, judged_at_steps);  // 0 unless Δ lengths vary
//   NormAccumulator acc;  for (chunk : delta) acc.Add(chunk);     // chunk by chunk
//   double norm = screen.JudgedNorm(acc.norm(), steps);           // what the screen judges
//   std::vector<double> norms = {...every finite judged norm of the round...};
//   ScreenThreshold t = screen.RoundThreshold(norms);
//   ScreenVerdict v = screen.Judge(norm, t);
//   if (v.action == ScreenVerdict::kClip) Scale(delta, v.scale);   // kReject: leave it out
//   screen.EndRound(accepted_norms);                                // the history moves on
//   RefusalLedger ledger(options.quarantine_after);
//   if (ledger.Refuse("node-2")) { ...node-2 is now quarantined... }
//
// Streaming aggregation (diloco.aggregation, pcp/diloco/delta_sum.h) judges each Δ as its
// header arrives, on the norm its sender declares (JudgedNorm at the header's steps), against
// RoundThreshold({}) (past rounds' running median and the cap, fixed when the round's results
// are first expected): the round's own median is not known while Δs are still arriving. A
// sender whose values break its declaration is refused with kDeclaredNorm (and the round
// redone if its chunks were added).
// The trimmed mean needs every Δ of a coordinate at once and does not stream.
#ifndef PCP_DILOCO_SCREENING_H_
#define PCP_DILOCO_SCREENING_H_

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "pcp/base/sum_of_squares.h"

namespace pcp::diloco {

enum class ScreenAction { kReject, kClip };
// The one place the actions are spelled (job files, logs, events).
inline constexpr std::pair<ScreenAction, absl::string_view> kScreenActionNames[] = {
    {ScreenAction::kReject, "reject"},
    {ScreenAction::kClip, "clip"},
};

// A job's screening settings (job YAML section diloco.screening).
struct ScreeningOptions {
  double norm_k = 5.0;    // refuse above norm_k × the median norm; >= 1
  double max_norm = 1e4;  // absolute cap on a Δ's L2 norm; 0 = no cap
  ScreenAction action = ScreenAction::kReject;
  int64_t quarantine_after = 3;  // refusals before a worker is quarantined; 0 = never
  int64_t max_rollbacks = 3;     // consecutive rolled-back rounds before the job fails; >= 1
  double trimmed_mean = 0.0;     // coordinate-wise trimmed fraction at each end, [0, 0.5); 0 = off
  bool operator==(const ScreeningOptions&) const = default;
};

// Why a Δ was refused.
// kDeclaredNorm: a streamed Δ's values broke the norm its sender declared (pcp/diloco/delta_sum.h).
enum class RefusalReason { kNone, kNonFinite, kDeclaredNorm, kNorm, kMaxNorm };
// Names as in logs, events and the label values of pcp_shepherd_deltas_refused_total{reason}.
inline constexpr std::pair<RefusalReason, absl::string_view> kRefusalReasonNames[] = {
    {RefusalReason::kNone, "none"},
    {RefusalReason::kNonFinite, "non_finite"},
    {RefusalReason::kDeclaredNorm, "declared_norm"},
    {RefusalReason::kNorm, "norm"},
    {RefusalReason::kMaxNorm, "max_norm"},
};
absl::string_view RefusalReasonName(RefusalReason reason);
absl::string_view ScreenActionName(ScreenAction action);

// How many past rounds the running median looks back.
inline constexpr size_t kScreenHistoryRounds = 8;

// Σ v² of `values` in double, sixteen partial sums (pcp/base/sum_of_squares.h, where it lives so
// that libs/codec and libs/rpc share the one copy); NaN or +inf when a value is NaN or ±inf.
using ::pcp::SumOfSquares;

// L2 norm of a Δ fed in pieces (SumOfSquares per piece). norm() is +inf once any element was
// NaN or ±inf.
class NormAccumulator {
 public:
  void Add(absl::Span<const float> chunk);
  double norm() const;
  bool finite() const { return finite_; }

 private:
  double sum_squares_ = 0;
  bool finite_ = true;
};

// The median of `values` (the mean of the two middle ones for an even count); nullopt if empty.
std::optional<double> Median(absl::Span<const double> values);

// The bound a round's Δ norms are judged against.
struct ScreenThreshold {
  double value = 0;  // +inf: no bound applies
  // Which bound is the smaller one: kNorm (norm_k × a median) or kMaxNorm (the cap); kNone
  // when none applies.
  RefusalReason reason = RefusalReason::kNone;
  // The median it is based on and where it came from ("round", "past rounds"; "" = none).
  double median = 0;
  absl::string_view basis;
};

struct ScreenVerdict {
  enum Action { kAccept, kClip, kReject };
  Action action = kAccept;
  RefusalReason reason = RefusalReason::kNone;
  double norm = 0;
  double threshold = 0;
  double scale = 1;  // kClip: threshold / norm, the factor that brings the Δ to the threshold
};

class DeltaScreen {
 public:
  // `judged_at_steps`: the steps every Δ's norm is scaled to (see above); 0: none.
  explicit DeltaScreen(const ScreeningOptions& options, uint64_t judged_at_steps = 0)
      : options_(options), judged_at_steps_(judged_at_steps) {}

  // The norm this screen judges a Δ of `steps` inner steps and L2 norm `norm` on: norm ×
  // judged_at_steps / steps; `norm` itself when either is 0.
  double JudgedNorm(double norm, uint64_t steps) const;
  uint64_t judged_at_steps() const { return judged_at_steps_; }

  // The threshold for a round whose finite Δ norms are `round_norms` (pass {} to judge each Δ
  // as it ends, as streaming aggregation must: then only past rounds and the cap count).
  ScreenThreshold RoundThreshold(absl::Span<const double> round_norms) const;
  // The verdict for one Δ of norm `norm` (+inf or NaN: not finite, always rejected).
  ScreenVerdict Judge(double norm, const ScreenThreshold& threshold) const;
  // Closes a round: the median of the norms of the Δs accepted unchanged joins the history
  // (a round with none leaves it as it was).
  void EndRound(absl::Span<const double> accepted_norms);

  // The running median of past rounds; nullopt before the first round with an accepted Δ.
  std::optional<double> PastMedian() const;
  const ScreeningOptions& options() const { return options_; }

  // The per-round medians behind PastMedian, oldest first (a checkpoint keeps them, so that a
  // resumed job judges its next round as the uninterrupted job would have).
  const std::deque<double>& history() const { return history_; }
  // Replaces the history with `medians` (oldest first; only the newest kScreenHistoryRounds
  // are kept). InvalidArgument for a median that is not finite or is negative.
  absl::Status RestoreHistory(absl::Span<const double> medians);

 private:
  ScreeningOptions options_;
  uint64_t judged_at_steps_ = 0;
  std::deque<double> history_;  // per-round medians, oldest first
};

// Refusals per worker in one job, and who is quarantined.
class RefusalLedger {
 public:
  explicit RefusalLedger(int64_t quarantine_after) : quarantine_after_(quarantine_after) {}
  // Counts one refusal of `worker`; true when this one quarantines it.
  bool Refuse(const std::string& worker);
  int64_t refusals(const std::string& worker) const;
  bool quarantined(const std::string& worker) const;
  // Every worker refused at least once, with its count, by id.
  const std::map<std::string, int64_t>& all() const { return refusals_; }
  // Sets `worker`'s count to at least `refusals` (a restarted shepherd takes back the counts
  // it had persisted; a count is never lowered, so a quarantine is never lifted this way).
  void Restore(const std::string& worker, int64_t refusals);

 private:
  int64_t quarantine_after_;
  std::map<std::string, int64_t> refusals_;
};

// True when every value is finite.
bool AllFinite(absl::Span<const float> values);

}  // namespace pcp::diloco

#endif  // PCP_DILOCO_SCREENING_H_
