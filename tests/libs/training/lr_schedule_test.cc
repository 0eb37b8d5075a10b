#include "pcp/training/lr_schedule.h"

#include <cmath>
#include <cstdint>
#include <numbers>

#include "gtest/gtest.h"

namespace pcp {
namespace {

// nanoGPT's shakespeare_char settings.
constexpr LrSchedule kNanoGptCpu{
    .kind = LrScheduleKind::kCosine, .lr = 1e-3, .min_lr = 1e-4, .warmup_iters = 100, .lr_decay_iters = 2000};

TEST(LrScheduleTest, NanoGptCosineAtKnownSteps) {
  // Expected values written out from nanoGPT's get_lr formulas.
  EXPECT_DOUBLE_EQ(kNanoGptCpu.At(0), 1e-3 * 1 / 101);
  EXPECT_DOUBLE_EQ(kNanoGptCpu.At(50), 1e-3 * 51 / 101);
  EXPECT_DOUBLE_EQ(kNanoGptCpu.At(99), 1e-3 * 100 / 101);
  EXPECT_DOUBLE_EQ(kNanoGptCpu.At(100), 1e-3);  // decay ratio 0: the peak
  const double coeff = 0.5 * (1.0 + std::cos(std::numbers::pi * 900.0 / 1900.0));
  EXPECT_DOUBLE_EQ(kNanoGptCpu.At(1000), 1e-4 + coeff * (1e-3 - 1e-4));
  EXPECT_NEAR(kNanoGptCpu.At(1000), 0.0005871607054625496, 1e-15);  // Python's value
  EXPECT_DOUBLE_EQ(kNanoGptCpu.At(1050), 1e-4 + 0.5 * 9e-4);        // halfway: cos = 0
  EXPECT_DOUBLE_EQ(kNanoGptCpu.At(2000), 1e-4);
  EXPECT_DOUBLE_EQ(kNanoGptCpu.At(2500), 1e-4);
}

TEST(LrScheduleTest, MonotoneUpThenDown) {
  for (int64_t it = 1; it < 100; ++it) EXPECT_GT(kNanoGptCpu.At(it), kNanoGptCpu.At(it - 1));
  for (int64_t it = 101; it <= 2000; ++it) EXPECT_LT(kNanoGptCpu.At(it), kNanoGptCpu.At(it - 1));
}

TEST(LrScheduleTest, ConstantAndDegenerateSchedules) {
  LrSchedule constant = kNanoGptCpu;
  constant.kind = LrScheduleKind::kConstant;
  for (int64_t it : {0, 50, 100, 5000}) EXPECT_EQ(constant.At(it), 1e-3);

  LrSchedule no_decay = kNanoGptCpu;
  no_decay.lr_decay_iters = 100;  // == warmup_iters: nanoGPT would divide by zero
  EXPECT_DOUBLE_EQ(no_decay.At(99), 1e-3 * 100 / 101);
  EXPECT_DOUBLE_EQ(no_decay.At(100), 1e-4);
  EXPECT_DOUBLE_EQ(no_decay.At(101), 1e-4);

  LrSchedule no_warmup = kNanoGptCpu;
  no_warmup.warmup_iters = 0;
  EXPECT_DOUBLE_EQ(no_warmup.At(0), 1e-3);
  EXPECT_EQ(LrScheduleName(LrScheduleKind::kConstant), "constant");
}

}  // namespace
}  // namespace pcp
