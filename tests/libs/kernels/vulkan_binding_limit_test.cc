// The Vulkan backend keeps every kernel within the device's storage-buffer limit
// (maxPerStageDescriptorStorageBuffers, 32 on lavapipe; kernel_plan.h): elementwise sums of
// more distinct f32 parameters than the limit (a chain, a balanced tree, one under a reduction,
// one read by a product) run, with and without row kernels, match the reference interpreter,
// and no kernel binds more than the limit (GetVulkanSchedule). Before the planner kept to it,
// the 48-parameter chain became one kernel of 49 bindings, which lavapipe could not run. Cases
// skip without a Vulkan device; the planner's cases (limits of 4 to 32 on the generated
// sources' bindings, and the error for one instruction over the limit) need none.
#include <algorithm>
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

namespace pcp {
namespace {

using ::pcp::testing::RandomTensor;
using ::pcp::testing::TensorsNear;

TensorType F32(Shape s) { return {DType::kF32, std::move(s)}; }

enum class SumShape { kChain, kTree, kReducedChain, kProduct };

// n distinct {6, 9} parameters summed elementwise: as a left-leaning chain, as a balanced tree
// (with exp on every fourth leaf), the chain reduced over its rows, or the chain times the
// tree of the same parameters (a kernel reading both).
Function Sum(int n, SumShape shape) {
  FunctionBuilder b("sum_" + std::to_string(n));
  std::vector<ValueId> p;
  for (int i = 0; i < n; ++i) p.push_back(b.Parameter(F32({6, 9}), "p" + std::to_string(i)));
  auto chain = [&] {
    ValueId s = p[0];
    for (int i = 1; i < n; ++i) s = b.Add(s, p[static_cast<size_t>(i)]);
    return s;
  };
  auto tree = [&] {
    std::vector<ValueId> level;
    for (int i = 0; i < n; ++i)
      level.push_back(i % 4 == 0 ? b.Exp(p[static_cast<size_t>(i)]) : p[static_cast<size_t>(i)]);
    while (level.size() > 1) {
      std::vector<ValueId> next;
      for (size_t i = 0; i + 1 < level.size(); i += 2) next.push_back(b.Add(level[i], level[i + 1]));
      if (level.size() % 2 == 1) next.push_back(level.back());
      level = std::move(next);
    }
    return level[0];
  };
  switch (shape) {
    case SumShape::kChain: b.Return({chain()}); break;
    case SumShape::kTree: b.Return({tree()}); break;
    case SumShape::kReducedChain: b.Return({b.ReduceSum(chain(), {1})}); break;
    case SumShape::kProduct: b.Return({b.Mul(chain(), tree())}); break;
  }
  absl::StatusOr<Function> f = b.Build();
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *std::move(f) : Function{};
}

struct Outcome {
  std::vector<Tensor> results;
  VulkanSchedule schedule;
};

Outcome CompileAndRun(Backend& backend, const Function& f, const std::vector<Tensor>& args) {
  Outcome o;
  absl::StatusOr<std::unique_ptr<Executable>> exe = backend.Compile(f);
  EXPECT_TRUE(exe.ok()) << f.name << ": " << exe.status();
  if (!exe.ok()) return o;
  absl::StatusOr<VulkanSchedule> schedule = GetVulkanSchedule(**exe);
  EXPECT_TRUE(schedule.ok()) << schedule.status();
  if (schedule.ok()) o.schedule = *schedule;
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<Buffer*> in, out;
  for (const Tensor& a : args) {
    absl::StatusOr<std::unique_ptr<Buffer>> buf = backend.Allocate({a.dtype(), a.shape()});
    EXPECT_TRUE(buf.ok() && backend.CopyIn(a, **buf).ok());
    if (!buf.ok()) return o;
    in.push_back(buf->get());
    owned.push_back(*std::move(buf));
  }
  for (ValueId r : f.results) {
    absl::StatusOr<std::unique_ptr<Buffer>> buf = backend.Allocate(f.type(r));
    EXPECT_TRUE(buf.ok()) << buf.status();
    if (!buf.ok()) return o;
    out.push_back(buf->get());
    owned.push_back(*std::move(buf));
  }
  absl::Status s = (*exe)->Run(in, out);
  EXPECT_TRUE(s.ok()) << f.name << ": " << s;
  if (!s.ok()) return o;
  for (Buffer* b : out) {
    absl::StatusOr<Tensor> t = backend.CopyOut(*b);
    EXPECT_TRUE(t.ok()) << t.status();
    if (t.ok()) o.results.push_back(*std::move(t));
  }
  return o;
}

void CheckAgainstInterpreter(bool row_kernels) {
  absl::StatusOr<std::unique_ptr<Backend>> backend = CreateVulkanBackend({.row_kernels = row_kernels});
  if (!backend.ok()) GTEST_SKIP() << "no Vulkan device: " << backend.status();
  // The device's limit, then enough parameters to pass it (at least 48, as lavapipe's 32 needs).
  const Outcome probe =
      CompileAndRun(**backend, Sum(2, SumShape::kChain), {RandomTensor(F32({6, 9}), 1), RandomTensor(F32({6, 9}), 2)});
  const int limit = probe.schedule.binding_limit;
  ASSERT_GT(limit, 3);
  const int n = std::max(48, std::min(limit + 16, 256));
  std::vector<Tensor> args;
  for (int i = 0; i < n; ++i) args.push_back(RandomTensor(F32({6, 9}), 100 + static_cast<uint64_t>(i)));
  for (SumShape shape : {SumShape::kChain, SumShape::kTree, SumShape::kReducedChain, SumShape::kProduct}) {
    const Function f = Sum(n, shape);
    SCOPED_TRACE(f.name + " shape " + std::to_string(static_cast<int>(shape)) + " row kernels " +
                 std::to_string(row_kernels));
    absl::StatusOr<std::vector<Tensor>> expected = Interpret(f, args);
    ASSERT_TRUE(expected.ok()) << expected.status();
    const Outcome got = CompileAndRun(**backend, f, args);
    EXPECT_GT(got.schedule.max_bindings, 0);
    EXPECT_LE(got.schedule.max_bindings, limit) << "a kernel binds more storage buffers than the device allows";
    ASSERT_EQ(got.results.size(), expected->size());
    for (size_t i = 0; i < got.results.size(); ++i) {
      EXPECT_TRUE(TensorsNear(got.results[i], (*expected)[i], 1e-5, 1e-5));
    }
  }
}

// Every kernel of the plan, as generated, binds at most `limit` buffers (its inputs and
// outputs), and the plan is the same on a second planning (deterministic).
TEST(VulkanBindingLimitTest, PlannerKeepsEveryKernelWithinSmallLimits) {
  for (int limit : {4, 5, 6, 9, 32}) {
    for (SumShape shape : {SumShape::kChain, SumShape::kTree, SumShape::kReducedChain, SumShape::kProduct}) {
      const Function f = Sum(48, shape);
      SCOPED_TRACE(::testing::Message() << "limit " << limit << " shape " << static_cast<int>(shape));
      absl::StatusOr<vulkan::KernelPlan> plan = vulkan::PlanKernels(f, {.max_bindings = limit});
      ASSERT_TRUE(plan.ok()) << plan.status();
      absl::StatusOr<vulkan::KernelPlan> again = vulkan::PlanKernels(f, {.max_bindings = limit});
      ASSERT_TRUE(again.ok()) << again.status();
      EXPECT_EQ(plan->materialized, again->materialized);
      for (const vulkan::PlannedKernel& k : plan->kernels) {
        absl::StatusOr<vulkan::KernelSource> src = vulkan::KernelSourceFor(f, *plan, k);
        ASSERT_TRUE(src.ok()) << src.status();
        EXPECT_LE(src->bindings(vulkan::OutputsOf(k).size()), static_cast<size_t>(limit)) << src->name;
      }
    }
  }
}

// One instruction reading more distinct buffers than the limit cannot be split: an error, not a
// kernel the driver cannot run.
TEST(VulkanBindingLimitTest, InstructionOverTheLimitIsAnError) {
  FunctionBuilder b("concatenate_many");
  std::vector<ValueId> p;
  for (int i = 0; i < 8; ++i) p.push_back(b.Parameter(F32({2, 3}), "p" + std::to_string(i)));
  b.Return({b.Concatenate(p, 0)});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(vulkan::PlanKernels(*f, {.max_bindings = 4}).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(vulkan::PlanKernels(*f, {.max_bindings = 9}).ok());
}

TEST(VulkanBindingLimitTest, ManyParameterSumsFitTheDeviceLimit) { CheckAgainstInterpreter(true); }

TEST(VulkanBindingLimitTest, ManyParameterSumsFitTheDeviceLimitWithoutRowKernels) { CheckAgainstInterpreter(false); }

}  // namespace
}  // namespace pcp
