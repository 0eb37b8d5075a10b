// The reverse pass of softmax and log-softmax: the max is skipped (shift_invariance.h) exactly
// when the output provably does not depend on it, and a softmax's backward is the closed form
// (softmax_vjp.h). Both show in the gradient function's ops: reduce max's VJP is the only
// source of compare instructions here, the chain rule through the softmax's divide the only
// source of further divides. The gradients' values are checked against finite differences in
// vjp_fd_test.cc.
#include <algorithm>
#include <functional>

#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/autodiff/vjp.h"

namespace pcp {
namespace {

TensorType F32(Shape s) { return {DType::kF32, std::move(s)}; }

// Builds f(x: f32[2, 4]) = {loss, extra...} from `body` and returns how many `op` instructions
// its gradient function (with respect to x, of result 0) has.
int CountInGradient(Op op, const std::function<std::vector<ValueId>(FunctionBuilder&, ValueId)>& body) {
  FunctionBuilder b("f");
  ValueId x = b.Parameter(F32({2, 4}), "x");
  std::vector<ValueId> results = body(b, x);
  b.Return(results);
  absl::StatusOr<Function> f = b.Build();
  EXPECT_TRUE(f.ok()) << f.status();
  if (!f.ok()) return -1;
  absl::StatusOr<Function> g = BuildGradientFunction(*f, {0});
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return -1;
  EXPECT_TRUE(Verify(*g).ok());
  return static_cast<int>(
      std::count_if(g->instructions.begin(), g->instructions.end(), [op](const Instruction& i) { return i.op == op; }));
}

ValueId Rows(FunctionBuilder& b, ValueId row_value) { return b.BroadcastInDim(row_value, {2, 4}, {0}); }
ValueId Sum(FunctionBuilder& b, ValueId v) { return b.ReduceSum(v, {0, 1}); }
// x - max over rows.
ValueId Shifted(FunctionBuilder& b, ValueId x) { return b.Sub(x, Rows(b, b.ReduceMax(x, {1}))); }
ValueId Softmax(FunctionBuilder& b, ValueId z) {
  ValueId e = b.Exp(z);
  return b.Div(e, Rows(b, b.ReduceSum(e, {1})));
}

TEST(SoftmaxMaxTest, SoftmaxMaxIsSkipped) {
  EXPECT_EQ(CountInGradient(Op::kCompare,
                            [](FunctionBuilder& b, ValueId x) {
                              return std::vector<ValueId>{Sum(b, b.Mul(Softmax(b, Shifted(b, x)), x))};
                            }),
            0);
}

TEST(SoftmaxMaxTest, LogSoftmaxMaxIsSkipped) {
  EXPECT_EQ(CountInGradient(Op::kCompare,
                            [](FunctionBuilder& b, ValueId x) {
                              ValueId z = Shifted(b, x);
                              ValueId lse = b.Log(b.ReduceSum(b.Exp(z), {1}));
                              return std::vector<ValueId>{Sum(b, b.Sub(z, Rows(b, lse)))};
                            }),
            0);
}

TEST(SoftmaxMaxTest, OtherResultsDoNotMatter) {
  // The shifted scores are also returned, but only result 0 is differentiated.
  EXPECT_EQ(CountInGradient(Op::kCompare,
                            [](FunctionBuilder& b, ValueId x) {
                              ValueId z = Shifted(b, x);
                              return std::vector<ValueId>{Sum(b, Softmax(b, z)), b.Mul(z, z)};
                            }),
            0);
}

TEST(SoftmaxMaxTest, MaxShiftWithoutNormalizationKeepsItsGradient) {
  EXPECT_EQ(CountInGradient(Op::kCompare, [](FunctionBuilder& b,
                                             ValueId x) { return std::vector<ValueId>{Sum(b, b.Exp(Shifted(b, x)))}; }),
            1);
}

TEST(SoftmaxMaxTest, ShiftedScoresUsedElsewhereKeepTheMaxGradient) {
  EXPECT_EQ(CountInGradient(Op::kCompare,
                            [](FunctionBuilder& b, ValueId x) {
                              ValueId z = Shifted(b, x);
                              return std::vector<ValueId>{b.Add(Sum(b, Softmax(b, z)), Sum(b, b.Mul(z, z)))};
                            }),
            1);
}

TEST(SoftmaxMaxTest, NormalizingOverOtherDimensionsKeepsTheMaxGradient) {
  // Max over dim 1, but the exponentials summed over dim 0: not a softmax of the max's rows.
  EXPECT_EQ(CountInGradient(Op::kCompare,
                            [](FunctionBuilder& b, ValueId x) {
                              ValueId e = b.Exp(Shifted(b, x));
                              ValueId p = b.Div(e, b.BroadcastInDim(b.ReduceSum(e, {0}), {2, 4}, {1}));
                              return std::vector<ValueId>{Sum(b, b.Mul(p, x))};
                            }),
            1);
}

TEST(SoftmaxMaxTest, TheMaxAsTheOutputKeepsItsGradient) {
  EXPECT_EQ(CountInGradient(Op::kCompare,
                            [](FunctionBuilder& b, ValueId x) {
                              return std::vector<ValueId>{b.ReduceSum(b.ReduceMax(x, {1}), {0})};
                            }),
            1);
}

TEST(SoftmaxVjpTest, SoftmaxBackwardIsTheClosedForm) {
  // One divide: the forward's. The chain rule would add g / s and g·e / s².
  EXPECT_EQ(CountInGradient(Op::kDivide,
                            [](FunctionBuilder& b, ValueId x) {
                              return std::vector<ValueId>{Sum(b, b.Mul(Softmax(b, Shifted(b, x)), x))};
                            }),
            1);
}

TEST(SoftmaxVjpTest, ADivideThatIsNotASoftmaxUsesItsRule) {
  // exp(x) / broadcast(row sums of exp(x) + 1): the sum is not of the numerator.
  EXPECT_EQ(CountInGradient(Op::kDivide,
                            [](FunctionBuilder& b, ValueId x) {
                              ValueId e = b.Exp(x);
                              ValueId s = b.ReduceSum(b.Add(e, b.Full(1.0, F32({2, 4}))), {1});
                              return std::vector<ValueId>{Sum(b, b.Mul(b.Div(e, Rows(b, s)), x))};
                            }),
            3);
}

}  // namespace
}  // namespace pcp
