// Fused attention on the Vulkan backend (pcp/autodiff/attention.h, attention_source.cc). On
// the plan, without a device: a fused train step runs each attention op as one kernel and
// materializes no block x block tensor (the decomposed step does), and the GPU run's models
// write fewer bytes per step (printed); an attention group runs the forward and the backward's
// lse as one kernel. On a device (skipped without one): groups keep the bits, and the fused
// bf16 train step's loss matches the CPU backend's, which runs the ops' StableHLO expansion.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernel_plan.h"  // libs/kernels/vulkan/src: the planner, without a device
#include "pcp/kernels/cpu_backend.h"
#include "pcp/kernels/vulkan_backend.h"
#include "pcp/testing/tensor_testing.h"
#include "pcp/training/gpt_program.h"
#include "train_step_args.h"
#include "vulkan_compiled.h"

namespace pcp {
namespace {

absl::StatusOr<GptProgram> Program(const GPTConfig& config, int64_t batch, Precision precision,
                                   AttentionMode attention) {
  return BuildGptProgram(config, batch,
                         AdamWConfig{.beta1 = 0.9, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.1, .grad_clip = 1.0},
                         GptProgramOptions{.precision = precision, .attention = attention});
}

// Block 24, heads 16 wide: a [.., 24, 24] tensor is the attention's.
const GPTConfig kSmall{.vocab_size = 65, .block_size = 24, .n_layer = 2, .n_head = 2, .n_embd = 32, .bias = true};

struct PlanFigures {
  int64_t bytes = 0;          // written by the kernels per run
  int64_t square_bytes = 0;   // of it, outputs whose last two dimensions are block x block
  int attention_kernels = 0;  // KernelKind::kAttention
  int attention_groups = 0;   // of them, forward + lse kernels (two outputs)
};

PlanFigures Figures(const Function& f, int64_t block, bool attention_groups = true) {
  PlanFigures fig;
  absl::StatusOr<vulkan::KernelPlan> plan =
      vulkan::PlanKernels(f, {.half_moves = true, .attention_groups = attention_groups});
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return fig;
  for (const vulkan::PlannedKernel& k : plan->kernels) {
    fig.attention_kernels += k.kind == vulkan::KernelKind::kAttention ? 1 : 0;
    fig.attention_groups += k.kind == vulkan::KernelKind::kAttention && k.outputs.size() == 2 ? 1 : 0;
    for (ValueId v : vulkan::OutputsOf(k)) {
      const TensorType& t = f.type(v);
      const int64_t bytes = t.num_elements() * SizeOf(t.dtype);
      fig.bytes += bytes;
      if (t.rank() >= 2 && t.shape[t.shape.size() - 1] == block && t.shape[t.shape.size() - 2] == block) {
        fig.square_bytes += bytes;
      }
    }
  }
  return fig;
}

TEST(VulkanAttentionPlanTest, FusedStepStoresNoScoreMatrix) {
  for (Precision p : {Precision::kF32, Precision::kBF16}) {
    SCOPED_TRACE(std::string(PrecisionName(p)));
    absl::StatusOr<GptProgram> decomposed = Program(kSmall, 4, p, AttentionMode::kDecomposed);
    absl::StatusOr<GptProgram> fused = Program(kSmall, 4, p, AttentionMode::kFused);
    ASSERT_TRUE(decomposed.ok() && fused.ok()) << decomposed.status() << fused.status();
    const PlanFigures before = Figures(decomposed->train_step, kSmall.block_size);
    const PlanFigures after = Figures(fused->train_step, kSmall.block_size);
    EXPECT_EQ(before.attention_kernels, 0);
    EXPECT_GT(before.square_bytes, 0);
    // Per layer: the forward, which also writes the backward's lse (an attention group), and
    // the three gradient parts; without groups lse has a kernel of its own.
    EXPECT_EQ(after.attention_kernels, 4 * kSmall.n_layer);
    EXPECT_EQ(after.attention_groups, kSmall.n_layer);
    const PlanFigures apart = Figures(fused->train_step, kSmall.block_size, /*attention_groups=*/false);
    EXPECT_EQ(apart.attention_kernels, 5 * kSmall.n_layer);
    EXPECT_EQ(apart.attention_groups, 0);
    EXPECT_EQ(after.square_bytes, 0);
    // Evaluation: one kernel per layer.
    EXPECT_EQ(Figures(fused->eval_loss, kSmall.block_size).attention_kernels, kSmall.n_layer);
  }
}

// The GPU run's two models in bf16: the bytes the step's kernels write with the attention
// decomposed and fused.
TEST(VulkanAttentionPlanTest, GpuModelsWriteFewerBytes) {
  for (const ::pcp::testing::GpuRunModel& m : ::pcp::testing::GpuRunModels()) {
    absl::StatusOr<GptProgram> decomposed = Program(m.config, m.batch, Precision::kBF16, AttentionMode::kDecomposed);
    absl::StatusOr<GptProgram> fused = Program(m.config, m.batch, Precision::kBF16, AttentionMode::kFused);
    ASSERT_TRUE(decomposed.ok() && fused.ok()) << decomposed.status() << fused.status();
    const PlanFigures before = Figures(decomposed->train_step, m.config.block_size);
    const PlanFigures after = Figures(fused->train_step, m.config.block_size);
    EXPECT_EQ(after.square_bytes, 0);
    EXPECT_LT(after.bytes, before.bytes);
    std::printf("bf16 train step, %s: kernels write %.1f GB per step with fused attention, %.1f decomposed (%.2fx)\n",
                m.name, after.bytes / 1e9, before.bytes / 1e9,
                static_cast<double>(before.bytes) / static_cast<double>(after.bytes));
  }
}

// An attention group's lse is the lse kernel's, bit for bit: the fused f32 step gives the same
// bits with and without groups, with one dispatch less per layer.
TEST(VulkanAttentionTest, AttentionGroupsGiveTheSameBits) {
  absl::StatusOr<BackendPair> vk = CreateBackendPair({.attention_groups = false});
  if (!vk.ok()) GTEST_SKIP() << "no Vulkan device: " << vk.status();
  absl::StatusOr<GptProgram> program = Program(kSmall, 4, Precision::kF32, AttentionMode::kFused);
  ASSERT_TRUE(program.ok()) << program.status();
  absl::StatusOr<std::vector<NamedTensor>> init = InitGptParams(kSmall, 11);
  ASSERT_TRUE(init.ok()) << init.status();
  const std::vector<Tensor> args = ::pcp::testing::TrainStepArgs(*init, 1e-3f, 4, kSmall.block_size, 65, 3);
  Compiled with = CompileOn(*vk->with, program->train_step);
  Compiled without = CompileOn(*vk->without, program->train_step);
  ASSERT_NE(with.exe, nullptr);
  ASSERT_NE(without.exe, nullptr);
  EXPECT_EQ(with.schedule.dispatches + kSmall.n_layer, without.schedule.dispatches);
  EXPECT_TRUE(SameBits(RunTwice(*vk->with, with, args), RunTwice(*vk->without, without, args)));
}

TEST(VulkanAttentionTest, FusedBf16StepMatchesCpu) {
  absl::StatusOr<std::unique_ptr<Backend>> vulkan = CreateVulkanBackend({});
  if (!vulkan.ok()) GTEST_SKIP() << "no Vulkan device: " << vulkan.status();
  absl::StatusOr<GptProgram> program = Program(kSmall, 4, Precision::kBF16, AttentionMode::kFused);
  ASSERT_TRUE(program.ok()) << program.status();
  absl::StatusOr<std::vector<NamedTensor>> init = InitGptParams(kSmall, 11);
  ASSERT_TRUE(init.ok()) << init.status();
  const std::vector<Tensor> args = ::pcp::testing::TrainStepArgs(*init, 1e-3f, 4, kSmall.block_size, 65, 3);
  Compiled c = CompileOn(**vulkan, program->train_step);
  ASSERT_NE(c.exe, nullptr);
  const std::vector<Tensor> got = RunTwice(**vulkan, c, args);
  std::unique_ptr<Backend> cpu = CreateCpuBackend({.threads = 2});
  const std::vector<Tensor> want = RunOnce(*cpu, program->train_step, args);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_FALSE(got.empty());
  // The loss (the last result): the backends order the attention's f32 sums differently, and
  // a value on a bf16 rounding boundary may round either way.
  EXPECT_TRUE(::pcp::testing::TensorsNear(got.back(), want.back(), 2e-3, 0)) << "loss";
}

}  // namespace
}  // namespace pcp
