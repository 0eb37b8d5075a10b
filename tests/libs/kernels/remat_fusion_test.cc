// The CPU backend on a rematerialised train step (pcp/autodiff/remat.h): the same bits as
// without, a smaller arena, and each recomputed GELU in the backward kernel that computes
// GELU's derivative (never a kernel of its own, never in the forward kernel of its original).
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/passes.h"
#include "pcp/autodiff/remat.h"
#include "pcp/kernels/cpu_backend.h"
#include "cpu_run.h"
#include "train_step_args.h"

namespace pcp {
namespace {

using ::pcp::testing::AllSameBitsOrBothNaN;
using ::pcp::testing::CpuRun;
using ::pcp::testing::RunOnCpu;

int64_t ArenaBytes(const Function& f) {
  std::unique_ptr<Backend> cpu = CreateCpuBackend({.threads = 1});
  absl::StatusOr<std::unique_ptr<Executable>> exe = cpu->Compile(f);
  EXPECT_TRUE(exe.ok()) << exe.status();
  return exe.ok() ? dynamic_cast<const CpuExecutable*>(exe->get())->stats().arena_bytes : 0;
}

int CountOf(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// The count after "stores " in a fused kernel's description.
int Stores(const std::string& kernel) {
  const size_t at = kernel.find("stores ");
  return at == std::string::npos ? 0 : std::atoi(kernel.c_str() + at + 7);
}

TEST(RematFusionTest, RematerialisedGptStepGivesTheSameBitsWithASmallerArena) {
  absl::StatusOr<testing::GptTrainStep> step = testing::SmallGptTrainStep();  // 2 layers
  ASSERT_TRUE(step.ok()) << step.status();
  Function plain = step->step;
  ASSERT_TRUE(RunStandardPasses(plain).ok());
  Function remat = plain;
  // The model is small: a use is far 16 KiB of products later (its fc output is 24 KiB).
  absl::StatusOr<RematStats> stats = Rematerialize(remat, RematOptions{.min_reuse_bytes = 16 << 10});
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_GT(stats->values, 0);

  EXPECT_LT(ArenaBytes(remat), ArenaBytes(plain));
  for (int threads : {1, 2}) {
    const CpuRun a = RunOnCpu(plain, step->args, {.threads = threads});
    const CpuRun b = RunOnCpu(remat, step->args, {.threads = threads});
    EXPECT_TRUE(AllSameBitsOrBothNaN(a.results, b.results)) << threads << " threads";
    // erf runs in two kernels per layer, once in each: the forward GELU, and the backward
    // kernel that computes its derivative (exp) together with the recomputed output.
    int kernels_with_erf = 0;
    for (absl::string_view line : absl::StrSplit(b.schedule, '\n')) {
      const std::string kernel(line);
      const int erfs = CountOf(kernel, "erf(");
      if (erfs == 0) continue;
      ++kernels_with_erf;
      EXPECT_EQ(erfs, 1) << kernel;
      if (CountOf(kernel, "exponential(") > 0) EXPECT_GE(Stores(kernel), 2) << kernel;
    }
    EXPECT_EQ(kernels_with_erf, 2 * 2) << b.schedule;
  }
}

}  // namespace
}  // namespace pcp
