// Learning-rate schedules: nanoGPT's get_lr (linear warmup, cosine decay to min_lr) and a
// constant rate (nanoGPT's decay_lr = False).
//
//   LrSchedule s{.kind = LrScheduleKind::kCosine, .lr = 1e-3, .min_lr = 1e-4,
//                .warmup_iters = 100, .lr_decay_iters = 2000};
//   double lr = s.At(step);   // step counts from 0
#ifndef PCP_TRAINING_LR_SCHEDULE_H_
#define PCP_TRAINING_LR_SCHEDULE_H_

#include <cstdint>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pcp {

enum class LrScheduleKind { kCosine, kConstant };
// Every schedule with its name in job files: the one place the names are spelled.
inline constexpr std::pair<LrScheduleKind, absl::string_view> kLrScheduleNames[] = {
    {LrScheduleKind::kCosine, "cosine"},
    {LrScheduleKind::kConstant, "constant"},
};
absl::string_view LrScheduleName(LrScheduleKind kind);

struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::kCosine;
  double lr = 1e-3;               // peak learning rate
  double min_lr = 1e-4;           // cosine: the rate after lr_decay_iters
  int64_t warmup_iters = 100;     // cosine: steps of linear warmup
  int64_t lr_decay_iters = 2000;  // cosine: the step where the decay reaches min_lr

  // The rate at step `it` (0-based):
  //   constant:                      lr
  //   cosine, it < warmup_iters:     lr * (it + 1) / (warmup_iters + 1)
  //   cosine, it > lr_decay_iters:   min_lr
  //   cosine, otherwise:             min_lr + 0.5 * (1 + cos(pi * r)) * (lr - min_lr),
  //                                  r = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
  // (r is taken as 1 when lr_decay_iters <= warmup_iters, where nanoGPT would divide by 0.)
  double At(int64_t it) const;
};

}  // namespace pcp

#endif  // PCP_TRAINING_LR_SCHEDULE_H_
