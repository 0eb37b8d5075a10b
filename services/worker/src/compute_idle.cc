#include "compute_idle.h"

#include <algorithm>

namespace pcp::worker {

std::optional<double> ComputeIdle::MarkComputeStart(Clock::time_point now) {
  if (!last_end_) return std::nullopt;
  const double seconds = std::chrono::duration<double>(now - *last_end_).count();
  last_end_.reset();
  return std::max(0.0, seconds);
}

}  // namespace pcp::worker
