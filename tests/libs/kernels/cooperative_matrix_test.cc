// The tensor-core path of the Vulkan backend (VK_NV_cooperative_matrix, kernel_sources.h):
// which products take it, that its generated GLSL (both tiles, real and emulated matrices)
// compiles to SPIR-V with this machine's shaderc (everywhere: no device needed), that f16
// products on the device at hand (tensor cores on a GPU that has them, the plain shaders
// elsewhere, e.g. lavapipe) match the reference interpreter with either tile, and that the
// tensor-core kernels with emulated matrices (their tiling, loads and stores on any device)
// give the plain shaders' bits, products at tile edges and a whole f16 GPT train step. The GPU
// run (bench/gpu/run.sh) runs this test on a real GPU.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernel_plan.h"
#include "kernel_sources.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/mixed_precision.h"
#include "pcp/autodiff/passes.h"
#include "pcp/kernels/vulkan_backend.h"
#include "pcp/testing/tensor_testing.h"
#include "pcp/training/gpt_program.h"
#include "shader_compiler.h"
#include "train_step_args.h"
#include "vulkan_compiled.h"
#include "vulkan_executable.h"

namespace pcp {
namespace {

using ::pcp::testing::RandomTensor;
using ::pcp::testing::TensorsNear;
using vulkan::KernelSourceOptions;

// Products of the shapes a GPT step has (x @ W, a transposed operand, batched attention
// scores), at sizes that are not multiples of the 64-wide tiles, rounded to `precision`.
Function Products(Precision precision) {
  FunctionBuilder b("products");
  ValueId x = b.Parameter({DType::kF32, {70, 48}});
  ValueId w = b.Parameter({DType::kF32, {48, 33}});
  ValueId q = b.Parameter({DType::kF32, {3, 17, 16}});
  ValueId k = b.Parameter({DType::kF32, {3, 19, 16}});
  ValueId xw = b.MatMul(x, w);
  // x^T-shaped: contract x's rows with xw's rows ([48, 70] x [70, 33]).
  ValueId xt = b.DotGeneral(x, xw, DotDims{{}, {}, {0}, {0}});
  // scores[b, i, j] = sum_d q[b, i, d] k[b, j, d].
  ValueId s = b.DotGeneral(q, k, DotDims{{0}, {0}, {2}, {2}});
  b.Return({xw, xt, s});
  absl::StatusOr<Function> f = b.Build();
  EXPECT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(ApplyMixedPrecision(*f, precision).ok());
  EXPECT_TRUE(RunStandardPasses(*f).ok());
  return *f;
}

std::vector<const Instruction*> Dots(const Function& f) {
  std::vector<const Instruction*> dots;
  for (const Instruction& inst : f.instructions) {
    if (inst.op == Op::kDotGeneral) dots.push_back(&inst);
  }
  return dots;
}

TEST(CooperativeMatrixTest, OnlyF16RoundedProductsOnDevicesThatHaveThem) {
  const KernelSourceOptions with{.cooperative_matrix_f16 = true}, without{};
  const Function f16 = Products(Precision::kF16), bf16 = Products(Precision::kBF16), f32 = Products(Precision::kF32);
  ASSERT_EQ(Dots(f16).size(), 3u);
  for (const Instruction* d : Dots(f16)) {
    EXPECT_TRUE(vulkan::UsesCooperativeMatrix(f16, *d, with));
    EXPECT_FALSE(vulkan::UsesCooperativeMatrix(f16, *d, without));
  }
  // bf16 values are not all exact in f16 (range), and f32 ones are not 16-bit at all.
  for (const Instruction* d : Dots(bf16)) EXPECT_FALSE(vulkan::UsesCooperativeMatrix(bf16, *d, with));
  for (const Instruction* d : Dots(f32)) EXPECT_FALSE(vulkan::UsesCooperativeMatrix(f32, *d, with));
}

// Every product's cooperative-matrix kernel compiles (shaderc, Vulkan 1.2 target, as the
// backend compiles), whatever the device: lavapipe cannot run it, but the source is checked.
TEST(CooperativeMatrixTest, GeneratedShadersCompileToSpirv) {
  const Function f = Products(Precision::kF16);
  absl::StatusOr<vulkan::KernelPlan> plan = vulkan::PlanKernels(f, {.half_moves = true});
  ASSERT_TRUE(plan.ok()) << plan.status();
  vulkan::ShaderCompiler compiler("");
  for (bool emulate : {false, true}) {
    for (int tile : {64, 128}) {
      int coop = 0;
      for (const vulkan::PlannedKernel& k : plan->kernels) {
        absl::StatusOr<vulkan::KernelSource> src =
            vulkan::KernelSourceFor(f, *plan, k,
                                    KernelSourceOptions{.cooperative_matrix_f16 = true,
                                                        .emulate_cooperative_matrix = emulate,
                                                        .dot_tile = tile});
        ASSERT_TRUE(src.ok()) << src.status();
        if (src->name.find("coopmat") == std::string::npos) continue;
        ++coop;
        EXPECT_EQ(src->glsl.find("coopMatMulAddNV") != std::string::npos, !emulate) << src->name;
        EXPECT_EQ(src->name.find("_t128") != std::string::npos, tile == 128) << src->name;
        EXPECT_EQ(src->name.find("_emulated") != std::string::npos, emulate) << src->name;
        absl::StatusOr<std::vector<uint32_t>> spirv = compiler.Compile(src->glsl, src->name);
        ASSERT_TRUE(spirv.ok()) << spirv.status();
        EXPECT_GT(spirv->size(), 100u);
        EXPECT_EQ((*spirv)[0], 0x07230203u) << "SPIR-V magic";
      }
      EXPECT_EQ(coop, 3) << "emulate " << emulate << ", tile " << tile;
    }
  }
}

// Products at the tiles' edges, f16-rounded: Products' shapes and ones over several 128-wide
// tiles (m, n and k not multiples of the tiles, a batch, operands transposed either way).
Function LargerProducts() {
  FunctionBuilder b("larger_products");
  ValueId x = b.Parameter({DType::kF32, {136, 40}});
  ValueId w = b.Parameter({DType::kF32, {40, 132}});
  ValueId wt = b.Parameter({DType::kF32, {130, 40}});
  ValueId y = b.Parameter({DType::kF32, {136, 36}});
  ValueId q = b.Parameter({DType::kF32, {2, 130, 16}});
  ValueId k = b.Parameter({DType::kF32, {2, 129, 16}});
  ValueId xw = b.MatMul(x, w);                                   // A along k, B along n
  ValueId xwt = b.DotGeneral(x, wt, DotDims{{}, {}, {1}, {1}});  // B along k (x @ W^T)
  ValueId xty = b.DotGeneral(x, y, DotDims{{}, {}, {0}, {0}});   // A along m (x^T @ y)
  ValueId s = b.DotGeneral(q, k, DotDims{{0}, {0}, {2}, {2}});   // batched scores
  b.Return({xw, xwt, xty, s});
  absl::StatusOr<Function> f = b.Build();
  EXPECT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(ApplyMixedPrecision(*f, Precision::kF16).ok());
  EXPECT_TRUE(RunStandardPasses(*f).ok());
  return *f;
}

// Runs `f` on `backend` (twice: the same bits); `schedule` gets the executable's kernels.
std::vector<Tensor> RunOn(Backend& backend, const Function& f, const std::vector<Tensor>& args, std::string* schedule) {
  const Compiled c = CompileOn(backend, f);
  const auto* vk = dynamic_cast<const vulkan::VulkanExecutable*>(c.exe.get());
  if (vk != nullptr) *schedule = vk->DescribeSchedule();
  return RunTwice(backend, c, args);
}

int Count(const std::string& text, const std::string& word) {
  int n = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

// On the device at hand: f16 products with either tile match the interpreter (within one f16
// ulp of the result: the f32 sums' order differs), on tensor cores where the device has them.
TEST(CooperativeMatrixTest, F16ProductsOnThisDeviceMatchTheInterpreter) {
  absl::StatusOr<std::unique_ptr<Backend>> vk = CreateVulkanBackend({});
  if (!vk.ok()) GTEST_SKIP() << "no Vulkan device: " << vk.status();
  absl::StatusOr<std::vector<VulkanDeviceInfo>> devices = ListVulkanDevices();
  ASSERT_TRUE(devices.ok());
  bool coop = false;
  for (const VulkanDeviceInfo& d : *devices) {
    std::printf("device %d: %s: %s\n", d.index, d.name.c_str(), d.features.c_str());
    if ((*vk)->DeviceDescription().rfind(d.name, 0) == 0) coop = d.cooperative_matrix_f16;
  }
  std::printf("f16 products on %s: %s\n", (*vk)->DeviceDescription().c_str(),
              coop ? "cooperative matrices (tensor cores)" : "the plain f32 shaders (no cooperative matrices)");
  for (const Function& f : {Products(Precision::kF16), LargerProducts()}) {
    std::vector<Tensor> args;
    for (size_t i = 0; i < f.params.size(); ++i) args.push_back(RandomTensor(f.type(f.params[i]), 70 + i, -2, 2));
    absl::StatusOr<std::vector<Tensor>> want = Interpret(f, args);
    ASSERT_TRUE(want.ok()) << want.status();
    for (int tile : {64, 128}) {
      absl::StatusOr<std::unique_ptr<Backend>> backend = CreateVulkanBackend({.dot_tile = tile});
      ASSERT_TRUE(backend.ok()) << backend.status();
      std::string schedule;
      const std::vector<Tensor> got = RunOn(**backend, f, args, &schedule);
      EXPECT_EQ(Count(schedule, "dot_coopmat_"), coop ? static_cast<int>(f.results.size()) : 0) << schedule;
      ASSERT_EQ(got.size(), f.results.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_TRUE(TensorsNear(got[i], (*want)[i], 1.0 / 1024, 1e-3))
            << f.name << " result " << i << ", tile " << tile;
      }
    }
  }
}

// The tensor-core kernels' tiling on any device (emulated matrices, each lane summing its
// elements in k order as the plain shaders do): with either tile, every product takes them and
// gives the plain shaders' bits, which match the interpreter.
TEST(CooperativeMatrixTest, EmulatedTensorCoreKernelsGiveThePlainShadersBits) {
  absl::StatusOr<std::unique_ptr<Backend>> plain = CreateVulkanBackend({});
  if (!plain.ok()) GTEST_SKIP() << "no Vulkan device: " << plain.status();
  for (const Function& f : {Products(Precision::kF16), LargerProducts()}) {
    std::vector<Tensor> args;
    for (size_t i = 0; i < f.params.size(); ++i) args.push_back(RandomTensor(f.type(f.params[i]), 90 + i, -2, 2));
    absl::StatusOr<std::vector<Tensor>> want = Interpret(f, args);
    ASSERT_TRUE(want.ok()) << want.status();
    std::string schedule;
    const std::vector<Tensor> base = RunOn(**plain, f, args, &schedule);
    ASSERT_EQ(base.size(), f.results.size());
    for (int tile : {64, 128}) {
      absl::StatusOr<std::unique_ptr<Backend>> emulated =
          CreateVulkanBackend({.dot_tile = tile, .emulate_cooperative_matrix = true});
      ASSERT_TRUE(emulated.ok()) << emulated.status();
      const std::vector<Tensor> got = RunOn(**emulated, f, args, &schedule);
      EXPECT_EQ(Count(schedule, tile == 128 ? "_t128_emulated" : "_emulated"), static_cast<int>(f.results.size()))
          << schedule;
      ASSERT_EQ(got.size(), base.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(std::memcmp(got[i].raw_data(), base[i].raw_data(), got[i].byte_size()), 0)
            << f.name << " result " << i << ", tile " << tile;
        EXPECT_TRUE(TensorsNear(got[i], (*want)[i], 1.0 / 1024, 1e-3)) << f.name << " result " << i;
      }
    }
  }
}

// A whole f16 GPT train step (every product layout the model has, forward and backward) gives
// the same bits on the emulated tensor-core kernels, with either tile, as on the plain shaders.
TEST(CooperativeMatrixTest, EmulatedTensorCoreKernelsGiveAnF16GptTrainStepThePlainShadersBits) {
  absl::StatusOr<std::unique_ptr<Backend>> plain = CreateVulkanBackend({});
  if (!plain.ok()) GTEST_SKIP() << "no Vulkan device: " << plain.status();
  const GPTConfig config{.vocab_size = 65, .block_size = 16, .n_layer = 2, .n_head = 2, .n_embd = 32, .bias = true};
  const int64_t batch = 4;
  absl::StatusOr<GptProgram> program =
      BuildGptProgram(config, batch,
                      AdamWConfig{.beta1 = 0.9, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.1, .grad_clip = 1.0},
                      GptProgramOptions{.precision = Precision::kF16});
  ASSERT_TRUE(program.ok()) << program.status();
  absl::StatusOr<std::vector<NamedTensor>> init = InitGptParams(config, 11);
  ASSERT_TRUE(init.ok()) << init.status();
  const std::vector<Tensor> args =
      pcp::testing::TrainStepArgs(*init, 1e-3f, batch, config.block_size, config.vocab_size, 3);
  const Function& step = program->train_step;
  std::string schedule;
  const std::vector<Tensor> base = RunOn(**plain, step, args, &schedule);
  ASSERT_EQ(base.size(), step.results.size());
  int dots = 0;
  for (const Instruction& inst : step.instructions) dots += inst.op == Op::kDotGeneral ? 1 : 0;
  for (int tile : {64, 128}) {
    absl::StatusOr<std::unique_ptr<Backend>> emulated =
        CreateVulkanBackend({.dot_tile = tile, .emulate_cooperative_matrix = true});
    ASSERT_TRUE(emulated.ok()) << emulated.status();
    const std::vector<Tensor> got = RunOn(**emulated, step, args, &schedule);
    EXPECT_EQ(Count(schedule, "_emulated"), dots) << schedule;
    ASSERT_EQ(got.size(), base.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(std::memcmp(got[i].raw_data(), base[i].raw_data(), got[i].byte_size()), 0)
          << step.result_names[i] << ", tile " << tile;
    }
  }
}

}  // namespace
}  // namespace pcp
