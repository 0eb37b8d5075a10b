#include "pcp/diloco/late_join.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace pcp::diloco {
namespace {

TEST(WorthJoiningLateTest, TwoWorkersJoinAnyRoundStillInProgress) {
  // One other worker: its idle time (the delay) is always below the joiner's round of work.
  EXPECT_TRUE(WorthJoiningLate({.elapsed_s = 0.5, .round_s = 10, .others = 1, .until_deadline_s = 600}));
  EXPECT_TRUE(WorthJoiningLate({.elapsed_s = 9.9, .round_s = 10, .others = 1, .until_deadline_s = 600}));
  // The round has run past the estimate: the others are (about) done; a whole extra round of
  // waiting for one Δ is not worth it.
  EXPECT_FALSE(WorthJoiningLate({.elapsed_s = 12, .round_s = 10, .others = 1, .until_deadline_s = 600}));
}

TEST(WorthJoiningLateTest, MoreWorkersLeaveLessTimeToJoin) {
  // 7 others: worth it while 7 × delay < T, i.e. within T/7 of the start.
  EXPECT_TRUE(WorthJoiningLate({.elapsed_s = 1.4, .round_s = 10, .others = 7, .until_deadline_s = 600}));
  EXPECT_FALSE(WorthJoiningLate({.elapsed_s = 1.5, .round_s = 10, .others = 7, .until_deadline_s = 600}));
  // Nobody else in the round: always (before the deadline).
  EXPECT_TRUE(WorthJoiningLate({.elapsed_s = 50, .round_s = 10, .others = 0, .until_deadline_s = 600}));
}

TEST(WorthJoiningLateTest, NeverWithoutAnEstimateOrPastTheDeadline) {
  EXPECT_FALSE(WorthJoiningLate({.elapsed_s = 0.1, .round_s = std::nullopt, .others = 1, .until_deadline_s = 600}));
  EXPECT_FALSE(WorthJoiningLate({.elapsed_s = 0.1, .round_s = 0, .others = 0, .until_deadline_s = 600}));
  EXPECT_FALSE(WorthJoiningLate({.elapsed_s = 0.1, .round_s = 10, .others = 1, .until_deadline_s = 9}));
  EXPECT_FALSE(WorthJoiningLate({.elapsed_s = 0.1, .round_s = std::nan(""), .others = 1, .until_deadline_s = 600}));
}

TEST(RoundTimeEstimateTest, MedianOfTheLastSamples) {
  RoundTimeEstimate e;
  EXPECT_FALSE(e.Get().has_value());
  e.Add(0);  // ignored, as are non-finite and negative times
  e.Add(-1);
  e.Add(std::numeric_limits<double>::infinity());
  EXPECT_FALSE(e.Get().has_value());
  e.Add(100);
  e.Add(2);
  e.Add(3);
  EXPECT_EQ(*e.Get(), 3);
  for (size_t i = 0; i < RoundTimeEstimate::kRoundTimeSamples; ++i) e.Add(5);
  EXPECT_EQ(*e.Get(), 5);  // the early samples have aged out
}

}  // namespace
}  // namespace pcp::diloco
