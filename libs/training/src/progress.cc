#include "pcp/training/progress.h"

#include <algorithm>
#include <cmath>

#include "pcp/base/format_duration.h"

namespace pcp {

void ProgressMeter::Advance(double ms) {
  // A short warm-up uses the plain mean, then an EMA that follows speed changes (evals,
  // other load on the machine) within ~20 steps.
  ++done_;
  avg_ms_ = done_ <= 5 ? avg_ms_ + (ms - avg_ms_) / static_cast<double>(done_) : 0.95 * avg_ms_ + 0.05 * ms;
}

double ProgressMeter::EtaSeconds() const { return std::max<int64_t>(total_ - done_, 0) * avg_ms_ / 1000.0; }

std::string ProgressMeter::Eta() const { return FormatDuration(EtaSeconds()); }

}  // namespace pcp
