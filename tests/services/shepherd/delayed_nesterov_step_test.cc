// The asynchronous outer step with delayed Nesterov momentum (delayed_nesterov_step.h) against
// the synchronous outer step (OuterOptimizer, itself checked against torch.optim.SGD in
// outer_optimizer_test.cc): a round's worth of Δs in groups ends where the one synchronous step
// on their average does, and between momentum updates θ moves by lr·Δ alone.
#include "delayed_nesterov_step.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/shepherd/outer_optimizer.h"

namespace pcp::shepherd {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::HasSubstr;
using ::testing::Pointwise;

Tensor Vec(std::vector<float> v) { return Tensor::FromVector<float>({static_cast<int64_t>(v.size())}, v); }
std::vector<TensorSpec> Specs() { return {TensorSpec{"w", DType::kF32, {3}}}; }

Combined Group(std::vector<float> delta, double share) {
  Combined c;
  c.delta.push_back(Vec(std::move(delta)));
  c.share = share;
  return c;
}

std::unique_ptr<OuterStep> NewStep(const OuterOptimizerOptions& options, std::vector<Tensor> momentum = {}) {
  absl::StatusOr<std::unique_ptr<OuterStep>> step = NewDelayedNesterovStep(options, Specs(), std::move(momentum));
  EXPECT_TRUE(step.ok()) << step.status();
  return *std::move(step);
}

// Three rounds, each of three Δs applied one at a time (share 1/3, each already scaled by 1/3
// as the asynchronous schedule scales a group of one), against three synchronous Nesterov
// steps on the rounds' averages, for Nesterov and plain momentum.
TEST(DelayedNesterovStepTest, ARoundsWorthInGroupsIsTheSynchronousStep) {
  const std::vector<std::vector<std::vector<float>>> rounds = {
      {{0.3f, -0.6f, 0.9f}, {0.0f, 0.3f, -0.3f}, {0.6f, 0.0f, 0.3f}},
      {{-0.3f, 0.3f, 0.0f}, {0.9f, -0.3f, 0.6f}, {0.3f, 0.3f, 0.3f}},
      {{0.0f, 0.0f, -0.9f}, {0.3f, 0.6f, 0.0f}, {-0.6f, 0.3f, 0.3f}},
  };
  for (bool nesterov : {true, false}) {
    const OuterOptimizerOptions options{.lr = 0.7, .momentum = 0.9, .nesterov = nesterov};
    std::unique_ptr<OuterStep> delayed = NewStep(options);
    OuterOptimizer sync(options, Specs());
    std::vector<Tensor> theta_async = {Vec({1.0f, 2.0f, -1.0f})};
    std::vector<Tensor> theta_sync = {Vec({1.0f, 2.0f, -1.0f})};
    for (const auto& round : rounds) {
      std::vector<float> avg(3, 0.0f);
      for (const std::vector<float>& d : round) {
        std::vector<float> scaled(3);
        for (int k = 0; k < 3; ++k) {
          scaled[k] = d[k] / 3.0f;
          avg[k] += d[k] / 3.0f;
        }
        absl::StatusOr<bool> stepped = delayed->Apply(1, Group(scaled, 1.0 / 3.0), &theta_async);
        ASSERT_TRUE(stepped.ok()) << stepped.status();
        ASSERT_TRUE(*stepped);
      }
      ASSERT_TRUE(sync.Step({Vec(avg)}, &theta_sync).ok());
      EXPECT_THAT(theta_async[0].ToVector<float>(), Pointwise(FloatNear(1e-5f), theta_sync[0].ToVector<float>()))
          << (nesterov ? "nesterov" : "plain momentum");
      EXPECT_THAT(delayed->Momentum()[0].ToVector<float>(),
                  Pointwise(FloatNear(1e-5f), sync.momentum()[0].ToVector<float>()));
    }
  }
}

TEST(DelayedNesterovStepTest, BetweenMomentumUpdatesThetaMovesByTheGradientPartOnly) {
  // A resumed momentum b = (1, 0, -1): the first group of half a round moves θ by lr·Δ alone.
  std::unique_ptr<OuterStep> step = NewStep({.lr = 0.5, .momentum = 0.9, .nesterov = true}, {Vec({1.0f, 0.0f, -1.0f})});
  std::vector<Tensor> theta = {Vec({0.0f, 0.0f, 0.0f})};
  ASSERT_TRUE(*step->Apply(1, Group({2.0f, -2.0f, 4.0f}, 0.5), &theta));
  EXPECT_THAT(theta[0].ToVector<float>(), ElementsAre(-1.0f, 1.0f, -2.0f));
  EXPECT_THAT(step->Momentum()[0].ToVector<float>(), ElementsAre(1.0f, 0.0f, -1.0f));  // not yet
  // The second half completes the round: b' = 0.9·b + (Δ1 + Δ2), θ −= lr·Δ2 + lr·0.9·b'.
  ASSERT_TRUE(*step->Apply(2, Group({0.0f, 2.0f, 0.0f}, 0.5), &theta));
  // b' = (0.9 + 2, 0 + 0, -0.9 + 4) = (2.9, 0, 3.1)
  EXPECT_THAT(step->Momentum()[0].ToVector<float>(), Pointwise(FloatNear(1e-6f), std::vector<float>{2.9f, 0.0f, 3.1f}));
  // θ = (-1, 1, -2) − 0.5·(0, 2, 0) − 0.45·(2.9, 0, 3.1)
  EXPECT_THAT(theta[0].ToVector<float>(),
              Pointwise(FloatNear(1e-6f), std::vector<float>{-1.0f - 1.305f, 0.0f, -2.0f - 1.395f}));
}

TEST(DelayedNesterovStepTest, NotFiniteChangesNothing) {
  std::unique_ptr<OuterStep> step = NewStep({.lr = 0.7, .momentum = 0.9, .nesterov = true});
  std::vector<Tensor> theta = {Vec({1.0f, 1.0f, 1.0f})};
  ASSERT_TRUE(*step->Apply(1, Group({0.1f, 0.1f, 0.1f}, 0.5), &theta));
  const std::vector<float> before = theta[0].ToVector<float>();
  const float inf = std::numeric_limits<float>::infinity();
  absl::StatusOr<bool> stepped = step->Apply(2, Group({0.0f, inf, 0.0f}, 0.5), &theta);
  ASSERT_TRUE(stepped.ok()) << stepped.status();
  EXPECT_FALSE(*stepped);
  EXPECT_EQ(theta[0].ToVector<float>(), before);
  EXPECT_THAT(step->Momentum()[0].ToVector<float>(), ElementsAre(0.0f, 0.0f, 0.0f));
  // The buffer kept only the first group: completing the round with a finite half uses it.
  ASSERT_TRUE(*step->Apply(3, Group({0.1f, 0.1f, 0.1f}, 0.5), &theta));
  EXPECT_THAT(step->Momentum()[0].ToVector<float>(), Pointwise(FloatNear(1e-6f), std::vector<float>(3, 0.2f)));
}

TEST(DelayedNesterovStepTest, RejectsMismatchedInput) {
  std::unique_ptr<OuterStep> step = NewStep({});
  std::vector<Tensor> theta = {Vec({0.0f, 0.0f, 0.0f})};
  absl::StatusOr<bool> shape = step->Apply(1, Group({1.0f, 2.0f}, 1.0), &theta);
  EXPECT_EQ(shape.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(shape.status().message()), HasSubstr("does not match parameter 'w'"));
  absl::StatusOr<bool> share = step->Apply(1, Group({1.0f, 2.0f, 3.0f}, 0.0), &theta);
  EXPECT_THAT(std::string(share.status().message()), HasSubstr("share 0"));
  EXPECT_FALSE(NewDelayedNesterovStep({}, Specs(), {Vec({1.0f})}).ok());  // a checkpoint's momentum of another shape
}

}  // namespace
}  // namespace pcp::shepherd
