#include "pcp/diloco/streaming.h"

#include <vector>

#include "gtest/gtest.h"

namespace pcp::diloco {
namespace {

TEST(FragmentPlanTest, BalancedContiguousRangesCoverEveryElementOnce) {
  // Sizes like a small GPT's: an embedding, then layers of uneven sizes.
  const std::vector<int64_t> sizes = {8320, 32, 3072, 1024, 4096, 4096, 32, 7};
  int64_t n = 0;
  for (int64_t s : sizes) n += s;
  for (int64_t P : {1, 2, 3, 4, 7}) {
    absl::StatusOr<FragmentPlan> plan = FragmentPlan::Create(sizes, P);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_EQ(plan->fragments(), P);
    std::vector<int> seen(static_cast<size_t>(n), 0);
    std::vector<int64_t> starts = {0};
    for (int64_t s : sizes) starts.push_back(starts.back() + s);
    int64_t total = 0;
    for (int64_t p = 0; p < P; ++p) {
      // Every sync carries at most ceil(n / P) values, at least floor(n / P).
      EXPECT_LE(plan->elements(p), (n + P - 1) / P) << "P=" << P << " p=" << p;
      EXPECT_GE(plan->elements(p), n / P) << "P=" << P << " p=" << p;
      for (const Segment& s : plan->segments(p)) {
        ASSERT_LT(s.tensor, sizes.size());
        ASSERT_GE(s.begin, 0);
        ASSERT_LE(s.end, sizes[s.tensor]);
        ASSERT_LT(s.begin, s.end);
        for (int64_t k = s.begin; k < s.end; ++k) ++seen[static_cast<size_t>(starts[s.tensor] + k)];
      }
      total += plan->elements(p);
    }
    EXPECT_EQ(total, n);
    for (int v : seen) ASSERT_EQ(v, 1);
  }
}

TEST(FragmentPlanTest, RoundsCycleThroughTheFragments) {
  absl::StatusOr<FragmentPlan> plan = FragmentPlan::Create({10, 10, 10, 10}, 4);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->FragmentOfRound(1), 0);
  EXPECT_EQ(plan->FragmentOfRound(4), 3);
  EXPECT_EQ(plan->FragmentOfRound(5), 0);
  EXPECT_EQ(plan->FragmentOfRound(11), 2);
}

TEST(FragmentPlanTest, SegmentNamesSayWhichPartOfATensor) {
  absl::StatusOr<FragmentPlan> plan = FragmentPlan::Create({6, 4}, 2);  // [0,5) and [5,10)
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->segments(0).size(), 1u);
  EXPECT_EQ(plan->segments(0)[0], (Segment{0, 0, 5}));
  EXPECT_EQ(plan->SegmentName("wte", plan->segments(0)[0]), "wte[0:5]");
  ASSERT_EQ(plan->segments(1).size(), 2u);
  EXPECT_EQ(plan->SegmentName("wte", plan->segments(1)[0]), "wte[5:6]");
  EXPECT_EQ(plan->SegmentName("ln.w", plan->segments(1)[1]), "ln.w");  // whole
}

TEST(FragmentPlanTest, BadCountsAreErrors) {
  EXPECT_EQ(FragmentPlan::Create({4, 4}, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FragmentPlan::Create({4, 4}, 9).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FragmentPlan::Create({4, -1}, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(FragmentPlan::Create({4, 0, 4}, 8).ok());  // an empty tensor is skipped
}

TEST(MixIntoTest, AlphaWeighsTheLocalValues) {
  std::vector<float> local = {1, 2, 4};
  const std::vector<float> global = {3, 2, 0};
  MixInto(absl::MakeSpan(local), global, 0.5f);
  EXPECT_EQ(local, (std::vector<float>{2, 2, 2}));
  MixInto(absl::MakeSpan(local), global, 0.0f);  // replace
  EXPECT_EQ(local, global);
}

TEST(StreamingOptionsTest, OffWithOneFragmentAndNoOverlap) {
  EXPECT_FALSE(StreamingOptions{}.enabled());
  EXPECT_TRUE((StreamingOptions{.fragments = 4}).enabled());
  EXPECT_TRUE((StreamingOptions{.fragments = 1, .overlap_steps = 2}).enabled());
}

}  // namespace
}  // namespace pcp::diloco
