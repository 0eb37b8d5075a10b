// The Vulkan backend's row kernels (libs/kernels/vulkan/src/kernel_groups.h): softmax (plain
// and causally masked), LayerNorm forward and backward and cross-entropy rows, and the
// gradients autodiff builds for them, against the reference interpreter, for rows of several
// lengths (1, short rows several to a work group, lengths that are not multiples of the work
// group, rows longer than one; more rows than a dispatch has work groups), with rows holding
// NaN, ±inf, all -0, huge and tiny values; the same bits on a second run; fewer dispatches
// than without row kernels (VulkanBackendOptions::row_kernels = false), softmax and LayerNorm
// forward and backward in one; and the GPT train step and forward in fewer dispatches than
// without, results equal within the Vulkan GPT test's tolerance. Cases skip without a Vulkan
// device.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/passes.h"
#include "pcp/autodiff/train_step.h"
#include "pcp/autodiff/vjp.h"
#include "pcp/kernels/vulkan_backend.h"
#include "pcp/models/cross_entropy.h"
#include "pcp/models/gpt.h"
#include "pcp/testing/tensor_testing.h"
#include "row_functions.h"
#include "train_step_args.h"
#include "vulkan_compiled.h"

namespace pcp {
namespace {

using ::pcp::testing::MaxRelativeError;
using ::pcp::testing::RandomTensor;
using ::pcp::testing::TensorsNear;

TensorType F32(Shape s) { return {DType::kF32, std::move(s)}; }

constexpr int64_t kB = ::pcp::testing::kRowsB, kT = ::pcp::testing::kRowsT;
// 1: a row per lane; 3, 17: several rows per work group; 64: one group; 65, 100: not a power
// of two; 700, 1500: longer than a work group of 256.
constexpr int64_t kRowLengths[] = {1, 3, 17, 64, 65, 100, 700, 1500};

#define PCP_BACKENDS_OR_SKIP(var)                                              \
  absl::StatusOr<BackendPair> var = CreateBackendPair({.row_kernels = false}); \
  if (!var.ok()) GTEST_SKIP() << "no Vulkan device: " << var.status()

// With row kernels: near the interpreter (NaN where it has NaN, the same infinities), the
// plain plan's results too; fewer dispatches than the plain plan, at most `max_dispatches`.
void CheckRows(BackendPair& b, const Function& f, int max_dispatches) {
  const Compiled rows = CompileOn(*b.with, f);
  const Compiled plain = CompileOn(*b.without, f);
  EXPECT_GE(rows.schedule.row_kernels, 1);
  EXPECT_EQ(plain.schedule.row_kernels, 0);
  EXPECT_LT(rows.schedule.dispatches, plain.schedule.dispatches);
  EXPECT_LE(rows.schedule.dispatches, max_dispatches);
  std::printf("%s: %d dispatches (%d row kernels), %d without row kernels\n", f.name.c_str(), rows.schedule.dispatches,
              rows.schedule.row_kernels, plain.schedule.dispatches);
  for (bool special : {false, true}) {
    SCOPED_TRACE(special ? "special values" : "finite values");
    const std::vector<Tensor> args = ::pcp::testing::RowArgs(f, special);
    absl::StatusOr<std::vector<Tensor>> want = Interpret(f, args);
    ASSERT_TRUE(want.ok()) << want.status();
    const std::vector<Tensor> got = RunTwice(*b.with, rows, args);
    const std::vector<Tensor> got_plain = RunTwice(*b.without, plain, args);
    ASSERT_EQ(got.size(), want->size());
    ASSERT_EQ(got_plain.size(), want->size());
    for (size_t i = 0; i < want->size(); ++i) {
      EXPECT_TRUE(TensorsNear(got[i], (*want)[i], 1e-4, 1e-5)) << "result " << i;
      EXPECT_TRUE(TensorsNear(got_plain[i], (*want)[i], 1e-4, 1e-5)) << "result " << i << " without row kernels";
    }
  }
}

Function Built(FunctionBuilder& b) {
  absl::StatusOr<Function> f = b.Build();
  EXPECT_TRUE(f.ok()) << f.status();
  Function out = f.ok() ? *std::move(f) : Function{};
  EXPECT_TRUE(RunStandardPasses(out).ok());
  return out;
}

ValueId SoftmaxRows(FunctionBuilder& b, ValueId x, const Shape& s) {
  const int64_t r = static_cast<int64_t>(s.size()) - 1;
  std::vector<int64_t> keep(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d) keep[static_cast<size_t>(d)] = d;
  ValueId e = b.Exp(b.Sub(x, b.BroadcastInDim(b.ReduceMax(x, {r}), s, keep)));
  return b.Div(e, b.BroadcastInDim(b.ReduceSum(e, {r}), s, keep));
}

Function Softmax(int64_t c) {
  FunctionBuilder b("softmax");
  const Shape s = {kB, kT, c};
  b.Return({SoftmaxRows(b, b.Parameter(F32(s)), s)});
  return Built(b);
}

// Attention's softmax (libs/models/src/gpt.cc): scaled, causally masked with -inf, over
// [B, H, T, T] rows.
Function MaskedSoftmax(int64_t t) {
  FunctionBuilder b("masked_softmax");
  const Shape s = {2, 2, t, t};
  ValueId x = b.Parameter(F32(s));
  ValueId att = b.BMul(x, b.ScalarConstant(0.125));
  ValueId rows = b.Iota(TensorType{DType::kI32, {t, t}}, 0);
  ValueId cols = b.Iota(TensorType{DType::kI32, {t, t}}, 1);
  ValueId causal = b.BroadcastInDim(b.Compare(cols, rows, ComparisonDirection::kLE), s, {2, 3});
  att = b.Select(causal, att, b.Full(-std::numeric_limits<double>::infinity(), F32(s)));
  b.Return({SoftmaxRows(b, att, s)});
  return Built(b);
}

Function LayerNormForward(int64_t c) {
  FunctionBuilder b("layer_norm");
  ::pcp::testing::AddLayerNormForward(b, c);
  return Built(b);
}

Function LayerNormBackward(int64_t c) {
  FunctionBuilder b("layer_norm_grad");
  ::pcp::testing::AddLayerNormBackward(b, c);
  return Built(b);
}

// The mean cross-entropy of [B, T, V] logits (pcp/models/cross_entropy.h) and, with
// `gradient`, also its gradient as autodiff builds it.
Function CrossEntropy(int64_t v, bool gradient) {
  FunctionBuilder b("cross_entropy");
  ValueId logits = b.Parameter(F32({kB, kT, v}), "logits");
  ValueId targets = b.Parameter({DType::kI32, {kB, kT}}, "targets");
  b.Return({MeanCrossEntropy(b, logits, targets)});
  Function f = Built(b);
  if (!gradient) return f;
  absl::StatusOr<Function> g = BuildGradientFunction(f, {0});
  EXPECT_TRUE(g.ok()) << g.status();
  Function out = g.ok() ? *std::move(g) : Function{};
  EXPECT_TRUE(RunStandardPasses(out).ok());
  return out;
}

// sum(w * layer_norm(x) or softmax(x)) and its gradient in x and w, as autodiff builds it.
Function GradientOf(int64_t c, bool layer_norm) {
  FunctionBuilder b(layer_norm ? "layer_norm_vjp" : "softmax_vjp");
  const Shape s = {kB, kT, c};
  ValueId x = b.Parameter(F32(s), "x"), w = b.Parameter(F32(s), "w");
  ValueId y = kNoValue;
  if (layer_norm) {
    const ::pcp::testing::LayerNormStats st = ::pcp::testing::AddLayerNormStats(b, x, s);
    y = b.Mul(st.centered, b.BroadcastInDim(st.rstd, s, {0, 1}));
  } else {
    y = SoftmaxRows(b, x, s);
  }
  b.Return({b.ReduceSum(b.Mul(y, w), {0, 1, 2})});
  Function f = Built(b);
  absl::StatusOr<Function> g = BuildGradientFunction(f, {0, 1});
  EXPECT_TRUE(g.ok()) << g.status();
  Function out = g.ok() ? *std::move(g) : Function{};
  EXPECT_TRUE(RunStandardPasses(out).ok());
  return out;
}

TEST(VulkanRowKernelTest, SoftmaxIsOneDispatch) {
  PCP_BACKENDS_OR_SKIP(b);
  for (int64_t c : kRowLengths) {
    SCOPED_TRACE(::testing::Message() << "rows of " << c);
    CheckRows(*b, Softmax(c), 1);
  }
}

TEST(VulkanRowKernelTest, MaskedSoftmaxIsOneDispatch) {
  PCP_BACKENDS_OR_SKIP(b);
  for (int64_t t : {int64_t{9}, int64_t{33}, int64_t{300}}) {
    SCOPED_TRACE(::testing::Message() << "rows of " << t);
    CheckRows(*b, MaskedSoftmax(t), 1);
  }
}

// More rows than a dispatch has work groups (65535): each group loops over further rows.
TEST(VulkanRowKernelTest, RowsBeyondOneDispatchOfGroups) {
  PCP_BACKENDS_OR_SKIP(b);
  const Shape s = {65600, 64};
  FunctionBuilder fb("softmax_many_rows");
  fb.Return({SoftmaxRows(fb, fb.Parameter(F32(s)), s)});
  const Function f = Built(fb);
  const Compiled rows = CompileOn(*b->with, f);
  EXPECT_EQ(rows.schedule.dispatches, 1);
  const std::vector<Tensor> args = {RandomTensor(F32(s), 7, -3, 3)};
  absl::StatusOr<std::vector<Tensor>> want = Interpret(f, args);
  ASSERT_TRUE(want.ok()) << want.status();
  const std::vector<Tensor> got = RunTwice(*b->with, rows, args);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(TensorsNear(got[0], (*want)[0], 1e-4, 1e-5));
}

TEST(VulkanRowKernelTest, LayerNormForwardIsOneDispatch) {
  PCP_BACKENDS_OR_SKIP(b);
  for (int64_t c : kRowLengths) {
    SCOPED_TRACE(::testing::Message() << "rows of " << c);
    CheckRows(*b, LayerNormForward(c), 1);
  }
}

TEST(VulkanRowKernelTest, LayerNormBackwardIsOneDispatch) {
  PCP_BACKENDS_OR_SKIP(b);
  for (int64_t c : kRowLengths) {
    SCOPED_TRACE(::testing::Message() << "rows of " << c);
    CheckRows(*b, LayerNormBackward(c), 1);
  }
}

// The loss's row part (max, sum of exp) is one dispatch, the mean over all rows another; or,
// where that sum over all B x T x V picked logits is longer than 4096, a split reduction (two
// dispatches, kernel_plan.h) and the scale by -1 / (B T) in a kernel of its own.
TEST(VulkanRowKernelTest, CrossEntropyRows) {
  PCP_BACKENDS_OR_SKIP(b);
  for (int64_t v : kRowLengths) {
    SCOPED_TRACE(::testing::Message() << "vocabulary " << v);
    CheckRows(*b, CrossEntropy(v, /*gradient=*/false), kB * kT * v > 4096 ? 4 : 2);
  }
}

// Gradients as autodiff writes them (broadcasts' rules reduce, reductions' rules broadcast):
// fewer dispatches than without row kernels, near the interpreter.
TEST(VulkanRowKernelTest, AutodiffGradients) {
  PCP_BACKENDS_OR_SKIP(b);
  for (int64_t c : {int64_t{1}, int64_t{17}, int64_t{65}, int64_t{700}}) {
    SCOPED_TRACE(::testing::Message() << "rows of " << c);
    {
      SCOPED_TRACE("cross-entropy");
      CheckRows(*b, CrossEntropy(c, /*gradient=*/true), 8);
    }
    {
      SCOPED_TRACE("softmax");
      CheckRows(*b, GradientOf(c, /*layer_norm=*/false), 8);
    }
    {
      SCOPED_TRACE("layer norm");
      CheckRows(*b, GradientOf(c, /*layer_norm=*/true), 8);
    }
  }
}

// Relative to each tensor's scale, as GptTrainStepMatchesCpuBackend (vulkan_backend_test.cc).
double ScaledError(const Tensor& got, const Tensor& want) {
  double scale = 0;
  for (double x : ::pcp::testing::ToDoubles(want)) scale = std::max(scale, std::abs(x));
  return MaxRelativeError(got, want, scale);
}

// The GPT train step and its forward: fewer dispatches with row kernels than without, the
// same results within the tolerance the Vulkan GPT test holds the backend to against the CPU.
TEST(VulkanRowKernelTest, GptTrainStepInFewerDispatches) {
  PCP_BACKENDS_OR_SKIP(b);
  // The case GptTrainStepMatchesCpuBackend compares the Vulkan and CPU backends on.
  absl::StatusOr<::pcp::testing::GptComparisonCase> c = ::pcp::testing::GptBackendComparisonCase();
  ASSERT_TRUE(c.ok()) << c.status();
  const Function* forward = &c->forward;
  const Function* step = &c->step;
  const std::vector<NamedTensor>* init = &c->init;
  const std::vector<Tensor>& args = c->args;

  const Compiled rows = CompileOn(*b->with, *step);
  const Compiled plain = CompileOn(*b->without, *step);
  EXPECT_GT(rows.schedule.row_kernels, 0);
  EXPECT_LT(rows.schedule.dispatches, plain.schedule.dispatches);
  const std::vector<Tensor> got = RunTwice(*b->with, rows, args);
  const std::vector<Tensor> got_plain = RunTwice(*b->without, plain, args);
  ASSERT_EQ(got.size(), step->results.size());
  ASSERT_EQ(got_plain.size(), step->results.size());
  const float loss = got.back().data<float>()[0], plain_loss = got_plain.back().data<float>()[0];
  EXPECT_NEAR(loss, plain_loss, 1e-4 * std::abs(plain_loss));
  double worst = 0;
  for (size_t i = 0; i + 1 < got.size(); ++i) {
    const double err = ScaledError(got[i], got_plain[i]);
    worst = std::max(worst, err);
    EXPECT_LE(err, 1e-4) << step->result_names[i];
  }

  // The forward alone (the loss).
  std::vector<Tensor> forward_args;
  for (const NamedTensor& p : *init) forward_args.push_back(p.tensor);
  forward_args.push_back(args[args.size() - 2]);
  forward_args.push_back(args.back());
  ASSERT_EQ(forward_args.size(), forward->params.size());
  const Compiled rows_fwd = CompileOn(*b->with, *forward);
  const Compiled plain_fwd = CompileOn(*b->without, *forward);
  EXPECT_LT(rows_fwd.schedule.dispatches, plain_fwd.schedule.dispatches);
  const std::vector<Tensor> got_fwd = RunTwice(*b->with, rows_fwd, forward_args);
  ASSERT_FALSE(got_fwd.empty());
  absl::StatusOr<std::vector<Tensor>> want = Interpret(*forward, forward_args);
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_TRUE(TensorsNear(got_fwd[0], (*want)[0], 1e-4, 1e-5));
  std::printf(
      "GPT train step: %d dispatches with row kernels (%d of them row kernels), %d without; forward %d vs %d; "
      "loss %.7f vs %.7f, max scaled difference of the updated state %.3g\n",
      rows.schedule.dispatches, rows.schedule.row_kernels, plain.schedule.dispatches, rows_fwd.schedule.dispatches,
      plain_fwd.schedule.dispatches, loss, plain_loss, worst);
}

}  // namespace
}  // namespace pcp
