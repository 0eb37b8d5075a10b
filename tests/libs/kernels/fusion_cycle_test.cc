// The CPU backend's fusion (libs/kernels/cpu/src/fusion.cc) never merges two groups that a
// path through a third connects: the merged group would both feed and need that group, a
// cycle with no valid kernel order. Regression: a path through a group that spans the program
// (an early member feeding a matrix product, a late one reading the merge's producer through
// a transpose) was pruned by position and the merge made a cycle. The backend's results must
// match the reference interpreter with every fusion option.
#include <memory>
#include <vector>

#include "cpu_run.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/testing/tensor_testing.h"

namespace pcp {
namespace {

using ::pcp::testing::RandomTensor;
using ::pcp::testing::RunOnCpu;
using ::pcp::testing::TensorsNear;

TensorType F32(Shape s) { return {DType::kF32, std::move(s)}; }

// e = exp(p0); h = e . w (its own kernel); m = -p1; l = e + transpose(m) (joins e's group, not
// m's: a transpose is not fused); t = m + h (joins m's group). Groups {e, l}, {h}, {m, t}: m
// feeds l, e feeds h, h feeds t, so {m, t} -> {e, l} -> {h} -> {m, t} would be a cycle. The
// position shortcut skipped {h} (all of it before m) when checking the path from {m} to {t}.
Function PathThroughASpanningGroup() {
  FunctionBuilder b("path_through_a_spanning_group");
  const ValueId p0 = b.Parameter(F32({8, 8}), "p0");
  const ValueId p1 = b.Parameter(F32({8, 8}), "p1");
  const ValueId w = b.Parameter(F32({8, 8}), "w");
  const ValueId e = b.Exp(p0);
  const ValueId h = b.MatMul(e, w);
  const ValueId m = b.Neg(p1);
  const ValueId l = b.Add(e, b.Transpose(m, {1, 0}));
  const ValueId t = b.Add(m, h);
  b.Return({l, t});
  absl::StatusOr<Function> f = b.Build();
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *std::move(f) : Function{};
}

TEST(FusionCycleTest, PathThroughAGroupSpanningTheMergeIsSeen) {
  const Function f = PathThroughASpanningGroup();
  const std::vector<Tensor> args = {RandomTensor(F32({8, 8}), 1), RandomTensor(F32({8, 8}), 2),
                                    RandomTensor(F32({8, 8}), 3)};
  absl::StatusOr<std::vector<Tensor>> expected = Interpret(f, args);
  ASSERT_TRUE(expected.ok()) << expected.status();
  for (bool epilogues : {true, false}) {
    for (bool expression_ops : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "epilogues " << epilogues << " expression_ops " << expression_ops);
      const testing::CpuRun run =
          RunOnCpu(f, args, {.threads = 2, .expression_ops = expression_ops, .epilogues = epilogues});
      ASSERT_EQ(run.results.size(), expected->size()) << run.schedule;
      for (size_t i = 0; i < run.results.size(); ++i) {
        EXPECT_TRUE(TensorsNear(run.results[i], (*expected)[i], 1e-5, 1e-5)) << "result " << i << "\n" << run.schedule;
      }
    }
  }
}

}  // namespace
}  // namespace pcp
