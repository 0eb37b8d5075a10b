// The Vulkan backend beyond the conformance suite: the GPT train step against the CPU
// backend, device selection, the on-disk SPIR-V cache, backend selection by name ("auto"
// does not choose a CPU-emulated Vulkan device) and behaviour without any Vulkan driver.
// Cases that need a device GTEST_SKIP with the reason when there is none.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/train_step.h"
#include "pcp/kernels/backend_factory.h"
#include "pcp/kernels/cpu_backend.h"
#include "pcp/kernels/vulkan_backend.h"
#include "pcp/models/gpt.h"
#include "pcp/testing/temp_dir.h"
#include "pcp/testing/tensor_testing.h"
#include "train_step_args.h"

namespace pcp {
namespace {

using ::pcp::testing::MaxRelativeError;
using ::pcp::testing::RandomTensor;

#define PCP_VULKAN_OR_SKIP(var, options)                                       \
  absl::StatusOr<std::unique_ptr<Backend>> var = CreateVulkanBackend(options); \
  if (!var.ok()) GTEST_SKIP() << "no Vulkan device: " << var.status()

// Runs `steps` in-place train steps; returns the losses and leaves the state in *state.
std::vector<float> RunSteps(Backend& backend, const Function& step, std::vector<Tensor> args, int steps,
                            std::vector<Tensor>* state, size_t n_state) {
  absl::StatusOr<std::unique_ptr<Executable>> exe = backend.Compile(step);
  EXPECT_TRUE(exe.ok()) << exe.status();
  if (!exe.ok()) return {};
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<Buffer*> in;
  for (const Tensor& a : args) {
    auto buf = backend.Allocate({a.dtype(), a.shape()});
    EXPECT_TRUE(buf.ok() && backend.CopyIn(a, **buf).ok());
    in.push_back(buf->get());
    owned.push_back(*std::move(buf));
  }
  auto loss_buffer = backend.Allocate({DType::kF32, {}});
  std::vector<Buffer*> out(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n_state));
  out.push_back(loss_buffer->get());
  std::vector<float> losses;
  for (int s = 0; s < steps; ++s) {
    EXPECT_TRUE((*exe)->Run(in, out).ok());
    losses.push_back(backend.CopyOut(*out.back())->data<float>()[0]);
    EXPECT_TRUE(backend.CopyIn(Tensor::Scalar<float>(static_cast<float>(s + 2)), *in[n_state]).ok());  // step
  }
  state->clear();
  for (size_t i = 0; i < n_state; ++i) state->push_back(*backend.CopyOut(*in[i]));
  return losses;
}

TEST(VulkanBackendTest, GptTrainStepMatchesCpuBackend) {
  PCP_VULKAN_OR_SKIP(vk, {});
  // AdamW eps 1e-6: see GptBackendComparisonCase (train_step_args.h).
  absl::StatusOr<pcp::testing::GptComparisonCase> c = pcp::testing::GptBackendComparisonCase();
  ASSERT_TRUE(c.ok()) << c.status();
  const Function* step = &c->step;
  const size_t n = c->init.size();
  const std::vector<Tensor>& args = c->args;

  std::unique_ptr<Backend> cpu = CreateCpuBackend({.threads = 1});
  std::vector<Tensor> cpu_state, vk_state;
  const std::vector<float> cpu_losses = RunSteps(*cpu, *step, args, 3, &cpu_state, 3 * n);
  const std::vector<float> vk_losses = RunSteps(**vk, *step, args, 3, &vk_state, 3 * n);
  ASSERT_EQ(cpu_losses.size(), 3u);
  ASSERT_EQ(vk_losses.size(), 3u);
  for (int s = 0; s < 3; ++s) {
    EXPECT_NEAR(vk_losses[s], cpu_losses[s], 1e-4 * std::abs(cpu_losses[s])) << "step " << s;
  }
  // Relative to each tensor's scale (max |a - b| / max |b|): biases start at 0 and Adam moves
  // elements whose gradient is rounding noise by +-lr either way, so a per-element ratio
  // measures noise there, not the backend.
  double worst_param = 0, worst_moment = 0;
  for (size_t i = 0; i < 3 * n; ++i) {
    double scale = 0;
    for (double x : pcp::testing::ToDoubles(cpu_state[i])) scale = std::max(scale, std::abs(x));
    const double err = MaxRelativeError(vk_state[i], cpu_state[i], scale);
    double& worst = i < n ? worst_param : worst_moment;
    worst = std::max(worst, err);
    EXPECT_LE(err, 1e-4) << step->result_names[i];
  }
  std::printf(
      "GPT train step, 3 steps: losses cpu %.7f %.7f %.7f vulkan %.7f %.7f %.7f; max relative error "
      "params %.3g, moments %.3g\n",
      cpu_losses[0], cpu_losses[1], cpu_losses[2], vk_losses[0], vk_losses[1], vk_losses[2], worst_param, worst_moment);
}

// dot_general shapes that take the matmul kernel's vec4 tile loads (plain row-major
// operands, contiguous extent a multiple of 4) and ones that do not, against the CPU backend.
TEST(VulkanBackendTest, MatmulTileLoadPathsMatchCpuBackend) {
  PCP_VULKAN_OR_SKIP(vk, {});
  std::unique_ptr<Backend> cpu = CreateCpuBackend({.threads = 1});
  struct Dot {
    const char* name;
    Shape lhs, rhs;
    DotDims dims;
  };
  const std::vector<Dot> dots = {
      {"both_vec4", {70, 96}, {96, 132}, {{}, {}, {1}, {0}}},
      {"batched_vec4", {3, 20, 36}, {3, 36, 44}, {{0}, {0}, {2}, {1}}},
      {"lhs_transposed", {96, 70}, {96, 132}, {{}, {}, {0}, {0}}},
      {"odd_k", {33, 45}, {45, 68}, {{}, {}, {1}, {0}}},
      {"two_contracting_trailing", {5, 6, 8}, {6, 8, 12}, {{}, {}, {1, 2}, {0, 1}}},
      {"rhs_transposed", {17, 64}, {40, 64}, {{}, {}, {1}, {1}}},
  };
  for (const Dot& d : dots) {
    FunctionBuilder b(d.name);
    ValueId x = b.Parameter({DType::kF32, d.lhs}), y = b.Parameter({DType::kF32, d.rhs});
    b.Return({b.DotGeneral(x, y, d.dims)});
    absl::StatusOr<Function> f = b.Build();
    ASSERT_TRUE(f.ok()) << f.status();
    const std::vector<Tensor> args = {RandomTensor({DType::kF32, d.lhs}, 1, -1, 1),
                                      RandomTensor({DType::kF32, d.rhs}, 2, -1, 1)};
    std::vector<Tensor> results;
    for (Backend* be : {cpu.get(), vk->get()}) {
      absl::StatusOr<std::unique_ptr<Executable>> exe = be->Compile(*f);
      ASSERT_TRUE(exe.ok()) << exe.status();
      std::vector<std::unique_ptr<Buffer>> owned;
      std::vector<Buffer*> in;
      for (const Tensor& a : args) {
        owned.push_back(*be->Allocate({a.dtype(), a.shape()}));
        ASSERT_TRUE(be->CopyIn(a, *owned.back()).ok());
        in.push_back(owned.back().get());
      }
      owned.push_back(*be->Allocate(f->type(f->results[0])));
      std::vector<Buffer*> out = {owned.back().get()};
      ASSERT_TRUE((*exe)->Run(in, out).ok());
      results.push_back(*be->CopyOut(*out[0]));
    }
    EXPECT_TRUE(pcp::testing::TensorsNear(results[1], results[0], 1e-5, 1e-5)) << d.name;
  }
}

TEST(VulkanBackendTest, ExecutablesOfOneBackendMayCompileAndRunFromTwoThreads) {
  PCP_VULKAN_OR_SKIP(vk, {});
  FunctionBuilder b1("one"), b2("two");
  ValueId x1 = b1.Parameter({DType::kF32, {30, 20}});
  b1.Return({b1.ReduceSum(b1.Exp(x1), {1})});
  ValueId x2 = b2.Parameter({DType::kF32, {20, 30}});
  b2.Return({b2.MatMul(b2.Tanh(x2), b2.Transpose(x2, {1, 0}))});
  const std::vector<Function> fs = {*b1.Build(), *b2.Build()};
  const std::vector<Tensor> args = {RandomTensor({DType::kF32, {30, 20}}, 1, -1, 1),
                                    RandomTensor({DType::kF32, {20, 30}}, 2, -1, 1)};
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      Backend& be = **vk;
      absl::StatusOr<std::unique_ptr<Executable>> exe = be.Compile(fs[t]);
      absl::StatusOr<std::unique_ptr<Buffer>> in = be.Allocate({DType::kF32, args[t].shape()});
      absl::StatusOr<std::unique_ptr<Buffer>> out = be.Allocate(fs[t].type(fs[t].results[0]));
      if (!exe.ok() || !in.ok() || !out.ok() || !be.CopyIn(args[t], **in).ok()) {
        errors[t] = "setup failed";
        return;
      }
      std::vector<Buffer*> ins = {in->get()}, outs = {out->get()};
      for (int i = 0; i < 20 && errors[t].empty(); ++i) {
        if (absl::Status s = (*exe)->Run(ins, outs); !s.ok()) errors[t] = s.ToString();
      }
      absl::StatusOr<Tensor> got = be.CopyOut(**out);
      absl::StatusOr<std::vector<Tensor>> want = Interpret(fs[t], {args[t]});
      if (!got.ok() || !want.ok() || !pcp::testing::TensorsNear(*got, (*want)[0], 1e-5, 1e-5)) {
        errors[t] = "wrong result";
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
}

// PCP_VULKAN_PROFILE=1: timestamp queries around every dispatch, a table of kernel times
// printed to stderr when the executable is destroyed.
TEST(VulkanBackendTest, ProfilePrintsKernelTimes) {
  setenv("PCP_VULKAN_PROFILE", "1", 1);
  absl::StatusOr<std::unique_ptr<Backend>> vk = CreateVulkanBackend({});
  unsetenv("PCP_VULKAN_PROFILE");
  if (!vk.ok()) GTEST_SKIP() << "no Vulkan device: " << vk.status();
  FunctionBuilder b("profiled");
  ValueId x = b.Parameter({DType::kF32, {8, 12}}), y = b.Parameter({DType::kF32, {12, 4}});
  b.Return({b.ReduceSum(b.Exp(b.MatMul(x, y)), {1})});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok());
  ::testing::internal::CaptureStderr();
  {
    absl::StatusOr<std::unique_ptr<Executable>> exe = (*vk)->Compile(*f);
    ASSERT_TRUE(exe.ok()) << exe.status();
    auto in0 = (*vk)->Allocate({DType::kF32, {8, 12}});
    auto in1 = (*vk)->Allocate({DType::kF32, {12, 4}});
    auto out = (*vk)->Allocate({DType::kF32, {8}});
    ASSERT_TRUE((*vk)->CopyIn(RandomTensor({DType::kF32, {8, 12}}, 1), **in0).ok());
    ASSERT_TRUE((*vk)->CopyIn(RandomTensor({DType::kF32, {12, 4}}, 2), **in1).ok());
    std::vector<Buffer*> args = {in0->get(), in1->get()}, results = {out->get()};
    ASSERT_TRUE((*exe)->Run(args, results).ok());
    ASSERT_TRUE((*exe)->Run(args, results).ok());
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("PCP_VULKAN_PROFILE profiled: 2 runs, 2 kernels"), std::string::npos) << err;
  EXPECT_NE(err.find("dot_8x4x12"), std::string::npos) << err;
  EXPECT_NE(err.find("reduce_sum"), std::string::npos) << err;
}

TEST(VulkanBackendTest, DescribesItsDeviceAndRejectsUnknownDevices) {
  PCP_VULKAN_OR_SKIP(vk, {});
  EXPECT_EQ((*vk)->Name(), "vulkan");
  EXPECT_FALSE((*vk)->DeviceDescription().empty());
  absl::StatusOr<std::vector<VulkanDeviceInfo>> devices = ListVulkanDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_FALSE(devices->empty());
  // By name (case-insensitive substring) and by index.
  const std::string first = (*devices)[0].name;
  EXPECT_TRUE(CreateVulkanBackend({.device_name = first.substr(0, 4)}).ok());
  EXPECT_TRUE(CreateVulkanBackend({.device_index = 0}).ok());
  EXPECT_EQ(CreateVulkanBackend({.device_name = "no-such-gpu-xyz"}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(CreateVulkanBackend({.device_index = 99}).status().code(), absl::StatusCode::kNotFound);
}

// As the CPU backend: half precision is moved bit-exactly but not computed.
TEST(VulkanBackendTest, HalfPrecisionMovesButDoesNotCompute) {
  PCP_VULKAN_OR_SKIP(vk, {});
  FunctionBuilder c("bf16_add");
  ValueId y = c.Parameter({DType::kBF16, {4}});
  c.Return({c.Add(y, y)});
  absl::StatusOr<Function> computes = c.Build();
  ASSERT_TRUE(computes.ok()) << computes.status();
  EXPECT_EQ((*vk)->Supports(*computes).code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ((*vk)->Compile(*computes).status().code(), absl::StatusCode::kUnimplemented);

  FunctionBuilder b("half_moves");
  ValueId x = b.Parameter({DType::kBF16, {3, 5}});
  ValueId h = b.Parameter({DType::kF16, {7}});
  b.Return({b.Transpose(x, {1, 0}), b.Concatenate({b.Slice(h, {1}, {6}, {2}), h}, 0)});
  absl::StatusOr<Function> moves = b.Build();
  ASSERT_TRUE(moves.ok()) << moves.status();
  if (absl::Status s = (*vk)->Supports(*moves); !s.ok()) {
    GTEST_SKIP() << "device without 16-bit storage: " << s;
  }
  Tensor t(DType::kBF16, {3, 5}), u(DType::kF16, {7});
  for (int i = 0; i < 15; ++i) static_cast<uint16_t*>(t.raw_data())[i] = static_cast<uint16_t>(0x3f80 + 7 * i);
  for (int i = 0; i < 7; ++i) static_cast<uint16_t*>(u.raw_data())[i] = static_cast<uint16_t>(0xbc00 + i);
  absl::StatusOr<std::vector<Tensor>> want = Interpret(*moves, {t, u});
  ASSERT_TRUE(want.ok()) << want.status();
  absl::StatusOr<std::unique_ptr<Executable>> exe = (*vk)->Compile(*moves);
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto in0 = (*vk)->Allocate({DType::kBF16, {3, 5}});
  auto in1 = (*vk)->Allocate({DType::kF16, {7}});
  auto out0 = (*vk)->Allocate(moves->type(moves->results[0]));
  auto out1 = (*vk)->Allocate(moves->type(moves->results[1]));
  ASSERT_TRUE(in0.ok() && in1.ok() && out0.ok() && out1.ok());
  ASSERT_TRUE((*vk)->CopyIn(t, **in0).ok());
  ASSERT_TRUE((*vk)->CopyIn(u, **in1).ok());
  std::vector<Buffer*> args = {in0->get(), in1->get()}, results = {out0->get(), out1->get()};
  ASSERT_TRUE((*exe)->Run(args, results).ok());
  EXPECT_TRUE(BitwiseEqual(*(*vk)->CopyOut(**out0), (*want)[0]));
  EXPECT_TRUE(BitwiseEqual(*(*vk)->CopyOut(**out1), (*want)[1]));
}

class VulkanShaderCacheTest : public pcp::testing::TempDirTest {};

TEST_F(VulkanShaderCacheTest, WritesSpirvFilesAndReusesThem) {
  PCP_VULKAN_OR_SKIP(vk, {.shader_cache_dir = dir_ + "/spirv"});
  FunctionBuilder b("cache_probe");
  ValueId x = b.Parameter({DType::kF32, {37}});
  b.Return({b.Tanh(b.Mul(x, x))});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*vk)->Compile(*f).ok());
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_ + "/spirv")) {
    EXPECT_EQ(e.path().extension(), ".spv");
    ++files;
  }
  EXPECT_GE(files, 1);
  // A second backend on the same directory compiles from the cache and computes the same.
  absl::StatusOr<std::unique_ptr<Backend>> again = CreateVulkanBackend({.shader_cache_dir = dir_ + "/spirv"});
  ASSERT_TRUE(again.ok());
  absl::StatusOr<std::unique_ptr<Executable>> exe = (*again)->Compile(*f);
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto in = (*again)->Allocate({DType::kF32, {37}});
  auto out = (*again)->Allocate({DType::kF32, {37}});
  const Tensor t = RandomTensor({DType::kF32, {37}}, 5, -2, 2);
  ASSERT_TRUE((*again)->CopyIn(t, **in).ok());
  Buffer* args[] = {in->get()};
  Buffer* results[] = {out->get()};
  ASSERT_TRUE((*exe)->Run(args, results).ok());
  const Tensor got = *(*again)->CopyOut(**out);
  for (int i = 0; i < 37; ++i) {
    const float v = t.data<float>()[i];
    EXPECT_NEAR(got.data<float>()[i], std::tanh(v * v), 1e-6);
  }
  int after = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir_ + "/spirv")) ++after;
  EXPECT_EQ(after, files);
}

TEST(BackendFactoryTest, VulkanByNameAndAutoPrefersOnlyRealGpus) {
  absl::StatusOr<std::vector<VulkanDeviceInfo>> devices = ListVulkanDevices();
  bool gpu = false, any = false;
  if (devices.ok()) {
    for (const VulkanDeviceInfo& d : *devices) {
      any |= d.usable;
      gpu |= d.usable && d.kind != VulkanDeviceKind::kCpu && d.kind != VulkanDeviceKind::kOther;
    }
  }
  absl::StatusOr<std::unique_ptr<Backend>> vk = CreateBackend("vulkan", 0);
  EXPECT_EQ(vk.ok(), any) << vk.status();
  if (vk.ok()) {
    EXPECT_EQ((*vk)->Name(), "vulkan");
  }
  absl::StatusOr<std::unique_ptr<Backend>> vk0 = CreateBackend("vulkan:0", 0);
  if (any) {
    EXPECT_TRUE(vk0.ok()) << vk0.status();
  }
  absl::StatusOr<std::unique_ptr<Backend>> automatic = CreateBackend("auto", 1);
  ASSERT_TRUE(automatic.ok()) << automatic.status();
  // lavapipe (a CPU implementation) is far slower than the CPU backend: "auto" takes it only
  // when a GPU is there.
  EXPECT_EQ((*automatic)->Name(), gpu ? "vulkan" : "cpu");
  EXPECT_EQ(CreateBackend("tpu", 0).status().code(), absl::StatusCode::kInvalidArgument);
}

// Without any Vulkan driver: creation fails with Unavailable (so the suites skip) and
// "auto" falls back to the CPU backend. The loader reads these variables when the instance is
// made, and a process keeps its one instance once any backend was created, so the check runs
// in a fresh process: a threadsafe death test re-runs this binary for this test alone.
TEST(VulkanNoDeviceTest, UnavailableAndAutoFallsBackToCpu) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("VK_ICD_FILENAMES", "/nonexistent/icd.json", 1);
        setenv("VK_DRIVER_FILES", "/nonexistent/icd.json", 1);
        absl::StatusOr<std::unique_ptr<Backend>> vk = CreateVulkanBackend({});
        absl::StatusOr<std::unique_ptr<Backend>> automatic = CreateBackend("auto", 1);
        int failures = 0;
        if (vk.ok() || vk.status().code() != absl::StatusCode::kUnavailable) {
          std::fprintf(stderr, "CreateVulkanBackend without a driver: %s\n",
                       vk.ok() ? "succeeded" : vk.status().ToString().c_str());
          ++failures;
        }
        if (!automatic.ok() || (*automatic)->Name() != "cpu") {
          std::fprintf(stderr, "auto without a driver: %s\n",
                       automatic.ok() ? std::string((*automatic)->Name()).c_str()
                                      : automatic.status().ToString().c_str());
          ++failures;
        }
        std::exit(failures);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace pcp
