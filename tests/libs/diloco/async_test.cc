#include "pcp/diloco/async.h"

#include "gtest/gtest.h"

namespace pcp::diloco {
namespace {

TEST(StalenessScale, InverseDividesByOnePlusStaleness) {
  EXPECT_DOUBLE_EQ(StalenessScale(StalenessRule::kInverse, 0, 3), 1.0);
  EXPECT_DOUBLE_EQ(StalenessScale(StalenessRule::kInverse, 1, 3), 0.5);
  EXPECT_DOUBLE_EQ(StalenessScale(StalenessRule::kInverse, 3, 3), 0.25);
}

TEST(StalenessScale, BeyondRoundDiscountsOnlyWhatARoundWouldNotSee) {
  // 3 workers: a round's Δs are up to 2 updates behind one another.
  EXPECT_DOUBLE_EQ(StalenessScale(StalenessRule::kBeyondRound, 0, 3), 1.0);
  EXPECT_DOUBLE_EQ(StalenessScale(StalenessRule::kBeyondRound, 2, 3), 1.0);
  EXPECT_DOUBLE_EQ(StalenessScale(StalenessRule::kBeyondRound, 3, 3), 0.5);
  EXPECT_DOUBLE_EQ(StalenessScale(StalenessRule::kBeyondRound, 7, 3), 1.0 / 6.0);
  EXPECT_DOUBLE_EQ(StalenessScale(StalenessRule::kBeyondRound, 1, 1), 0.5);  // one worker: inverse
}

TEST(StalenessScale, NoneKeepsEveryDelta) {
  EXPECT_DOUBLE_EQ(StalenessScale(StalenessRule::kNone, 0, 3), 1.0);
  EXPECT_DOUBLE_EQ(StalenessScale(StalenessRule::kNone, 9, 3), 1.0);
}

}  // namespace
}  // namespace pcp::diloco
