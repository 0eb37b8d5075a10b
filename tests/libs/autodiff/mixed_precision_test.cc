// Mixed precision (pcp/autodiff/mixed_precision.h) and loss scaling (TrainStepOptions):
// which values the rewrite rounds, the rounded numbers against convert.h's scalar
// conversions, training with bf16 products against f32 (the reference interpreter runs both),
// loss scaling that is exact in f32, and an f16 overflow that skips the step.
#include "pcp/autodiff/mixed_precision.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/passes.h"
#include "pcp/autodiff/train_step.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/base/status_macros.h"
#include "pcp/tensor/convert.h"
#include "pcp/testing/tensor_testing.h"

namespace pcp {
namespace {

using ::pcp::testing::RandomTensor;
using ::testing::HasSubstr;

const TensorType kX{DType::kF32, {6, 4}};
const TensorType kY{DType::kF32, {6, 2}};

// loss = 0.1 * sum((tanh(x @ w1 + b1) @ w2 - y)^2), "tokens" = x, "targets" = y.
Function TinyMlp() {
  FunctionBuilder b("forward_loss");
  ValueId w1 = b.Parameter({DType::kF32, {4, 3}}, "w1");
  ValueId b1 = b.Parameter({DType::kF32, {3}}, "b1");
  ValueId w2 = b.Parameter({DType::kF32, {3, 2}}, "w2");
  ValueId x = b.Parameter(kX, "tokens");
  ValueId y = b.Parameter(kY, "targets");
  ValueId h = b.Tanh(b.BAdd(b.MatMul(x, w1), b1));
  ValueId d = b.Sub(b.MatMul(h, w2), y);
  ValueId loss = b.BMul(b.ReduceSum(b.Mul(d, d), {0, 1}), b.ScalarConstant(0.1));
  b.Return({loss}, {"loss"});
  absl::StatusOr<Function> f = b.Build();
  EXPECT_TRUE(f.ok()) << f.status();
  return *f;
}

int Count(const Function& f, Op op) {
  int n = 0;
  for (const Instruction& inst : f.instructions) n += inst.op == op;
  return n;
}

uint32_t Bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

TEST(MixedPrecisionTest, NamesParseAndBadOnesSayWhatIsAccepted) {
  for (Precision p : {Precision::kF32, Precision::kBF16, Precision::kF16}) {
    absl::StatusOr<Precision> back = ParsePrecision(PrecisionName(p));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, p);
  }
  EXPECT_EQ(PrecisionDType(Precision::kBF16), DType::kBF16);
  EXPECT_EQ(PrecisionDType(Precision::kF16), DType::kF16);
  absl::StatusOr<Precision> bad = ParsePrecision("fp16");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("'fp16' (expected f32, bf16 or f16)"));
}

TEST(MixedPrecisionTest, F32LeavesTheFunctionAsItWas) {
  Function f = TinyMlp();
  const Function before = f;
  absl::StatusOr<int> n = ApplyMixedPrecision(f, Precision::kF32);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 0);
  ASSERT_EQ(f.instructions.size(), before.instructions.size());
  for (size_t i = 0; i < f.instructions.size(); ++i) EXPECT_EQ(f.instructions[i].op, before.instructions[i].op);
}

TEST(MixedPrecisionTest, RoundsEveryProductsOperandsAndResultOnce) {
  for (Precision p : {Precision::kBF16, Precision::kF16}) {
    Function f = TinyMlp();
    absl::StatusOr<int> n = ApplyMixedPrecision(f, p);
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(*n, 2);
    ASSERT_TRUE(Verify(f).ok());
    EXPECT_EQ(f.param_names, TinyMlp().param_names);
    EXPECT_EQ(f.result_names, TinyMlp().result_names);
    // 2 products x (2 operands + 1 result) roundings of 2 converts each.
    EXPECT_EQ(Count(f, Op::kConvert), 12);
    for (const Instruction& inst : f.instructions) {
      if (inst.op != Op::kDotGeneral) continue;
      for (ValueId o : inst.operands) {
        DType half = DType::kF32;
        EXPECT_TRUE(IsRoundedThroughHalf(f, o, &half));
        EXPECT_EQ(half, PrecisionDType(p));
      }
    }
    // Applying it again rounds no operand twice (the second pass rounds only the new results).
    Function again = f;
    ASSERT_TRUE(ApplyMixedPrecision(again, p).ok());
    EXPECT_EQ(Count(again, Op::kConvert), 12 + 4);
  }
}

// A product's operands and result are rounded whatever their ranks: x [2, 3, 4] @ w [4, 5], and
// a weight gradient contracting two dimensions into a rank-2 result.
TEST(MixedPrecisionTest, RoundsProductsOfEveryRank) {
  FunctionBuilder b("ranks");
  ValueId x = b.Parameter({DType::kF32, {2, 3, 4}}, "x");
  ValueId w = b.Parameter({DType::kF32, {4, 5}}, "w");
  ValueId g = b.Parameter({DType::kF32, {2, 3, 5}}, "g");
  ValueId y = b.DotGeneral(x, w, DotDims{{}, {}, {2}, {0}});
  ValueId dw = b.DotGeneral(x, g, DotDims{{}, {}, {0, 1}, {0, 1}});
  b.Return({y, dw});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<int> n = ApplyMixedPrecision(*f, Precision::kBF16);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 2);
  for (const Instruction& inst : f->instructions) {
    if (inst.op != Op::kDotGeneral) continue;
    for (ValueId o : inst.operands) EXPECT_TRUE(IsRoundedThroughHalf(*f, o)) << "%" << o;
  }
  for (ValueId r : f->results) EXPECT_TRUE(IsRoundedThroughHalf(*f, r)) << "%" << r;
}

// y = round(round(x) @ round(w)) against convert.h: products of two 16-bit values are exact in
// f32, so only the order of the f32 sum may move the result, by at most one 16-bit ulp.
TEST(MixedPrecisionTest, RoundedProductMatchesScalarConversions) {
  for (Precision p : {Precision::kBF16, Precision::kF16}) {
    FunctionBuilder b("mm");
    ValueId x = b.Parameter({DType::kF32, {5, 40}});
    ValueId w = b.Parameter({DType::kF32, {40, 7}});
    b.Return({b.MatMul(x, w)});
    absl::StatusOr<Function> f = b.Build();
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE(ApplyMixedPrecision(*f, p).ok());
    const Tensor xt = RandomTensor({DType::kF32, {5, 40}}, 1, -3, 3);
    const Tensor wt = RandomTensor({DType::kF32, {40, 7}}, 2, -3, 3);
    absl::StatusOr<std::vector<Tensor>> out = Interpret(*f, {xt, wt});
    ASSERT_TRUE(out.ok()) << out.status();
    auto round = [p](float v) {
      return p == Precision::kBF16 ? BFloat16ToFloat(FloatToBFloat16(v)) : HalfToFloat(FloatToHalf(v));
    };
    const float* xs = xt.data<float>();
    const float* ws = wt.data<float>();
    const float* ys = (*out)[0].data<float>();
    int moved = 0;
    for (int i = 0; i < 5; ++i) {
      for (int j = 0; j < 7; ++j) {
        double sum = 0;
        for (int k = 0; k < 40; ++k) sum += double(round(xs[i * 40 + k])) * double(round(ws[k * 7 + j]));
        const float expected = round(static_cast<float>(sum));
        const float actual = ys[i * 7 + j];
        EXPECT_EQ(round(actual), actual) << "not representable in " << PrecisionName(p);
        const uint16_t e16 = p == Precision::kBF16 ? FloatToBFloat16(expected) : FloatToHalf(expected);
        const uint16_t a16 = p == Precision::kBF16 ? FloatToBFloat16(actual) : FloatToHalf(actual);
        EXPECT_LE(std::abs(int(e16) - int(a16)), 1) << i << "," << j << ": " << actual << " vs " << expected;
        moved += Bits(actual) != Bits(expected);
      }
    }
    EXPECT_LE(moved, 5) << "most elements should match the double-accumulated oracle exactly";
  }
}

struct State {
  std::vector<Tensor> params, m, v;
};

// Runs `steps` steps of `step_fn` from `init` on fixed data; returns the losses, updates `s`.
std::vector<float> Train(const Function& step_fn, State& s, int steps) {
  std::vector<float> losses;
  for (int t = 1; t <= steps; ++t) {
    std::vector<Tensor> args;
    for (const Tensor& x : s.params) args.push_back(x.Clone());
    for (const Tensor& x : s.m) args.push_back(x.Clone());
    for (const Tensor& x : s.v) args.push_back(x.Clone());
    args.push_back(Tensor::Scalar<float>(static_cast<float>(t)));
    args.push_back(Tensor::Scalar<float>(0.05f));
    args.push_back(RandomTensor(kX, 500 + t % 3));
    args.push_back(RandomTensor(kY, 600 + t % 3, -0.5, 0.5));
    absl::StatusOr<std::vector<Tensor>> out = Interpret(step_fn, args);
    EXPECT_TRUE(out.ok()) << out.status();
    if (!out.ok()) return losses;
    const size_t n = s.params.size();
    for (size_t i = 0; i < n; ++i) {
      s.params[i] = (*out)[i].Clone();
      s.m[i] = (*out)[n + i].Clone();
      s.v[i] = (*out)[2 * n + i].Clone();
    }
    losses.push_back((*out)[3 * n].data<float>()[0]);
  }
  return losses;
}

State Init(const Function& fwd) {
  State s;
  for (size_t i = 0; i + 2 < fwd.params.size(); ++i) {
    const TensorType& t = fwd.type(fwd.params[i]);
    s.params.push_back(RandomTensor(t, 10 + i, -0.7, 0.7));
    s.m.push_back(Tensor(DType::kF32, t.shape));
    s.v.push_back(Tensor(DType::kF32, t.shape));
  }
  return s;
}

absl::StatusOr<Function> Step(Precision p, double loss_scale = 1.0) {
  PCP_ASSIGN_OR_RETURN(Function f, BuildTrainStep(TinyMlp(), {.beta1 = 0.9, .beta2 = 0.99, .grad_clip = 1.0},
                                                  {.loss_scale = loss_scale}));
  PCP_RETURN_IF_ERROR(ApplyMixedPrecision(f, p).status());
  PCP_RETURN_IF_ERROR(RunStandardPasses(f));
  return f;
}

TEST(MixedPrecisionTest, Bf16AndF16TrainingFollowF32) {
  absl::StatusOr<Function> f32 = Step(Precision::kF32);
  ASSERT_TRUE(f32.ok()) << f32.status();
  State ref = Init(TinyMlp());
  const std::vector<float> want = Train(*f32, ref, 30);
  ASSERT_EQ(want.size(), 30u);
  EXPECT_LT(want.back(), 0.5 * want.front()) << "the f32 reference must learn for the comparison to mean anything";
  for (Precision p : {Precision::kBF16, Precision::kF16}) {
    absl::StatusOr<Function> step = Step(p, p == Precision::kF16 ? 1024.0 : 1.0);
    ASSERT_TRUE(step.ok()) << step.status();
    State s = Init(TinyMlp());
    const std::vector<float> got = Train(*step, s, 30);
    ASSERT_EQ(got.size(), want.size());
    // bf16 keeps 8 significant bits (relative rounding 2^-9), f16 11: the losses follow f32's
    // within a few of those, and differ from it (the rounding is really there).
    const double tol = p == Precision::kBF16 ? 0.03 : 0.005;
    bool differs = false;
    for (size_t t = 0; t < want.size(); ++t) {
      EXPECT_NEAR(got[t], want[t], tol * std::abs(want[t]) + 1e-4) << PrecisionName(p) << " step " << t + 1;
      differs |= got[t] != want[t];
    }
    EXPECT_TRUE(differs) << PrecisionName(p);
    for (size_t i = 0; i < s.params.size(); ++i) {
      EXPECT_TRUE(::pcp::testing::TensorsNear(s.params[i], ref.params[i], 0.05, 0.02)) << PrecisionName(p) << " " << i;
    }
  }
}

// Scaling by a power of two and back is exact in f32: the same bits as without it.
TEST(MixedPrecisionTest, LossScaleIsExactWithoutOverflow) {
  absl::StatusOr<Function> plain = Step(Precision::kF32);
  absl::StatusOr<Function> scaled = Step(Precision::kF32, 1024.0);
  ASSERT_TRUE(plain.ok() && scaled.ok()) << plain.status() << scaled.status();
  State a = Init(TinyMlp()), b = Init(TinyMlp());
  const std::vector<float> la = Train(*plain, a, 5), lb = Train(*scaled, b, 5);
  ASSERT_EQ(la.size(), lb.size());
  for (size_t t = 0; t < la.size(); ++t) EXPECT_EQ(Bits(la[t]), Bits(lb[t])) << t;
  for (size_t i = 0; i < a.params.size(); ++i) {
    EXPECT_TRUE(::pcp::testing::TensorsNear(a.params[i], b.params[i], 0, 0)) << i;
    EXPECT_TRUE(::pcp::testing::TensorsNear(a.v[i], b.v[i], 0, 0)) << i;
  }
}

// A scale that overflows f16 (the backward's products round the scaled gradients to inf):
// the step leaves parameters and moments exactly as they were and still reports the loss.
TEST(MixedPrecisionTest, F16OverflowSkipsTheStep) {
  absl::StatusOr<Function> step = Step(Precision::kF16, std::ldexp(1.0, 40));
  ASSERT_TRUE(step.ok()) << step.status();
  State s = Init(TinyMlp());
  const State before{s.params, s.m, s.v};
  const std::vector<float> losses = Train(*step, s, 2);
  ASSERT_EQ(losses.size(), 2u);
  EXPECT_TRUE(std::isfinite(losses[0]) && std::isfinite(losses[1])) << losses[0] << " " << losses[1];
  for (size_t i = 0; i < s.params.size(); ++i) {
    EXPECT_TRUE(::pcp::testing::TensorsNear(s.params[i], before.params[i], 0, 0)) << i;
    EXPECT_TRUE(::pcp::testing::TensorsNear(s.m[i], before.m[i], 0, 0)) << i;
    EXPECT_TRUE(::pcp::testing::TensorsNear(s.v[i], before.v[i], 0, 0)) << i;
  }
  // The default f16 scale trains.
  absl::StatusOr<Function> ok = Step(Precision::kF16, kF16LossScale);
  ASSERT_TRUE(ok.ok());
  State t = Init(TinyMlp());
  Train(*ok, t, 1);
  EXPECT_FALSE(::pcp::testing::TensorsNear(t.params[0], before.params[0], 0, 0));
}

TEST(MixedPrecisionTest, LossScaleMustBeAPowerOfTwo) {
  for (double bad : {3.0, 0.0, -2.0, 1e300 * 1e300}) {
    absl::StatusOr<Function> step = BuildTrainStep(TinyMlp(), {}, {.loss_scale = bad});
    ASSERT_FALSE(step.ok()) << bad;
    EXPECT_THAT(step.status().message(), HasSubstr("loss_scale must be a positive power of two")) << bad;
  }
  EXPECT_TRUE(BuildTrainStep(TinyMlp(), {}, {.loss_scale = 0.5}).ok());
}

}  // namespace
}  // namespace pcp
