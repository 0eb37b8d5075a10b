#include "pcp/base/backoff.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"

namespace pcp {

absl::Status ValidateBackoffOptions(const BackoffOptions& options, absl::string_view what) {
  if (options.initial <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ".initial_ms: must be > 0, got ", absl::FormatDuration(options.initial)));
  }
  if (!(options.multiplier >= 1.0) || !std::isfinite(options.multiplier)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ".multiplier: must be a finite number >= 1, got ", options.multiplier));
  }
  if (options.max < options.initial) {
    return absl::InvalidArgumentError(absl::StrCat(what, ".max_ms: must be >= initial (",
                                                   absl::FormatDuration(options.initial), "), got ",
                                                   absl::FormatDuration(options.max)));
  }
  if (!(options.jitter >= 0.0 && options.jitter < 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ".jitter: must be in [0, 1), got ", options.jitter));
  }
  return absl::OkStatus();
}

Backoff::Backoff(BackoffOptions options, uint64_t seed)
    : options_(options), rng_(seed != 0 ? seed : std::random_device{}()) {}

absl::Duration Backoff::Next() {
  // Computed in double seconds so a long run of attempts cannot overflow.
  const double initial_s = absl::ToDoubleSeconds(options_.initial);
  const double max_s = absl::ToDoubleSeconds(options_.max);
  double base_s = initial_s * std::pow(options_.multiplier, attempt_);
  if (!std::isfinite(base_s) || base_s > max_s) base_s = max_s;
  if (attempt_ < 1000) ++attempt_;
  double factor = 1.0;
  if (options_.jitter > 0) {
    std::uniform_real_distribution<double> spread(1.0 - options_.jitter, 1.0 + options_.jitter);
    factor = spread(rng_);
  }
  return absl::Seconds(std::min(base_s * factor, max_s));
}

}  // namespace pcp
