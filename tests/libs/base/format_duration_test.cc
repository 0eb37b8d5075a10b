#include "pcp/base/format_duration.h"

#include <limits>

#include "gtest/gtest.h"

namespace pcp {
namespace {

TEST(FormatDurationTest, TwoPartsAtMost) {
  EXPECT_EQ(FormatDuration(0.25), "250ms");
  EXPECT_EQ(FormatDuration(0.0), "0ms");
  EXPECT_EQ(FormatDuration(1.5), "1.5s");
  EXPECT_EQ(FormatDuration(42.4), "42s");
  EXPECT_EQ(FormatDuration(192), "3m12s");
  EXPECT_EQ(FormatDuration(2 * 3600 + 5 * 60), "2h05m");
  EXPECT_EQ(FormatDuration(3 * 86400 + 4 * 3600), "3d04h");
}

TEST(FormatDurationTest, NegativeOrNotFiniteIsADash) {
  EXPECT_EQ(FormatDuration(-1), "-");
  EXPECT_EQ(FormatDuration(std::numeric_limits<double>::infinity()), "-");
  EXPECT_EQ(FormatDuration(std::numeric_limits<double>::quiet_NaN()), "-");
}

}  // namespace
}  // namespace pcp
