// The tensor-core path of the Vulkan backend (VK_NV_cooperative_matrix, kernel_sources.h):
// which products take it, that its generated GLSL compiles to SPIR-V with this machine's
// shaderc (everywhere: no device needed), and that f16 products on the device at hand
// (tensor cores on a GPU that has them, the plain shaders elsewhere, e.g. lavapipe) match the
// reference interpreter. The GPU run (bench/gpu/run.sh) runs this test on a real GPU.
#include <cstdio>
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
#include "shader_compiler.h"

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
  int coop = 0;
  for (const vulkan::PlannedKernel& k : plan->kernels) {
    absl::StatusOr<vulkan::KernelSource> src =
        vulkan::KernelSourceFor(f, *plan, k, KernelSourceOptions{.cooperative_matrix_f16 = true});
    ASSERT_TRUE(src.ok()) << src.status();
    if (src->glsl.find("coopMatMulAddNV") == std::string::npos) continue;
    ++coop;
    EXPECT_NE(src->name.find("coopmat"), std::string::npos) << src->name;
    absl::StatusOr<std::vector<uint32_t>> spirv = compiler.Compile(src->glsl, src->name);
    ASSERT_TRUE(spirv.ok()) << spirv.status();
    EXPECT_GT(spirv->size(), 100u);
    EXPECT_EQ((*spirv)[0], 0x07230203u) << "SPIR-V magic";
  }
  EXPECT_EQ(coop, 3);
}

// On the device at hand: f16 products match the interpreter (within one f16 ulp of the
// result: the f32 sums' order differs), on tensor cores where the device has them.
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
  const Function f = Products(Precision::kF16);
  std::vector<Tensor> args;
  for (size_t i = 0; i < f.params.size(); ++i) args.push_back(RandomTensor(f.type(f.params[i]), 70 + i, -2, 2));
  absl::StatusOr<std::vector<Tensor>> want = Interpret(f, args);
  ASSERT_TRUE(want.ok()) << want.status();
  absl::StatusOr<std::unique_ptr<Executable>> exe = (*vk)->Compile(f);
  ASSERT_TRUE(exe.ok()) << exe.status();
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<Buffer*> in, out;
  for (const Tensor& a : args) {
    absl::StatusOr<std::unique_ptr<Buffer>> buf = (*vk)->Allocate({a.dtype(), a.shape()});
    ASSERT_TRUE(buf.ok() && (*vk)->CopyIn(a, **buf).ok());
    in.push_back(buf->get());
    owned.push_back(*std::move(buf));
  }
  for (ValueId r : f.results) {
    absl::StatusOr<std::unique_ptr<Buffer>> buf = (*vk)->Allocate(f.type(r));
    ASSERT_TRUE(buf.ok());
    out.push_back(buf->get());
    owned.push_back(*std::move(buf));
  }
  ASSERT_TRUE((*exe)->Run(in, out).ok());
  for (size_t i = 0; i < out.size(); ++i) {
    absl::StatusOr<Tensor> got = (*vk)->CopyOut(*out[i]);
    ASSERT_TRUE(got.ok());
    EXPECT_TRUE(TensorsNear(*got, (*want)[i], 1.0 / 1024, 1e-3)) << "result " << i;
  }
}

}  // namespace
}  // namespace pcp
