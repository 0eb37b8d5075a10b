// Private: the one verdict function for a round's Δs. pcp/diloco/screening.h holds the rule
// (thresholds, medians, the history); every path of the round engine asks here, so the
// accept / clip / reject decision is made in one place:
//   - a streamed Δ as its header arrives (worker_session.cc), on the norm it declares;
//   - a buffered Δ that is not finite as it arrives (the round schedules' OnResult);
//   - every buffered Δ as its round closes, against the round's own median too;
//   - a streamed Δ whose chunks broke the norm its header declared (pcp/diloco/delta_sum.h).
// The verdict is applied in one place too: by the round's Aggregator (aggregator.h), which
// leaves a rejected Δ out and scales a clipped one by `verdict.scale`.
//
//   const diloco::ScreenThreshold t = ArrivalThreshold(screen);     // past rounds and the cap
//   diloco::ScreenVerdict v = Screen(screen, t, DeltaNorm::Declared(header.delta_norm()));
//   diloco::ScreenVerdict v = Screen(screen, screen.RoundThreshold(norms), DeltaNorm::Measured(norm));
//   if (Admitted(v)) aggregator.Add(round, {std::move(delta), tokens}, v);
//   if (Refused(v)) ...count the refusal (log, metric, event)...
#ifndef PCP_SHEPHERD_SRC_SCREEN_H_
#define PCP_SHEPHERD_SRC_SCREEN_H_

#include <vector>

#include "pcp/diloco/screening.h"
#include "pcp/tensor/tensor.h"

namespace pcp::shepherd {

// What is known of a Δ's L2 norm when it is judged.
struct DeltaNorm {
  enum class Source {
    kMeasured,          // computed from the Δ's values (buffered aggregation)
    kDeclared,          // announced by its sender before the first chunk (streaming aggregation)
    kBrokeDeclaration,  // a streamed Δ whose values exceeded what its sender declared
  };
  double value = 0;  // +inf or NaN: not finite
  Source source = Source::kMeasured;

  static DeltaNorm Measured(double norm) { return {norm, Source::kMeasured}; }
  static DeltaNorm Declared(double norm) { return {norm, Source::kDeclared}; }
  // The norm is not known (the sum stopped adding at the chunk that broke it): 0.
  static DeltaNorm BrokeDeclaration() { return {0, Source::kBrokeDeclaration}; }
};

// A buffered Δ's L2 norm as it arrives: +inf when its sender's mean loss is not finite (its
// values are not read then).
double MeasureDeltaNorm(const std::vector<Tensor>& delta, double mean_loss);

// The threshold for a Δ judged before its round closes (a streamed Δ's header, a Δ that is not
// finite): past rounds' running median and the cap; the round's own median is not known yet.
inline diloco::ScreenThreshold ArrivalThreshold(const diloco::DeltaScreen& screen) { return screen.RoundThreshold({}); }

// The verdict on one Δ: a sender that broke its declaration is rejected (kDeclaredNorm),
// whatever its norm; otherwise the norm is judged against `threshold` (not finite: rejected).
diloco::ScreenVerdict Screen(const diloco::DeltaScreen& screen, const diloco::ScreenThreshold& threshold,
                             const DeltaNorm& norm);

// The Δ goes into the round (unchanged, or scaled by verdict.scale).
inline bool Admitted(const diloco::ScreenVerdict& v) { return v.action != diloco::ScreenVerdict::kReject; }
// The Δ counts as a refusal of its sender (rejected or clipped).
inline bool Refused(const diloco::ScreenVerdict& v) { return v.action != diloco::ScreenVerdict::kAccept; }

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_SCREEN_H_
