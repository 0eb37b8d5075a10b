#include "pcp/diloco/late_join.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "pcp/diloco/screening.h"

namespace pcp::diloco {

bool WorthJoiningLate(const LateJoinQuestion& q) {
  if (!q.round_s.has_value() || !(*q.round_s > 0)) return false;
  const double t = *q.round_s;
  if (t > q.until_deadline_s) return false;  // it could not finish in time
  if (q.others == 0) return true;
  const double delay = std::clamp(q.elapsed_s, 0.0, t);
  return static_cast<double>(q.others) * delay < t;
}

void RoundTimeEstimate::Add(double seconds) {
  if (!std::isfinite(seconds) || seconds <= 0) return;
  samples_.push_back(seconds);
  while (samples_.size() > kRoundTimeSamples) samples_.pop_front();
}

std::optional<double> RoundTimeEstimate::Get() const {
  const std::vector<double> s(samples_.begin(), samples_.end());
  return Median(s);
}

}  // namespace pcp::diloco
