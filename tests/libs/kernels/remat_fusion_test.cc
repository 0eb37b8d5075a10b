// The CPU backend on a rematerialised train step (pcp/autodiff/remat.h): the same bits as
// without, a smaller arena, and each recomputed GELU in the backward kernel that computes
// GELU's derivative (never a kernel of its own, never in the forward kernel of its original).
// The pass is not GPT-specific: the exported PyTorch models in examples/stablehlo get it too.
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cpu_run.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/passes.h"
#include "pcp/autodiff/remat.h"
#include "pcp/autodiff/train_step.h"
#include "pcp/kernels/cpu_backend.h"
#include "pcp/models/stablehlo_model.h"
#include "train_step_args.h"

namespace pcp {
namespace {

using ::pcp::testing::AllSameBitsOrBothNaN;
using ::pcp::testing::CountOf;
using ::pcp::testing::CpuRun;
using ::pcp::testing::RunOnCpu;

int64_t ArenaBytes(const Function& f) {
  std::unique_ptr<Backend> cpu = CreateCpuBackend({.threads = 1});
  absl::StatusOr<std::unique_ptr<Executable>> exe = cpu->Compile(f);
  EXPECT_TRUE(exe.ok()) << exe.status();
  return exe.ok() ? dynamic_cast<const CpuExecutable*>(exe->get())->stats().arena_bytes : 0;
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
      if (CountOf(kernel, "exponential(") > 0) {
        EXPECT_GE(Stores(kernel), 2) << kernel;
      }
    }
    EXPECT_EQ(kernels_with_erf, 2 * 2) << b.schedule;
  }
}

// Train steps of the modules PyTorch exported (examples/stablehlo: nanoGPT with tanh GELU,
// Llama with RMSNorm and SwiGLU), imported as jobs import them.
class RematExportedTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RematExportedTest, ExportedModelsGiveTheSameBitsWithASmallerArena) {
  const std::string path = absl::StrCat(PCP_SOURCE_DIR, "/examples/stablehlo/", GetParam());
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<ImportedModel> model = ImportStableHloModel(text.str(), path, {});
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<Function> step = BuildTrainStep(model->forward, AdamWConfig{.weight_decay = 0.1, .grad_clip = 1.0});
  ASSERT_TRUE(step.ok()) << step.status();
  Function plain = *std::move(step);
  ASSERT_TRUE(RunStandardPasses(plain).ok());
  Function remat = plain;
  // Small models: a use is far 32 KiB of products later.
  absl::StatusOr<RematStats> stats = Rematerialize(remat, RematOptions{.min_reuse_bytes = 32 << 10});
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_GT(stats->values, 0);
  EXPECT_LT(stats->peak_after, stats->peak_before);
  EXPECT_LT(ArenaBytes(remat), ArenaBytes(plain));

  // params (small random), m and v (zeros), step 1, lr, tokens and targets in [0, 8).
  std::vector<Tensor> args;
  const size_t n = static_cast<size_t>(NumModelParams(static_cast<int>(model->forward.params.size())));
  for (size_t i = 0; i < n; ++i) args.push_back(testing::RandomTensor(plain.type(plain.params[i]), 11 + i, -0.2, 0.2));
  for (size_t i = n; i < 3 * n; ++i) args.push_back(Tensor(DType::kF32, plain.type(plain.params[i]).shape));
  args.push_back(Tensor::Scalar<float>(1.0f));
  args.push_back(Tensor::Scalar<float>(1e-3f));
  for (size_t i = 3 * n + 2; i < plain.params.size(); ++i) {
    args.push_back(testing::RandomTensor(plain.type(plain.params[i]), 5 + i, 0, 8));
  }
  for (int threads : {1, 2}) {
    const CpuRun a = RunOnCpu(plain, args, {.threads = threads});
    const CpuRun b = RunOnCpu(remat, args, {.threads = threads});
    EXPECT_TRUE(AllSameBitsOrBothNaN(a.results, b.results)) << threads << " threads";
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, RematExportedTest, ::testing::Values("nanogpt_2l.mlir", "llama_2l.mlir"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param.substr(0, info.param.find('_'));
                         });

}  // namespace
}  // namespace pcp
