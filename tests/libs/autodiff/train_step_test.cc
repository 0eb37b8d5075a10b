// BuildTrainStep: the signature train_step.h promises, argument errors, and the numbers of
// forward + backward + clipping + AdamW against a hand-written double-precision AdamW applied
// to gradients from BuildGradientFunction (both run by the reference interpreter).
// Parity with torch.optim.AdamW on a GPT is tests/libs/models/gpt_torch_parity_test.cc.
#include "pcp/autodiff/train_step.h"

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/autodiff/vjp.h"
#include "pcp/testing/tensor_testing.h"

namespace pcp {
namespace {

using ::pcp::testing::RandomTensor;
using ::pcp::testing::TensorsNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const TensorType kX{DType::kF32, {5, 4}};
const TensorType kY{DType::kF32, {5, 2}};

// loss = mean((tanh(x @ w1 + b1) @ w2 + s - y)^2), with "tokens" = x and "targets" = y.
// w1, w2 have rank 2 (decayed); b1 (rank 1) and s (rank 0) are not.
Function TinyMlp() {
  FunctionBuilder b("forward_loss");
  ValueId w1 = b.Parameter({DType::kF32, {4, 3}}, "w1");
  ValueId b1 = b.Parameter({DType::kF32, {3}}, "b1");
  ValueId w2 = b.Parameter({DType::kF32, {3, 2}}, "w2");
  ValueId s = b.Parameter({DType::kF32, {}}, "s");
  ValueId x = b.Parameter(kX, "tokens");
  ValueId y = b.Parameter(kY, "targets");
  ValueId h = b.Tanh(b.BAdd(b.MatMul(x, w1), b1));
  ValueId d = b.BSub(b.BAdd(b.MatMul(h, w2), s), y);
  ValueId loss = b.BMul(b.ReduceSum(b.Mul(d, d), {0, 1}), b.ScalarConstant(0.1));
  b.Return({loss}, {"loss"});
  absl::StatusOr<Function> f = b.Build();
  EXPECT_TRUE(f.ok()) << f.status();
  return *f;
}

std::vector<std::string> ParamNames(const Function& f) { return f.param_names; }

TEST(TrainStepTest, SignatureNamesAndTypes) {
  const Function fwd = TinyMlp();
  absl::StatusOr<Function> step = BuildTrainStep(fwd, {.weight_decay = 0.1, .grad_clip = 1.0});
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_TRUE(Verify(*step).ok()) << Verify(*step);
  EXPECT_EQ(step->name, "train_step");
  EXPECT_EQ(NumModelParams(static_cast<int>(fwd.params.size())), 4);
  EXPECT_THAT(ParamNames(*step), ElementsAre("w1", "b1", "w2", "s", "m.w1", "m.b1", "m.w2", "m.s", "v.w1", "v.b1",
                                             "v.w2", "v.s", "step", "lr", "tokens", "targets"));
  EXPECT_THAT(step->result_names,
              ElementsAre("w1", "b1", "w2", "s", "m.w1", "m.b1", "m.w2", "m.s", "v.w1", "v.b1", "v.w2", "v.s", "loss"));
  for (int i = 0; i < 4; ++i) {
    const TensorType& t = fwd.type(fwd.params[static_cast<size_t>(i)]);
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(step->type(step->params[static_cast<size_t>(k * 4 + i)]), t);
      EXPECT_EQ(step->type(step->results[static_cast<size_t>(k * 4 + i)]), t);
    }
  }
  const TensorType scalar{DType::kF32, {}};
  EXPECT_EQ(step->type(step->params[12]), scalar);
  EXPECT_EQ(step->type(step->params[13]), scalar);
  EXPECT_EQ(step->type(step->params[14]), kX);
  EXPECT_EQ(step->type(step->params[15]), kY);
  EXPECT_EQ(step->type(step->results[12]), scalar);
}

TEST(TrainStepTest, RejectsMalformedForwardAndConfig) {
  FunctionBuilder few("f");
  ValueId x = few.Parameter({DType::kF32, {}}, "x");
  few.Parameter({DType::kF32, {}}, "tokens");
  few.Return({x});
  EXPECT_THAT(BuildTrainStep(*few.Build(), {}).status().message(), HasSubstr("params..., tokens, targets"));

  FunctionBuilder vec("f");
  ValueId w = vec.Parameter({DType::kF32, {3}}, "w");
  vec.Parameter({DType::kI32, {3}}, "tokens");
  vec.Parameter({DType::kI32, {3}}, "targets");
  vec.Return({w});
  absl::Status s = BuildTrainStep(*vec.Build(), {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("scalar loss"));

  FunctionBuilder ints("f");
  ValueId k = ints.Parameter({DType::kI32, {}}, "k");
  ints.Parameter({DType::kI32, {3}}, "tokens");
  ints.Parameter({DType::kI32, {3}}, "targets");
  ints.Return({ints.Convert(k, DType::kF32)});
  EXPECT_THAT(BuildTrainStep(*ints.Build(), {}).status().message(), HasSubstr("expected f32"));

  EXPECT_EQ(BuildTrainStep(TinyMlp(), {.beta1 = 1.0}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildTrainStep(TinyMlp(), {.grad_clip = -1}).status().code(), absl::StatusCode::kInvalidArgument);
}

// One AdamW step as torch.optim.AdamW + clip_grad_norm_ compute it, in double.
struct HostState {
  std::vector<std::vector<double>> p, m, v;
};
HostState ReferenceStep(const HostState& in, const std::vector<std::vector<double>>& grads,
                        const std::vector<int64_t>& ranks, const AdamWConfig& c, double step, double lr) {
  std::vector<std::vector<double>> g = grads;
  if (c.grad_clip > 0) {
    double sq = 0.0;
    for (const auto& t : g) {
      for (double x : t) sq += x * x;
    }
    const double coef = std::min(c.grad_clip / (std::sqrt(sq) + 1e-6), 1.0);
    for (auto& t : g) {
      for (double& x : t) x *= coef;
    }
  }
  HostState out = in;
  const double bc1 = 1 - std::pow(c.beta1, step), bc2 = 1 - std::pow(c.beta2, step);
  for (size_t i = 0; i < g.size(); ++i) {
    for (size_t j = 0; j < g[i].size(); ++j) {
      double& p = out.p[i][j];
      double& m = out.m[i][j];
      double& v = out.v[i][j];
      if (ranks[i] >= 2) p *= 1 - lr * c.weight_decay;
      m = c.beta1 * m + (1 - c.beta1) * g[i][j];
      v = c.beta2 * v + (1 - c.beta2) * g[i][j] * g[i][j];
      p -= (lr / bc1) * m / (std::sqrt(v) / std::sqrt(bc2) + c.eps);
    }
  }
  return out;
}

std::vector<double> Doubles(const Tensor& t) { return ::pcp::testing::ToDoubles(t); }
Tensor ToTensor(const Shape& shape, const std::vector<double>& v) {
  Tensor t(DType::kF32, shape);
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = static_cast<float>(v[i]);
  return t;
}

struct StepCase {
  std::string name;
  AdamWConfig config;
  double step;           // 1-based step number fed to train_step
  bool zero_moments;     // m = v = 0 (a first step) or random moments (a later step)
  double clip_fraction;  // grad_clip = this * the gradient norm (0: no clipping)
};

void PrintTo(const StepCase& c, std::ostream* os) { *os << c.name; }

class TrainStepNumericsTest : public ::testing::TestWithParam<StepCase> {};

TEST_P(TrainStepNumericsTest, MatchesHandWrittenAdamW) {
  const StepCase& tc = GetParam();
  const Function fwd = TinyMlp();
  const size_t n = 4;
  const double lr = 0.05;
  std::vector<Tensor> params, data = {RandomTensor(kX, 91), RandomTensor(kY, 92)};
  for (size_t i = 0; i < n; ++i) params.push_back(RandomTensor(fwd.type(fwd.params[i]), 10 + i));

  // Gradients from autodiff alone, to feed the hand-written optimizer.
  absl::StatusOr<Function> grad_fn = BuildGradientFunction(fwd, {0, 1, 2, 3});
  ASSERT_TRUE(grad_fn.ok()) << grad_fn.status();
  std::vector<Tensor> gargs = params;
  gargs.insert(gargs.end(), data.begin(), data.end());
  absl::StatusOr<std::vector<Tensor>> gout = Interpret(*grad_fn, gargs);
  ASSERT_TRUE(gout.ok()) << gout.status();
  std::vector<std::vector<double>> grads;
  std::vector<int64_t> ranks;
  double norm_sq = 0.0;
  for (size_t i = 0; i < n; ++i) {
    grads.push_back(Doubles((*gout)[i + 1]));
    ranks.push_back(params[i].rank());
    for (double g : grads.back()) norm_sq += g * g;
  }
  AdamWConfig config = tc.config;
  config.grad_clip = tc.clip_fraction * std::sqrt(norm_sq);

  HostState state;
  std::vector<Tensor> m, v;
  for (size_t i = 0; i < n; ++i) {
    const TensorType t = fwd.type(fwd.params[i]);
    m.push_back(tc.zero_moments ? Tensor(DType::kF32, t.shape) : RandomTensor(t, 40 + i, -0.1, 0.1));
    v.push_back(tc.zero_moments ? Tensor(DType::kF32, t.shape) : RandomTensor(t, 50 + i, 0.0, 0.02));
    state.p.push_back(Doubles(params[i]));
    state.m.push_back(Doubles(m[i]));
    state.v.push_back(Doubles(v[i]));
  }
  const HostState expected = ReferenceStep(state, grads, ranks, config, tc.step, lr);

  absl::StatusOr<Function> step_fn = BuildTrainStep(fwd, config);
  ASSERT_TRUE(step_fn.ok()) << step_fn.status();
  std::vector<Tensor> args = params;
  args.insert(args.end(), m.begin(), m.end());
  args.insert(args.end(), v.begin(), v.end());
  args.push_back(Tensor::Scalar<float>(static_cast<float>(tc.step)));
  args.push_back(Tensor::Scalar<float>(static_cast<float>(lr)));
  args.insert(args.end(), data.begin(), data.end());
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*step_fn, args);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 3 * n + 1);

  EXPECT_TRUE(TensorsNear((*out)[3 * n], (*gout)[0], 0, 0)) << "loss is the forward's, before the update";
  for (size_t i = 0; i < n; ++i) {
    const Shape& shape = params[i].shape();
    const std::string& name = fwd.param_names[i];
    EXPECT_TRUE(TensorsNear((*out)[i], ToTensor(shape, expected.p[i]), 1e-5, 1e-6)) << name;
    EXPECT_TRUE(TensorsNear((*out)[n + i], ToTensor(shape, expected.m[i]), 1e-5, 1e-7)) << "m." << name;
    EXPECT_TRUE(TensorsNear((*out)[2 * n + i], ToTensor(shape, expected.v[i]), 1e-5, 1e-9)) << "v." << name;
    // Every parameter moved by about lr (Adam's normalised step), so the check has teeth.
    EXPECT_GT(::pcp::testing::MaxRelativeError((*out)[i], params[i], 1.0), 0.1 * lr) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TrainStepNumericsTest,
    ::testing::Values(
        StepCase{"FirstStepPlain", {.beta1 = 0.9, .beta2 = 0.999}, 1, true, 0},
        StepCase{"FirstStepClippedDecayed", {.beta1 = 0.9, .beta2 = 0.95, .weight_decay = 0.1}, 1, true, 0.3},
        StepCase{"LaterStepWithMoments", {.beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.5}, 7, false, 0},
        StepCase{"ClipInactive", {.beta1 = 0.9, .beta2 = 0.999, .weight_decay = 0.1}, 3, false, 2.0}),
    [](const ::testing::TestParamInfo<StepCase>& info) { return info.param.name; });

}  // namespace
}  // namespace pcp
