#include "pcp/diloco/trimmed_mean.h"

#include <vector>

#include "gtest/gtest.h"

namespace pcp::diloco {
namespace {

using Spans = std::vector<absl::Span<const float>>;

TEST(TrimmedMeanTest, TrimCount) {
  EXPECT_EQ(TrimCount(3, 0.2), 0u);
  EXPECT_EQ(TrimCount(5, 0.2), 1u);
  EXPECT_EQ(TrimCount(32, 0.1), 3u);
  EXPECT_EQ(TrimCount(4, 0.49), 1u);
  EXPECT_EQ(TrimCount(1, 0.49), 0u);
}

TEST(TrimmedMeanTest, DropsTheExtremesOfEachCoordinate) {
  std::vector<float> a = {1, -1000}, b = {2, 5}, c = {3, 6}, d = {4, 7}, e = {1000, 8};
  std::vector<float> out(2);
  ASSERT_TRUE(TrimmedMean(Spans{a, b, c, d, e}, {1, 1, 1, 1, 1}, 0.2, absl::MakeSpan(out)).ok());
  EXPECT_FLOAT_EQ(out[0], 3);  // mean of 2, 3, 4
  EXPECT_FLOAT_EQ(out[1], 6);  // mean of 5, 6, 7
}

TEST(TrimmedMeanTest, WeightsTheKeptValues) {
  std::vector<float> a = {0}, b = {1}, c = {4}, d = {100};
  std::vector<float> out(1);
  ASSERT_TRUE(TrimmedMean(Spans{a, b, c, d}, {1, 3, 1, 1}, 0.25, absl::MakeSpan(out)).ok());
  EXPECT_FLOAT_EQ(out[0], (3 * 1 + 4) / 4.0f);
}

TEST(TrimmedMeanTest, ZeroFractionIsTheWeightedAverage) {
  std::vector<float> a = {1, 10}, b = {3, 20};
  std::vector<float> out(2);
  ASSERT_TRUE(TrimmedMean(Spans{a, b}, {3, 1}, 0.0, absl::MakeSpan(out)).ok());
  EXPECT_FLOAT_EQ(out[0], 1.5);
  EXPECT_FLOAT_EQ(out[1], 12.5);
}

TEST(TrimmedMeanTest, BadInput) {
  std::vector<float> a = {1}, b = {1, 2}, out(1);
  EXPECT_EQ(TrimmedMean(Spans{}, {}, 0.1, absl::MakeSpan(out)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TrimmedMean(Spans{a, b}, {1, 1}, 0.1, absl::MakeSpan(out)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TrimmedMean(Spans{a}, {0}, 0.1, absl::MakeSpan(out)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TrimmedMean(Spans{a}, {1}, 0.5, absl::MakeSpan(out)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TrimmedMean(Spans{a}, {1, 1}, 0.1, absl::MakeSpan(out)).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pcp::diloco
