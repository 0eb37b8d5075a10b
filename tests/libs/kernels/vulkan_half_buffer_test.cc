// The Vulkan backend's half buffers (kernel_plan.h, PlanOptions::half_buffers): in a bf16 or
// f16 train step, mixed precision's rounded values that several kernels or a matmul read
// widened are kept in their 16 bits and widened where read, and each product writes its
// rounded output in 16 bits. Without a device, on the plan: no widened copy is materialized,
// the rounded values are, in 16-bit buffers, every product's kernel writes 16 bits, and a
// step's kernels write fewer bytes (printed for the test model, nanoGPT's GPU config and GPT-2
// small). On a device (skipped without one): the bf16 and f16 train steps give the same bits
// with and without half buffers, with either matmul tile.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernel_plan.h"  // libs/kernels/vulkan/src: the planner, without a device
#include "pcp/kernels/vulkan_backend.h"
#include "pcp/training/gpt_program.h"
#include "train_step_args.h"
#include "vulkan_compiled.h"

namespace pcp {
namespace {

bool IsHalf(DType d) { return d == DType::kF16 || d == DType::kBF16; }

absl::StatusOr<GptProgram> Program(const GPTConfig& config, int64_t batch, Precision precision) {
  return BuildGptProgram(config, batch,
                         AdamWConfig{.beta1 = 0.9, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.1, .grad_clip = 1.0},
                         GptProgramOptions{.precision = precision});
}

const GPTConfig kSmall{.vocab_size = 65, .block_size = 16, .n_layer = 2, .n_head = 2, .n_embd = 32, .bias = true};

// Bytes the plan's kernels write per run (their outputs).
int64_t BytesWritten(const Function& f, const vulkan::KernelPlan& plan) {
  int64_t bytes = 0;
  for (const vulkan::PlannedKernel& k : plan.kernels) {
    for (ValueId v : vulkan::OutputsOf(k)) bytes += f.type(v).num_elements() * SizeOf(f.type(v).dtype);
  }
  return bytes;
}

struct PlanFigures {
  int64_t with = 0, without = 0;        // bytes written with and without half buffers
  int half_outputs = 0;                 // 16-bit kernel outputs with them
  int products = 0, half_products = 0;  // product kernels, and those writing 16 bits
};

PlanFigures Figures(const Function& f) {
  PlanFigures fig;
  absl::StatusOr<vulkan::KernelPlan> with = vulkan::PlanKernels(f, {.half_moves = true});
  absl::StatusOr<vulkan::KernelPlan> without = vulkan::PlanKernels(f, {.half_moves = true, .half_buffers = false});
  EXPECT_TRUE(with.ok() && without.ok());
  if (!with.ok() || !without.ok()) return fig;
  fig.with = BytesWritten(f, *with);
  fig.without = BytesWritten(f, *without);
  for (const vulkan::PlannedKernel& k : with->kernels) {
    for (ValueId v : vulkan::OutputsOf(k)) fig.half_outputs += IsHalf(f.type(v).dtype) ? 1 : 0;
    if (k.kind != vulkan::KernelKind::kDot) continue;
    ++fig.products;
    fig.half_products += IsHalf(f.type(k.value).dtype) ? 1 : 0;
  }
  // No widened copy of a 16-bit value is materialized unless it is a result.
  for (const Instruction& inst : f.instructions) {
    if (inst.op != Op::kConvert || !IsHalf(f.type(inst.operands[0]).dtype)) continue;
    bool result = false;
    for (ValueId r : f.results) result |= r == inst.result;
    EXPECT_TRUE(result || !with->materialized[static_cast<size_t>(inst.result)]) << "%" << inst.result;
  }
  return fig;
}

TEST(VulkanHalfBufferPlanTest, RoundedOperandsAreKeptInSixteenBits) {
  for (Precision p : {Precision::kBF16, Precision::kF16}) {
    absl::StatusOr<GptProgram> program = Program(kSmall, 4, p);
    ASSERT_TRUE(program.ok()) << program.status();
    const PlanFigures fig = Figures(program->train_step);
    EXPECT_GT(fig.half_outputs, 0);
    EXPECT_LT(fig.with, fig.without);
    // Every product's output is rounded (mixed_precision.h): each product's kernel writes the
    // rounding, in 16 bits.
    EXPECT_GT(fig.products, 0);
    EXPECT_EQ(fig.half_products, fig.products);
    std::printf("%s train step, test model: kernels write %.3f MB per step with half buffers, %.3f without\n",
                std::string(PrecisionName(p)).c_str(), fig.with / 1e6, fig.without / 1e6);
  }
  // f32 programs have nothing to keep in 16 bits.
  absl::StatusOr<GptProgram> f32 = Program(kSmall, 4, Precision::kF32);
  ASSERT_TRUE(f32.ok()) << f32.status();
  const PlanFigures fig = Figures(f32->train_step);
  EXPECT_EQ(fig.with, fig.without);
  EXPECT_EQ(fig.half_outputs, 0);
  EXPECT_EQ(fig.half_products, 0);
}

// The GPU run's two models in bf16: what half buffers save, and how much of what is left the
// attention's T x T tensors (scores, probabilities and their gradients) take, the bytes fused
// attention does not write (vulkan_attention_test).
TEST(VulkanHalfBufferPlanTest, GpuModelsWriteFewerBytes) {
  for (const ::pcp::testing::GpuRunModel& m : ::pcp::testing::GpuRunModels()) {
    absl::StatusOr<GptProgram> program = Program(m.config, m.batch, Precision::kBF16);
    ASSERT_TRUE(program.ok()) << program.status();
    const Function& f = program->train_step;
    const PlanFigures fig = Figures(f);
    EXPECT_LT(fig.with, fig.without);
    absl::StatusOr<vulkan::KernelPlan> plan = vulkan::PlanKernels(f, {.half_moves = true});
    ASSERT_TRUE(plan.ok()) << plan.status();
    int64_t square = 0;  // outputs whose last two dimensions are block x block
    for (const vulkan::PlannedKernel& k : plan->kernels) {
      for (ValueId v : vulkan::OutputsOf(k)) {
        const Shape& s = f.type(v).shape;
        if (s.size() >= 2 && s[s.size() - 1] == m.config.block_size && s[s.size() - 2] == m.config.block_size) {
          square += f.type(v).num_elements() * SizeOf(f.type(v).dtype);
        }
      }
    }
    std::printf(
        "bf16 train step, %s: kernels write %.1f GB per step with half buffers, %.1f without (%.2fx); "
        "%.1f GB of it (%.0f%%) attention's block x block tensors\n",
        m.name, fig.with / 1e9, fig.without / 1e9, static_cast<double>(fig.without) / static_cast<double>(fig.with),
        square / 1e9, 100.0 * static_cast<double>(square) / static_cast<double>(fig.with));
  }
}

TEST(VulkanHalfBufferTest, MixedPrecisionTrainStepsGiveTheSameBits) {
  for (int tile : {0, 128}) {
    absl::StatusOr<BackendPair> vk = CreateBackendPair({.half_buffers = false, .dot_tile = tile}, {.dot_tile = tile});
    if (!vk.ok()) GTEST_SKIP() << "no Vulkan device: " << vk.status();
    absl::StatusOr<std::vector<NamedTensor>> init = InitGptParams(kSmall, 11);
    ASSERT_TRUE(init.ok()) << init.status();
    const std::vector<Tensor> args =
        pcp::testing::TrainStepArgs(*init, 1e-3f, 4, kSmall.block_size, kSmall.vocab_size, 3);
    for (Precision p : {Precision::kBF16, Precision::kF16}) {
      absl::StatusOr<GptProgram> program = Program(kSmall, 4, p);
      ASSERT_TRUE(program.ok()) << program.status();
      const Compiled with = CompileOn(*vk->with, program->train_step);
      const Compiled without = CompileOn(*vk->without, program->train_step);
      const std::vector<Tensor> a = RunTwice(*vk->with, with, args);
      const std::vector<Tensor> b = RunTwice(*vk->without, without, args);
      ASSERT_EQ(a.size(), program->train_step.results.size());
      EXPECT_TRUE(SameBits(a, b)) << PrecisionName(p) << ", tile " << tile;
    }
  }
}

}  // namespace
}  // namespace pcp
