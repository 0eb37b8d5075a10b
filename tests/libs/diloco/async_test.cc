#include "pcp/diloco/async.h"

#include "gtest/gtest.h"

namespace pcp::diloco {
namespace {

TEST(StalenessScale, InverseDividesByOnePlusStaleness) {
  EXPECT_DOUBLE_EQ(StalenessScale(StalenessRule::kInverse, 0), 1.0);
  EXPECT_DOUBLE_EQ(StalenessScale(StalenessRule::kInverse, 1), 0.5);
  EXPECT_DOUBLE_EQ(StalenessScale(StalenessRule::kInverse, 3), 0.25);
}

TEST(StalenessScale, NoneKeepsEveryDelta) {
  EXPECT_DOUBLE_EQ(StalenessScale(StalenessRule::kNone, 0), 1.0);
  EXPECT_DOUBLE_EQ(StalenessScale(StalenessRule::kNone, 9), 1.0);
}

}  // namespace
}  // namespace pcp::diloco
