#include "pcp/worker/reconnect_backoff.h"

#include <algorithm>
#include <cmath>

namespace pcp::worker {

std::chrono::milliseconds ReconnectBackoff::Next() {
  const double base = std::min(static_cast<double>(policy_.initial_ms) * std::pow(policy_.multiplier, attempt_),
                               static_cast<double>(policy_.max_ms));
  ++attempt_;
  std::uniform_real_distribution<double> spread(1.0 - policy_.jitter, 1.0 + policy_.jitter);
  const double ms = std::min(base * spread(rng_), static_cast<double>(policy_.max_ms));
  return std::chrono::milliseconds(static_cast<int64_t>(std::max(1.0, ms)));
}

}  // namespace pcp::worker
