#include "screen.h"

namespace pcp::shepherd {

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
