#include "pcp/training/progress.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace pcp {

void ProgressMeter::Advance(double ms) {
  // A short warm-up uses the plain mean, then an EMA that follows speed changes (evals,
  // other load on the machine) within ~20 steps.
  ++done_;
  avg_ms_ = done_ <= 5 ? avg_ms_ + (ms - avg_ms_) / static_cast<double>(done_) : 0.95 * avg_ms_ + 0.05 * ms;
}

double ProgressMeter::EtaSeconds() const {
  return std::max<int64_t>(total_ - done_, 0) * avg_ms_ / 1000.0;
}

std::string ProgressMeter::Eta() const { return FormatDuration(EtaSeconds()); }

std::string FormatDuration(double seconds) {
  int64_t s = static_cast<int64_t>(std::llround(std::max(seconds, 0.0)));
  if (s >= 3600) return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
  if (s >= 60) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%ds", s);
}

}  // namespace pcp
