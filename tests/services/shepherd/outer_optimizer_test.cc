// The round engine's math against hand computations: the token-weighted average of the
// workers' Δ, and the outer step as torch.optim.SGD(momentum=μ, nesterov=True) applies it
// with Δ as the gradient.
#include "pcp/shepherd/outer_optimizer.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pcp::shepherd {
namespace {

using ::testing::HasSubstr;

Tensor Vec(std::vector<float> v) { return Tensor::FromVector<float>({static_cast<int64_t>(v.size())}, v); }

TEST(WeightedAverageTest, WeightsByTokens) {
  std::vector<WeightedDelta> deltas = {{{Vec({1, 2}), Vec({10})}, 3.0}, {{Vec({5, -2}), Vec({-10})}, 1.0}};
  absl::StatusOr<std::vector<Tensor>> avg = WeightedAverage(deltas);
  ASSERT_TRUE(avg.ok()) << avg.status();
  // (3*1 + 1*5)/4 = 2, (3*2 + 1*-2)/4 = 1, (3*10 - 10)/4 = 5
  EXPECT_THAT((*avg)[0].ToVector<float>(), ::testing::ElementsAre(2.0f, 1.0f));
  EXPECT_THAT((*avg)[1].ToVector<float>(), ::testing::ElementsAre(5.0f));
}

TEST(WeightedAverageTest, OneResultIsItself) {
  absl::StatusOr<std::vector<Tensor>> avg = WeightedAverage({{{Vec({0.25f, -3})}, 7.0}});
  ASSERT_TRUE(avg.ok());
  EXPECT_THAT((*avg)[0].ToVector<float>(), ::testing::ElementsAre(0.25f, -3.0f));
}

TEST(WeightedAverageTest, RejectsBadInput) {
  EXPECT_EQ(WeightedAverage({}).status().code(), absl::StatusCode::kInvalidArgument);
  absl::Status zero = WeightedAverage({{{Vec({1})}, 0.0}}).status();
  EXPECT_THAT(std::string(zero.message()), HasSubstr("weight must be > 0"));
  absl::Status shape = WeightedAverage({{{Vec({1, 2})}, 1.0}, {{Vec({1, 2, 3})}, 1.0}}).status();
  EXPECT_EQ(shape.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(shape.message()), HasSubstr("expected f32[2], got f32[3]"));
  absl::Status count = WeightedAverage({{{Vec({1})}, 1.0}, {{Vec({1}), Vec({2})}, 1.0}}).status();
  EXPECT_THAT(std::string(count.message()), HasSubstr("2 tensors, expected 1"));
}

TEST(AllFiniteTest, FindsNanAndInf) {
  EXPECT_TRUE(AllFinite({Vec({1, 2})}));
  EXPECT_FALSE(AllFinite({Vec({1, std::numeric_limits<float>::quiet_NaN()})}));
  EXPECT_FALSE(AllFinite({Vec({std::numeric_limits<float>::infinity()})}));
}

// Three steps by hand, lr 0.7, μ 0.9, θ0 = 1, gradients g = 0.5, -0.25, 1:
//   b1 = 0.5                     θ1 = 1 - 0.7 (0.5 + 0.45)        = 0.335
//   b2 = 0.45 - 0.25 = 0.2       θ2 = 0.335 - 0.7 (-0.25 + 0.18)  = 0.384
//   b3 = 0.18 + 1 = 1.18         θ3 = 0.384 - 0.7 (1 + 1.062)     = -1.0594
TEST(OuterOptimizerTest, NesterovMatchesHandComputation) {
  OuterOptimizer outer({.lr = 0.7, .momentum = 0.9, .nesterov = true}, {{"w", DType::kF32, {1}}});
  std::vector<Tensor> theta = {Vec({1})};
  const float grads[] = {0.5f, -0.25f, 1.0f};
  const float want_theta[] = {0.335f, 0.384f, -1.0594f};
  const float want_b[] = {0.5f, 0.2f, 1.18f};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(outer.Step({Vec({grads[i]})}, &theta).ok());
    EXPECT_NEAR(theta[0].data<float>()[0], want_theta[i], 1e-6) << "step " << i;
    EXPECT_NEAR(outer.momentum()[0].data<float>()[0], want_b[i], 1e-6) << "step " << i;
  }
}

TEST(OuterOptimizerTest, PlainMomentumAndPlainSgd) {
  // Plain momentum: θ -= lr b.   b1 = 2, θ1 = 3 - 0.5*2 = 2;  b2 = 1 + 2 = 3, θ2 = 2 - 1.5 = 0.5
  OuterOptimizer heavy({.lr = 0.5, .momentum = 0.5, .nesterov = false}, {{"w", DType::kF32, {1}}});
  std::vector<Tensor> theta = {Vec({3})};
  ASSERT_TRUE(heavy.Step({Vec({2})}, &theta).ok());
  EXPECT_FLOAT_EQ(theta[0].data<float>()[0], 2.0f);
  ASSERT_TRUE(heavy.Step({Vec({2})}, &theta).ok());
  EXPECT_FLOAT_EQ(theta[0].data<float>()[0], 0.5f);
  // μ = 0, lr = 1: θ - Δ = θ_start - (θ_start - θ_end) = θ_end (plain averaging of workers).
  OuterOptimizer sgd({.lr = 1.0, .momentum = 0.0, .nesterov = true}, {{"w", DType::kF32, {2}}});
  std::vector<Tensor> p = {Vec({1, 1})};
  ASSERT_TRUE(sgd.Step({Vec({0.25f, -0.5f})}, &p).ok());
  EXPECT_THAT(p[0].ToVector<float>(), ::testing::ElementsAre(0.75f, 1.5f));
}

TEST(OuterOptimizerTest, MomentumRestoresAndChecksShapes) {
  OuterOptimizer outer({}, {{"a", DType::kF32, {2}}});
  EXPECT_TRUE(outer.SetMomentum({Vec({1, 2})}).ok());
  EXPECT_THAT(outer.momentum()[0].ToVector<float>(), ::testing::ElementsAre(1.0f, 2.0f));
  absl::Status bad = outer.SetMomentum({Vec({1, 2, 3})});
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.message()), HasSubstr("outer momentum 'a'"));
  std::vector<Tensor> theta = {Vec({0, 0})};
  absl::Status wrong = outer.Step({Vec({1})}, &theta);
  EXPECT_THAT(std::string(wrong.message()), HasSubstr("outer gradient 'a': expected f32[2], got f32[1]"));
}

TEST(OuterOptimizerTest, StepIfFiniteMatchesStep) {
  OuterOptimizer a({.lr = 0.7, .momentum = 0.9, .nesterov = true}, {{"w", DType::kF32, {2}}});
  OuterOptimizer b({.lr = 0.7, .momentum = 0.9, .nesterov = true}, {{"w", DType::kF32, {2}}});
  std::vector<Tensor> ta = {Vec({1, 2})}, tb = {Vec({1, 2})};
  for (float g : {0.5f, -0.25f, 1.0f}) {
    ASSERT_TRUE(a.Step({Vec({g, 2 * g})}, &ta).ok());
    absl::StatusOr<bool> stepped = b.StepIfFinite({Vec({g, 2 * g})}, &tb);
    ASSERT_TRUE(stepped.ok() && *stepped);
  }
  EXPECT_EQ(ta[0].ToVector<float>(), tb[0].ToVector<float>());
  EXPECT_EQ(a.momentum()[0].ToVector<float>(), b.momentum()[0].ToVector<float>());
}

TEST(OuterOptimizerTest, StepIfFiniteRollsBackWhenThetaOrMomentumOverflow) {
  OuterOptimizer outer({.lr = 0.7, .momentum = 0.9, .nesterov = true}, {{"w", DType::kF32, {2}}});
  std::vector<Tensor> theta = {Vec({1, 2})};
  ASSERT_TRUE(*outer.StepIfFinite({Vec({0.5f, 0.5f})}, &theta));
  const std::vector<float> theta_before = theta[0].ToVector<float>();
  const std::vector<float> b_before = outer.momentum()[0].ToVector<float>();
  const Tensor storage = theta[0];  // aliases θ's bytes: they must not be written
  // A finite Δ of ±3e38 (what screening without a cap would let through): b = 0.9·b + g is
  // finite, but g + 0.9·b overflows float, so θ would become -inf.
  absl::StatusOr<bool> stepped = outer.StepIfFinite({Vec({3e38f, 1})}, &theta);
  ASSERT_TRUE(stepped.ok()) << stepped.status();
  EXPECT_FALSE(*stepped);
  EXPECT_EQ(theta[0].ToVector<float>(), theta_before);
  EXPECT_EQ(storage.ToVector<float>(), theta_before);
  EXPECT_EQ(outer.momentum()[0].ToVector<float>(), b_before);
  // Momentum itself overflowing (b = 0.9·b + g with g = 3.4e38 twice) is rolled back too.
  std::vector<Tensor> t2 = {Vec({0, 0})};
  OuterOptimizer plain({.lr = 1e-30, .momentum = 0.9, .nesterov = false}, {{"w", DType::kF32, {2}}});
  ASSERT_TRUE(*plain.StepIfFinite({Vec({3.4e38f, 0})}, &t2));
  EXPECT_FALSE(*plain.StepIfFinite({Vec({3.4e38f, 0})}, &t2));
  EXPECT_FLOAT_EQ(plain.momentum()[0].data<float>()[0], 3.4e38f);
  // A NaN gradient is rolled back; a good step afterwards goes through.
  EXPECT_FALSE(*outer.StepIfFinite({Vec({std::nanf(""), 0})}, &theta));
  EXPECT_TRUE(*outer.StepIfFinite({Vec({0.1f, 0.1f})}, &theta));
  // Bad shapes are errors, not rollbacks.
  EXPECT_EQ(outer.StepIfFinite({Vec({1})}, &theta).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(OuterOptimizerTest, StepInPlaceIfFiniteMatchesStepAndReusesTheGradientsBuffers) {
  OuterOptimizer a({.lr = 0.7, .momentum = 0.9, .nesterov = true}, {{"w", DType::kF32, {2}}});
  OuterOptimizer b({.lr = 0.7, .momentum = 0.9, .nesterov = true}, {{"w", DType::kF32, {2}}});
  std::vector<Tensor> ta = {Vec({1, 2})}, tb = {Vec({1, 2})};
  for (float g : {0.5f, -0.25f, 1.0f}) {
    ASSERT_TRUE(a.Step({Vec({g, 2 * g})}, &ta).ok());
    const Tensor before = tb[0];
    std::vector<Tensor> gradient = {Vec({g, 2 * g})};
    const Tensor buffer = gradient[0];
    absl::StatusOr<bool> stepped = b.StepInPlaceIfFinite(std::move(gradient), &tb);
    ASSERT_TRUE(stepped.ok() && *stepped);
    EXPECT_EQ(tb[0].data<float>(), buffer.data<float>());  // θ' lives in the gradient's buffer
    EXPECT_NE(before.data<float>(), tb[0].data<float>());  // and the old θ was not written
  }
  EXPECT_EQ(ta[0].ToVector<float>(), tb[0].ToVector<float>());
  EXPECT_EQ(a.momentum()[0].ToVector<float>(), b.momentum()[0].ToVector<float>());
}

TEST(OuterOptimizerTest, StepInPlaceIfFiniteWritesNothingWhenAResultWouldNotBeFinite) {
  OuterOptimizer outer({.lr = 0.7, .momentum = 0.9, .nesterov = true}, {{"w", DType::kF32, {2}}});
  std::vector<Tensor> theta = {Vec({1, 2})};
  ASSERT_TRUE(*outer.StepInPlaceIfFinite({Vec({0.5f, 0.5f})}, &theta));
  const std::vector<float> theta_before = theta[0].ToVector<float>();
  const std::vector<float> b_before = outer.momentum()[0].ToVector<float>();
  std::vector<Tensor> gradient = {Vec({3e38f, 1})};  // θ would overflow to -inf
  const Tensor buffer = gradient[0];
  absl::StatusOr<bool> stepped = outer.StepInPlaceIfFinite(std::move(gradient), &theta);
  ASSERT_TRUE(stepped.ok()) << stepped.status();
  EXPECT_FALSE(*stepped);
  EXPECT_EQ(theta[0].ToVector<float>(), theta_before);
  EXPECT_EQ(outer.momentum()[0].ToVector<float>(), b_before);
  EXPECT_EQ(buffer.ToVector<float>(), (std::vector<float>{3e38f, 1}));
  EXPECT_FALSE(*outer.StepInPlaceIfFinite({Vec({std::nanf(""), 0})}, &theta));
  EXPECT_EQ(outer.StepInPlaceIfFinite({Vec({1})}, &theta).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TrimmedMeanTest, TensorsTrimPerElementAndCheckLikeTheAverage) {
  std::vector<WeightedDelta> deltas;
  for (float v : {1.0f, 2.0f, 3.0f, 4.0f, 1000.0f}) deltas.push_back({{Vec({v, -v})}, 1.0});
  absl::StatusOr<std::vector<Tensor>> trimmed = TrimmedMean(deltas, 0.2);
  ASSERT_TRUE(trimmed.ok()) << trimmed.status();
  EXPECT_THAT((*trimmed)[0].ToVector<float>(), ::testing::ElementsAre(3.0f, -3.0f));
  EXPECT_EQ(TrimmedMean({}, 0.2).status().code(), absl::StatusCode::kInvalidArgument);
  absl::Status shape = TrimmedMean({{{Vec({1, 2})}, 1.0}, {{Vec({1})}, 1.0}}, 0.2).status();
  EXPECT_THAT(std::string(shape.message()), HasSubstr("expected f32[2], got f32[1]"));
}

}  // namespace
}  // namespace pcp::shepherd
