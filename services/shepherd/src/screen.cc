#include "screen.h"

#include <cmath>
#include <limits>

namespace pcp::shepherd {

double MeasureDeltaNorm(const std::vector<Tensor>& delta, double mean_loss) {
  if (!std::isfinite(mean_loss)) return std::numeric_limits<double>::infinity();
  diloco::NormAccumulator acc;
  for (const Tensor& t : delta) acc.Add(absl::MakeConstSpan(t.data<float>(), static_cast<size_t>(t.num_elements())));
  return acc.norm();
}

diloco::ScreenVerdict Screen(const diloco::DeltaScreen& screen, const diloco::ScreenThreshold& threshold,
                             const DeltaNorm& norm) {
  if (norm.source == DeltaNorm::Source::kBrokeDeclaration) {
    // Its chunks up to the one that broke the declaration may be in the round's sum already:
    // the caller redoes the round without it (pcp/diloco/delta_sum.h).
    return diloco::ScreenVerdict{.action = diloco::ScreenVerdict::kReject,
                                 .reason = diloco::RefusalReason::kDeclaredNorm,
                                 .norm = norm.value,
                                 .threshold = threshold.value};
  }
  return screen.Judge(norm.value, threshold);
}

}  // namespace pcp::shepherd
