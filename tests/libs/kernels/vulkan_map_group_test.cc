// The Vulkan backend's map groups (libs/kernels/vulkan/src/kernel_groups.h): elementwise
// kernels of one shape that read each other in place become one kernel with several outputs.
// Without a device, on the plan: AdamW's update of a parameter (the scaled gradient, both
// moments, the parameter) is one kernel with three outputs instead of four kernels; a value
// read through a transpose stays out of its reader's group; two kernels with a reduction
// between them (a path through another kernel) do not merge. On a device (skipped without one):
// the same updates against the interpreter for shapes that are not multiples of a work group, a
// group writing a boolean and a float over more elements than a dispatch's groups, the same bits
// on a second run, and the GPT train step in fewer dispatches than without map groups, results
// equal within the Vulkan GPT test's tolerance.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernel_plan.h"     // libs/kernels/vulkan/src: the planner, without a device
#include "kernel_sources.h"  // libs/kernels/vulkan/src
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/kernels/vulkan_backend.h"
#include "pcp/testing/tensor_testing.h"
#include "train_step_args.h"
#include "vulkan_compiled.h"

namespace pcp {
namespace {

using ::pcp::testing::MaxRelativeError;
using ::pcp::testing::RandomTensor;
using ::pcp::testing::TensorsNear;

TensorType F32(Shape s) { return {DType::kF32, std::move(s)}; }

// AdamW's step for one parameter as the train step builds it, in small: g = dW × clip (two
// readers, so PlanKernels materializes it), m' = β1 m + (1 − β1) g, v' = β2 v + (1 − β2) g²,
// θ' = θ − lr (m' / (√v' + ε) + wd θ). Parameters (θ, m, v, dW, clip, lr); results (θ', m', v').
Function AdamWUpdate(const Shape& shape) {
  FunctionBuilder b("adamw_update");
  const ValueId theta = b.Parameter(F32(shape), "theta");
  const ValueId m = b.Parameter(F32(shape), "m");
  const ValueId v = b.Parameter(F32(shape), "v");
  const ValueId dw = b.Parameter(F32(shape), "dw");
  const ValueId clip = b.Parameter(F32({}), "clip");
  const ValueId lr = b.Parameter(F32({}), "lr");
  auto k = [&](double x) { return b.BroadcastTo(b.ScalarConstant(x), shape); };
  const ValueId g = b.Mul(dw, b.BroadcastTo(clip, shape));
  const ValueId m2 = b.Add(b.Mul(k(0.9), m), b.Mul(k(0.1), g));
  const ValueId v2 = b.Add(b.Mul(k(0.99), v), b.Mul(k(0.01), b.Mul(g, g)));
  const ValueId step = b.Add(b.Div(m2, b.Add(b.Sqrt(v2), k(1e-8))), b.Mul(k(0.1), theta));
  const ValueId theta2 = b.Sub(theta, b.Mul(b.BroadcastTo(lr, shape), step));
  b.Return({theta2, m2, v2});
  absl::StatusOr<Function> f = b.Build();
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *std::move(f) : Function{};
}

std::vector<Tensor> AdamWArgs(const Shape& shape) {
  return {RandomTensor(F32(shape), 1),           RandomTensor(F32(shape), 2),
          RandomTensor(F32(shape), 3, 0.0, 1.0),  // v >= 0
          RandomTensor(F32(shape), 4),           RandomTensor(F32({}), 5, 0.5, 1.0),
          RandomTensor(F32({}), 6, 1e-3, 1e-2)};
}

std::vector<vulkan::KernelKind> Kinds(const vulkan::KernelPlan& plan) {
  std::vector<vulkan::KernelKind> kinds;
  for (const vulkan::PlannedKernel& k : plan.kernels) kinds.push_back(k.kind);
  return kinds;
}

TEST(VulkanMapGroupPlanTest, AdamWUpdateOfAParameterIsOneKernelWithThreeOutputs) {
  const Function f = AdamWUpdate({37, 5});
  absl::StatusOr<vulkan::KernelPlan> grouped = vulkan::PlanKernels(f, {});
  ASSERT_TRUE(grouped.ok()) << grouped.status();
  absl::StatusOr<vulkan::KernelPlan> plain = vulkan::PlanKernels(f, {.map_groups = false});
  ASSERT_TRUE(plain.ok()) << plain.status();
  // Without: g, m', v' and θ' each a kernel, g and the moments written and read back.
  EXPECT_EQ(plain->kernels.size(), 4u);
  ASSERT_EQ(grouped->kernels.size(), 1u);
  const vulkan::PlannedKernel& k = grouped->kernels[0];
  EXPECT_EQ(k.kind, vulkan::KernelKind::kMapGroup);
  EXPECT_EQ(k.members.size(), 4u);
  // The results; g, which nothing outside reads, stays in registers.
  std::vector<ValueId> outputs = k.outputs, results = f.results;
  std::sort(outputs.begin(), outputs.end());
  std::sort(results.begin(), results.end());
  EXPECT_EQ(outputs, results);
  absl::StatusOr<vulkan::KernelSource> src = vulkan::KernelSourceFor(f, *grouped, k);
  ASSERT_TRUE(src.ok()) << src.status();
  // It loads θ, m, v, dW, clip and lr once each.
  EXPECT_EQ(src->inputs.size(), 6u);
  EXPECT_EQ(src->bindings(k.outputs.size()), 9u);
}

// y = exp(x) has two readers: r1 = transpose(y) × 2 (not in place) and r2 = y + 1 (in place).
TEST(VulkanMapGroupPlanTest, AValueReadThroughATransposeStaysOutOfItsReadersGroup) {
  FunctionBuilder b("transposed_reader");
  const ValueId x = b.Parameter(F32({8, 8}), "x");
  const ValueId y = b.Exp(x);
  const ValueId r1 = b.Mul(b.Transpose(y, {1, 0}), b.Full(2, F32({8, 8})));
  const ValueId r2 = b.Add(y, b.Full(1, F32({8, 8})));
  b.Return({r1, r2});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<vulkan::KernelPlan> plan = vulkan::PlanKernels(*f, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->kernels.size(), 2u);
  const vulkan::PlannedKernel& group = plan->kernels[0];
  EXPECT_EQ(group.kind, vulkan::KernelKind::kMapGroup);
  EXPECT_EQ(group.outputs, (std::vector<ValueId>{y, r2}));  // y: r1's kernel reads it
  EXPECT_EQ(plan->kernels[1].kind, vulkan::KernelKind::kMap);
  EXPECT_EQ(plan->kernels[1].value, r1);
}

// y = exp(x), s = Σ y (a split reduction), z = y × s: z reads y in place, but through the
// reduction's kernel too; one kernel for y and z would have to run both before and after it.
TEST(VulkanMapGroupPlanTest, KernelsWithAnotherKernelBetweenThemDoNotMerge) {
  FunctionBuilder b("path_through_a_reduction");
  const Shape shape = {128, 64};
  const ValueId x = b.Parameter(F32(shape), "x");
  const ValueId y = b.Exp(x);
  const ValueId s = b.ReduceSum(y, {0, 1});
  const ValueId z = b.Mul(y, b.BroadcastTo(s, shape));
  b.Return({z});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<vulkan::KernelPlan> plan = vulkan::PlanKernels(*f, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(Kinds(*plan), (std::vector<vulkan::KernelKind>{vulkan::KernelKind::kMap, vulkan::KernelKind::kSplitReduce,
                                                           vulkan::KernelKind::kMap}));
}

#define PCP_BACKENDS_OR_SKIP(var)                                             \
  absl::StatusOr<BackendPair> var = CreateBackendPair({.map_groups = false}); \
  if (!var.ok()) GTEST_SKIP() << "no Vulkan device: " << var.status()

// Shapes: one element; not a multiple of the work group (256).
TEST(VulkanMapGroupTest, AdamWUpdateMatchesTheInterpreterInOneDispatch) {
  PCP_BACKENDS_OR_SKIP(b);
  for (const Shape& shape : {Shape{1}, Shape{37, 5}, Shape{3, 1000}}) {
    const Function f = AdamWUpdate(shape);
    SCOPED_TRACE(F32(shape).ToString());
    const std::vector<Tensor> args = AdamWArgs(shape);
    absl::StatusOr<std::vector<Tensor>> want = Interpret(f, args);
    ASSERT_TRUE(want.ok()) << want.status();
    const Compiled grouped = CompileOn(*b->with, f);
    const Compiled plain = CompileOn(*b->without, f);
    EXPECT_EQ(grouped.schedule.dispatches, 1);
    EXPECT_EQ(grouped.schedule.map_groups, 1);
    EXPECT_EQ(plain.schedule.dispatches, 4);
    EXPECT_EQ(plain.schedule.map_groups, 0);
    const std::vector<Tensor> got = RunTwice(*b->with, grouped, args);
    const std::vector<Tensor> got_plain = RunTwice(*b->without, plain, args);
    ASSERT_EQ(got.size(), 3u);
    ASSERT_EQ(got_plain.size(), 3u);
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE(f.result_names[i]);
      EXPECT_TRUE(TensorsNear(got[i], (*want)[i], 1e-5, 1e-6));
      EXPECT_TRUE(TensorsNear(got[i], got_plain[i], 1e-6, 1e-7));
    }
  }
}

// A group whose outputs have different dtypes: mask = x > 0 (i1, stored a byte each) and
// y = select(mask, x, 0) × 3, both results; with more elements than one dispatch's 65535 groups
// of 256 cover (the kernel loops).
TEST(VulkanMapGroupTest, OutputsOfDifferentTypesBeyondOneDispatchOfGroups) {
  PCP_BACKENDS_OR_SKIP(b);
  FunctionBuilder fb("relu_and_mask");
  const Shape shape = {65535 * 256 + 300};
  const ValueId x = fb.Parameter(F32(shape), "x");
  const ValueId mask = fb.Compare(x, fb.Full(0, F32(shape)), ComparisonDirection::kGT);
  const ValueId y = fb.Mul(fb.Select(mask, x, fb.Full(0, F32(shape))), fb.Full(3, F32(shape)));
  fb.Return({mask, y});
  absl::StatusOr<Function> f = fb.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  const std::vector<Tensor> args = {RandomTensor(F32(shape), 7)};
  absl::StatusOr<std::vector<Tensor>> want = Interpret(*f, args);
  ASSERT_TRUE(want.ok()) << want.status();
  const Compiled grouped = CompileOn(*b->with, *f);
  EXPECT_EQ(grouped.schedule.dispatches, 1);
  EXPECT_EQ(grouped.schedule.map_groups, 1);
  const std::vector<Tensor> got = RunTwice(*b->with, grouped, args);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(SameBits({got[0]}, {(*want)[0]}));
  EXPECT_TRUE(TensorsNear(got[1], (*want)[1], 1e-6, 0));
}

// The GPT train step: each parameter's update one dispatch; the updated state within the
// tolerance the Vulkan GPT test holds the backend to against the CPU (relative to each
// tensor's scale).
TEST(VulkanMapGroupTest, GptTrainStepInFewerDispatches) {
  PCP_BACKENDS_OR_SKIP(b);
  absl::StatusOr<::pcp::testing::GptComparisonCase> c = ::pcp::testing::GptBackendComparisonCase();
  ASSERT_TRUE(c.ok()) << c.status();
  const Function& step = c->step;
  const Compiled grouped = CompileOn(*b->with, step);
  const Compiled plain = CompileOn(*b->without, step);
  const int params = static_cast<int>(c->init.size());
  // At least a group per parameter's update, each saving three dispatches.
  EXPECT_GE(grouped.schedule.map_groups, params);
  EXPECT_LE(grouped.schedule.dispatches, plain.schedule.dispatches - 3 * params);
  const std::vector<Tensor> got = RunTwice(*b->with, grouped, c->args);
  const std::vector<Tensor> got_plain = RunTwice(*b->without, plain, c->args);
  ASSERT_EQ(got.size(), step.results.size());
  ASSERT_EQ(got_plain.size(), step.results.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double scale = 0;
    for (double x : ::pcp::testing::ToDoubles(got_plain[i])) scale = std::max(scale, std::abs(x));
    const double err = MaxRelativeError(got[i], got_plain[i], scale);
    worst = std::max(worst, err);
    EXPECT_LE(err, 1e-4) << step.result_names[i];
  }
  std::printf(
      "GPT train step: %d dispatches with map groups (%d of them), %d without; %d parameters; max scaled "
      "difference %.3g\n",
      grouped.schedule.dispatches, grouped.schedule.map_groups, plain.schedule.dispatches, params, worst);
}

}  // namespace
}  // namespace pcp
