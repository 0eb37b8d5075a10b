// The Vulkan backend's two dot_general tiles on the f32 shaders (matmul_source.cc): 64 x 64
// outputs per work group, or 128 x 128 for large products (DotTileFor). Without a device: the
// rule (GPT-2 small's and nanoGPT's products take the large tile, the default model's do not),
// both tiles' sources compile to SPIR-V for the vec4 and the loader paths, and a bad tile option
// or PCP_VULKAN_DOT_TILE is refused by name. On a device (skipped without one): products at
// edges (m, n not multiples of the tile, k not of its depth, batched, transposed operands) with
// each tile forced give the same bits as each other and match the CPU backend, and a whole GPT
// train step gives the same bits with either tile.
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernel_plan.h"     // libs/kernels/vulkan/src: the planner, without a device
#include "kernel_sources.h"  // libs/kernels/vulkan/src
#include "pcp/autodiff/builder.h"
#include "pcp/kernels/cpu_backend.h"
#include "pcp/kernels/vulkan_backend.h"
#include "pcp/testing/tensor_testing.h"
#include "shader_compiler.h"  // libs/kernels/vulkan/src
#include "train_step_args.h"
#include "vulkan_compiled.h"

namespace pcp {
namespace {

using ::pcp::testing::RandomTensor;

struct Dot {
  const char* name;
  Shape lhs, rhs;
  DotDims dims;
};

// Shapes that take each of the tile loads (matmul_source.cc's TileLoad: vec4 along k or along
// the free extent, scalars along either, through index expressions), at tile edges.
const std::vector<Dot>& EdgeDots() {
  static const std::vector<Dot> dots = {
      {"both_vec4_two_tiles", {200, 96}, {96, 260}, {{}, {}, {1}, {0}}},
      {"batched_vec4", {3, 20, 36}, {3, 36, 44}, {{0}, {0}, {2}, {1}}},
      {"batched_odd_k", {2, 130, 13}, {2, 13, 129}, {{0}, {0}, {2}, {1}}},
      {"lhs_transposed", {96, 140}, {96, 132}, {{}, {}, {0}, {0}}},
      {"rhs_transposed", {17, 64}, {150, 64}, {{}, {}, {1}, {1}}},
      {"two_contracting_trailing", {5, 6, 8}, {6, 8, 12}, {{}, {}, {1, 2}, {0, 1}}},
      // Layouts whose contiguous extent is not a multiple of 4 (scalar loads along it).
      {"lhs_transposed_odd_m", {45, 70}, {45, 33}, {{}, {}, {0}, {0}}},
      {"rhs_transposed_odd_k", {17, 45}, {150, 45}, {{}, {}, {1}, {1}}},
      // Operands read through index expressions: contracted dimensions in the middle or split,
      // a batch dimension that does not lead.
      {"lhs_contract_middle", {5, 8, 6}, {8, 12}, {{}, {}, {1}, {0}}},
      {"rhs_contract_middle", {7, 9}, {4, 9, 5}, {{}, {}, {1}, {1}}},
      {"lhs_contract_split", {3, 6, 5}, {3, 5, 7}, {{}, {}, {0, 2}, {0, 1}}},
      {"batch_middle", {10, 3, 8}, {3, 8, 6}, {{1}, {0}, {2}, {1}}},
  };
  return dots;
}

absl::StatusOr<Function> DotFunction(const Dot& d) {
  FunctionBuilder b(d.name);
  const ValueId x = b.Parameter({DType::kF32, d.lhs}), y = b.Parameter({DType::kF32, d.rhs});
  b.Return({b.DotGeneral(x, y, d.dims)});
  return b.Build();
}

// The tile DotTileFor picks for x[b, m, k] @ y[b, k, n] (b = 0: no batch dimension).
int TileFor(int64_t batch, int64_t m, int64_t k, int64_t n, int forced = 0) {
  const Dot d = batch == 0 ? Dot{"t", {m, k}, {k, n}, {{}, {}, {1}, {0}}}
                           : Dot{"t", {batch, m, k}, {batch, k, n}, {{0}, {0}, {2}, {1}}};
  absl::StatusOr<Function> f = DotFunction(d);
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? vulkan::DotTileFor(*f, f->instructions.back(), forced) : -1;
}

TEST(VulkanDotTileRuleTest, LargeProductsTakeTheLargeTile) {
  EXPECT_EQ(TileFor(0, 4096, 4096, 4096), 128);
  // GPT-2 small, micro-batch 12 x 1024 tokens: the MLP, the projections, the attention.
  EXPECT_EQ(TileFor(0, 12288, 768, 3072), 128);
  EXPECT_EQ(TileFor(0, 12288, 768, 768), 128);
  EXPECT_EQ(TileFor(144, 1024, 64, 1024), 128);
  // nanoGPT's GPU config (64 x 256 tokens, 384 wide): 128 x 3 tiles of the projections.
  EXPECT_EQ(TileFor(0, 16384, 384, 384), 128);
  // A weight gradient 768 x 3072 is 6 x 24 large tiles, under a large GPU's two per multiprocessor.
  EXPECT_EQ(TileFor(0, 768, 12288, 3072), 64);
  // The default job's products (its MLP: 12 x 64 tokens, 128 -> 512) and anything under 128 on
  // a side keep the small tile.
  EXPECT_EQ(TileFor(0, 768, 128, 512), 64);
  EXPECT_EQ(TileFor(512, 64, 32, 64), 64);
  EXPECT_EQ(TileFor(0, 100000, 64, 127), 64);
  // Forced either way.
  EXPECT_EQ(TileFor(0, 4096, 4096, 4096, 64), 64);
  EXPECT_EQ(TileFor(0, 3, 5, 7, 128), 128);
}

TEST(VulkanDotTileRuleTest, BothTilesCompileToSpirvOnEveryLoadPath) {
  vulkan::ShaderCompiler compiler("");
  for (const Dot& d : EdgeDots()) {
    absl::StatusOr<Function> f = DotFunction(d);
    ASSERT_TRUE(f.ok()) << f.status();
    absl::StatusOr<vulkan::KernelPlan> plan = vulkan::PlanKernels(*f, {});
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_EQ(plan->kernels.size(), 1u) << d.name;
    for (int tile : {64, 128}) {
      absl::StatusOr<vulkan::KernelSource> src =
          vulkan::KernelSourceFor(*f, *plan, plan->kernels[0], {.dot_tile = tile});
      ASSERT_TRUE(src.ok()) << src.status();
      EXPECT_EQ(src->name.find("_t128") != std::string::npos, tile == 128) << src->name;
      // Work groups cover the output in tiles of `tile`.
      int64_t n = NumElements(d.rhs);
      for (int64_t dim : d.dims.rhs_batch) n /= d.rhs[static_cast<size_t>(dim)];
      for (int64_t dim : d.dims.rhs_contract) n /= d.rhs[static_cast<size_t>(dim)];
      EXPECT_EQ(src->groups[0], static_cast<uint32_t>((n + tile - 1) / tile)) << d.name << " tile " << tile;
      absl::StatusOr<std::vector<uint32_t>> spirv = compiler.Compile(src->glsl, src->name);
      ASSERT_TRUE(spirv.ok()) << d.name << " tile " << tile << ": " << spirv.status();
    }
  }
}

TEST(VulkanDotTileRuleTest, BadTilesAreRefusedByName) {
  absl::StatusOr<std::unique_ptr<Backend>> b = CreateVulkanBackend({.dot_tile = 96});
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(b.status().message().find("dot_tile 96"), std::string::npos) << b.status();
  ASSERT_EQ(setenv("PCP_VULKAN_DOT_TILE", "256", 1), 0);
  b = CreateVulkanBackend({});
  unsetenv("PCP_VULKAN_DOT_TILE");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("PCP_VULKAN_DOT_TILE='256'"), std::string::npos) << b.status();
}

// Backends with the small and the large tile forced (or the device's error: the caller skips).
absl::StatusOr<BackendPair> SmallAndLargeTiles() { return CreateBackendPair({.dot_tile = 64}, {.dot_tile = 128}); }

TEST(VulkanDotTileTest, BothTilesGiveTheSameBitsAndMatchTheCpuBackend) {
  absl::StatusOr<BackendPair> vk = SmallAndLargeTiles();
  if (!vk.ok()) GTEST_SKIP() << "no Vulkan device: " << vk.status();
  Backend& small_tiles = *vk->without;
  Backend& large_tiles = *vk->with;
  std::unique_ptr<Backend> cpu = CreateCpuBackend({.threads = 1});
  for (const Dot& d : EdgeDots()) {
    absl::StatusOr<Function> f = DotFunction(d);
    ASSERT_TRUE(f.ok()) << f.status();
    const std::vector<Tensor> args = {RandomTensor({DType::kF32, d.lhs}, 1, -1, 1),
                                      RandomTensor({DType::kF32, d.rhs}, 2, -1, 1)};
    const std::vector<Tensor> expected = RunOnce(*cpu, *f, args);
    const std::vector<Tensor> small = RunTwice(small_tiles, CompileOn(small_tiles, *f), args);
    const std::vector<Tensor> big = RunTwice(large_tiles, CompileOn(large_tiles, *f), args);
    ASSERT_EQ(expected.size(), 1u);
    ASSERT_EQ(small.size(), 1u);
    ASSERT_EQ(big.size(), 1u);
    EXPECT_TRUE(SameBits(big, small)) << d.name;
    EXPECT_TRUE(pcp::testing::TensorsNear(big[0], expected[0], 1e-5, 1e-5)) << d.name;
  }
}

TEST(VulkanDotTileTest, AGptTrainStepGivesTheSameBitsWithEitherTile) {
  absl::StatusOr<BackendPair> vk = SmallAndLargeTiles();
  if (!vk.ok()) GTEST_SKIP() << "no Vulkan device: " << vk.status();
  absl::StatusOr<pcp::testing::GptComparisonCase> c = pcp::testing::GptBackendComparisonCase();
  ASSERT_TRUE(c.ok()) << c.status();
  const std::vector<Tensor> small = RunTwice(*vk->without, CompileOn(*vk->without, c->step), c->args);
  const std::vector<Tensor> big = RunTwice(*vk->with, CompileOn(*vk->with, c->step), c->args);
  ASSERT_EQ(small.size(), c->step.results.size());
  EXPECT_TRUE(SameBits(big, small));
}

}  // namespace
}  // namespace pcp
