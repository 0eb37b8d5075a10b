#include "pcp/rpc/tensor_fragments.h"

#include <numeric>
#include <vector>

#include "gtest/gtest.h"

namespace pcp {
namespace {

Tensor Iota(Shape shape, float start) {
  Tensor t(DType::kF32, std::move(shape));
  std::iota(t.data<float>(), t.data<float>() + t.num_elements(), start);
  return t;
}

TEST(TensorFragmentsTest, GatherThenScatterRoundTripsAndCopiesOnWrite) {
  const std::vector<TensorSpec> specs = {{"wte", DType::kF32, {3, 4}},
                                         {"ln", DType::kF32, {4}},
                                         {"w", DType::kF32, {2, 2}}};
  std::vector<Tensor> theta = {Iota({3, 4}, 0), Iota({4}, 100), Iota({2, 2}, 200)};
  absl::StatusOr<diloco::FragmentPlan> plan = diloco::FragmentPlan::Create({12, 4, 4}, 3);  // 6, 7, 7 values
  ASSERT_TRUE(plan.ok());
  const std::vector<TensorSpec> f1 = FragmentSpecs(*plan, 1, specs);
  ASSERT_EQ(f1.size(), 2u);
  EXPECT_EQ(f1[0].name, "wte[6:12]");
  EXPECT_EQ(f1[0].shape, (Shape{6}));
  EXPECT_EQ(f1[1].name, "ln[0:1]");

  std::vector<Tensor> piece = GatherFragment(*plan, 1, theta);
  ASSERT_EQ(piece.size(), 2u);
  EXPECT_EQ(piece[0].data<float>()[0], 6.0f);
  EXPECT_EQ(piece[1].data<float>()[0], 100.0f);
  for (Tensor& t : piece) {
    for (int64_t k = 0; k < t.num_elements(); ++k) t.data<float>()[k] = -1;
  }
  const std::vector<Tensor> before = theta;  // shares storage with theta
  ASSERT_TRUE(ScatterFragment(*plan, 1, piece, &theta).ok());
  // Written: elements 6..11 of wte and 0 of ln; the rest as it was.
  for (int64_t k = 0; k < 12; ++k) EXPECT_EQ(theta[0].data<float>()[k], k < 6 ? k : -1.0f) << k;
  EXPECT_EQ(theta[1].data<float>()[0], -1.0f);
  EXPECT_EQ(theta[1].data<float>()[1], 101.0f);
  // The old storage (a chunk stream may still send it) is untouched; the untouched tensor shared.
  EXPECT_EQ(before[0].data<float>()[11], 11.0f);
  EXPECT_EQ(before[1].data<float>()[0], 100.0f);
  EXPECT_EQ(theta[2].data<float>(), before[2].data<float>());
}

TEST(TensorFragmentsTest, PiecesThatDoNotFitAreInvalidArgument) {
  std::vector<Tensor> theta = {Iota({8}, 0)};
  absl::StatusOr<diloco::FragmentPlan> plan = diloco::FragmentPlan::Create({8}, 2);
  ASSERT_TRUE(plan.ok());
  std::vector<Tensor> wrong = {Iota({3}, 0)};
  EXPECT_EQ(ScatterFragment(*plan, 0, wrong, &theta).code(), absl::StatusCode::kInvalidArgument);
  std::vector<Tensor> two = {Iota({4}, 0), Iota({4}, 0)};
  EXPECT_EQ(ScatterFragment(*plan, 0, two, &theta).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(theta[0].data<float>()[0], 0.0f);
}

}  // namespace
}  // namespace pcp
