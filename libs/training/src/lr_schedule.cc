#include "pcp/training/lr_schedule.h"

#include <cmath>
#include <numbers>

#include "pcp/base/enum_names.h"

namespace pcp {

absl::string_view LrScheduleName(LrScheduleKind kind) { return NameOf(kLrScheduleNames, kind); }

double LrSchedule::At(int64_t it) const {
  if (kind == LrScheduleKind::kConstant) return lr;
  if (it < warmup_iters) {
    return lr * static_cast<double>(it + 1) / static_cast<double>(warmup_iters + 1);
  }
  if (it > lr_decay_iters) return min_lr;
  double ratio = 1.0;
  if (lr_decay_iters > warmup_iters) {
    ratio = static_cast<double>(it - warmup_iters) / static_cast<double>(lr_decay_iters - warmup_iters);
  }
  const double coeff = 0.5 * (1.0 + std::cos(std::numbers::pi * ratio));
  return min_lr + coeff * (lr - min_lr);
}

}  // namespace pcp
