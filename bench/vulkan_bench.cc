// The Vulkan backend against the CPU backend in one run: sgemm (C = A @ B, n x n, GFLOPS)
// and the GPT train step (forward + backward + clipping + AdamW, ms/step), each printed for
// both backends with the ratio CPU time / Vulkan time (> 1: Vulkan is faster).
//
//   build/bench/pcp_vulkan_bench                      # small sizes (fine on lavapipe)
//   build/bench/pcp_vulkan_bench --large              # sgemm 1024..4096 and nanoGPT's
//                                                     # 6-layer, 6-head, 384-wide, block-256 GPT
//   build/bench/pcp_vulkan_bench --device=h100 --threads=16 --sizes=512,1024 --gpt=false
//
// Without a usable Vulkan device it prints why and exits 0 after the CPU figures.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "pcp/autodiff/builder.h"
#include "pcp/kernels/cpu_backend.h"
#include "pcp/kernels/vulkan_backend.h"
#include "pcp/models/gpt.h"
#include "pcp/training/dataset.h"
#include "pcp/training/gpt_program.h"
#include "pcp/training/inner_loop.h"

ABSL_FLAG(bool, large, false, "sgemm 1024,2048,4096 and the 6-layer/384-wide/block-256 GPT (for real GPUs)");
ABSL_FLAG(std::string, sizes, "", "sgemm sizes, comma-separated (default 64,128,256; --large: 1024,2048,4096)");
ABSL_FLAG(bool, gpt, true, "time the GPT train step");
ABSL_FLAG(int, steps, 0, "timed GPT steps (default 3; --large: 10)");
ABSL_FLAG(int, warmup, 1, "untimed GPT steps first (the first Vulkan run also compiles)");
ABSL_FLAG(int64_t, batch_size, 0, "GPT batch (default 4; --large: 12)");
ABSL_FLAG(int, threads, 0, "CPU backend threads (0 = all cores)");
ABSL_FLAG(std::string, device, "", "Vulkan device: index or name substring (default: best)");
ABSL_FLAG(bool, cpu, true, "also time the CPU backend");

namespace pcp {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// ms per C = A @ B (n x n, f32) on `backend`: one untimed run, then runs for >= ~0.3 s (at
// least 2, at most 50). Buffers stay on the device; only the run is timed.
absl::StatusOr<double> TimeMatmul(Backend& backend, int64_t n) {
  FunctionBuilder b("sgemm");
  ValueId x = b.Parameter({DType::kF32, {n, n}}), y = b.Parameter({DType::kF32, {n, n}});
  b.Return({b.MatMul(x, y)});
  absl::StatusOr<Function> f = b.Build();
  if (!f.ok()) return f.status();
  absl::StatusOr<std::unique_ptr<Executable>> exe = backend.Compile(*f);
  if (!exe.ok()) return exe.status();
  std::vector<std::unique_ptr<Buffer>> bufs;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<std::unique_ptr<Buffer>> buf = backend.Allocate({DType::kF32, {n, n}});
    if (!buf.ok()) return buf.status();
    bufs.push_back(*std::move(buf));
  }
  Tensor t(DType::kF32, {n, n});
  for (int64_t i = 0; i < n * n; ++i) t.data<float>()[i] = static_cast<float>((i * 37) % 101) / 101.0f - 0.5f;
  for (int i = 0; i < 2; ++i) {
    if (absl::Status s = backend.CopyIn(t, *bufs[i]); !s.ok()) return s;
  }
  Buffer* args[] = {bufs[0].get(), bufs[1].get()};
  Buffer* results[] = {bufs[2].get()};
  if (absl::Status s = (*exe)->Run(args, results); !s.ok()) return s;
  int runs = 0;
  const auto start = Clock::now();
  while (runs < 2 || (runs < 50 && MsSince(start) < 300)) {
    if (absl::Status s = (*exe)->Run(args, results); !s.ok()) return s;
    ++runs;
  }
  return MsSince(start) / runs;
}

struct GptTiming {
  double first_ms = 0;  // compile + first step
  double ms = 0;        // per timed step
  float loss = 0;
};

absl::StatusOr<GptTiming> TimeGpt(Backend& backend, const GptProgram& program, const std::vector<Tensor>& init) {
  GptTiming t;
  const auto c0 = Clock::now();
  absl::StatusOr<std::unique_ptr<InnerLoop>> loop = InnerLoop::Create(backend, program.train_step);
  if (!loop.ok()) return loop.status();
  if (absl::Status s = (*loop)->SetParams(init); !s.ok()) return s;
  const GPTConfig& m = program.model;
  std::vector<uint16_t> ids(200000);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<uint16_t>((i * 7919 + i / 13) % m.vocab_size);
  TokenSequence data(std::move(ids));
  BatchSampler sampler(1);
  auto step = [&]() -> absl::Status {
    absl::StatusOr<Batch> batch = sampler.Next(data, program.batch_size, m.block_size);
    if (!batch.ok()) return batch.status();
    absl::StatusOr<float> loss = (*loop)->Step(*batch, 1e-3f);
    if (!loss.ok()) return loss.status();
    t.loss = *loss;
    return absl::OkStatus();
  };
  if (absl::Status s = step(); !s.ok()) return s;
  t.first_ms = MsSince(c0);
  for (int i = 1; i < absl::GetFlag(FLAGS_warmup); ++i) {
    if (absl::Status s = step(); !s.ok()) return s;
  }
  const int steps = absl::GetFlag(FLAGS_steps) > 0 ? absl::GetFlag(FLAGS_steps) : (absl::GetFlag(FLAGS_large) ? 10 : 3);
  const auto start = Clock::now();
  for (int i = 0; i < steps; ++i) {
    if (absl::Status s = step(); !s.ok()) return s;
  }
  t.ms = MsSince(start) / steps;
  return t;
}

int Fail(const std::string& what, const absl::Status& s) {
  std::fprintf(stderr, "vulkan_bench: %s: %s\n", what.c_str(), s.ToString().c_str());
  return 1;
}

int Main() {
  const bool large = absl::GetFlag(FLAGS_large);
  std::vector<int64_t> sizes;
  std::string size_list = absl::GetFlag(FLAGS_sizes);
  if (size_list.empty()) size_list = large ? "1024,2048,4096" : "64,128,256";
  for (absl::string_view s : absl::StrSplit(size_list, ',')) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(s, &n) || n < 1)
      return Fail("--sizes", absl::InvalidArgumentError(absl::StrCat("bad size '", s, "'")));
    sizes.push_back(n);
  }
  std::unique_ptr<Backend> cpu = CreateCpuBackend({.threads = absl::GetFlag(FLAGS_threads)});
  VulkanBackendOptions options;
  if (const std::string d = absl::GetFlag(FLAGS_device); !d.empty()) {
    int index = 0;
    if (absl::SimpleAtoi(d, &index)) {
      options.device_index = index;
    } else {
      options.device_name = d;
    }
  }
  absl::StatusOr<std::unique_ptr<Backend>> vk = CreateVulkanBackend(options);
  std::printf("cpu:    %s\n", cpu->DeviceDescription().c_str());
  if (vk.ok()) {
    std::printf("vulkan: %s\n", (*vk)->DeviceDescription().c_str());
  } else {
    std::printf("vulkan: unavailable (%s); CPU figures only\n", vk.status().ToString().c_str());
  }
  const bool with_cpu = absl::GetFlag(FLAGS_cpu);

  std::printf("\nsgemm C = A @ B (f32, n x n), GFLOPS:\n%8s %12s %12s %10s\n", "n", "cpu", "vulkan", "vk/cpu");
  for (int64_t n : sizes) {
    const double flop = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
    double cpu_gflops = 0, vk_gflops = 0;
    if (with_cpu) {
      absl::StatusOr<double> ms = TimeMatmul(*cpu, n);
      if (!ms.ok()) return Fail("cpu sgemm", ms.status());
      cpu_gflops = flop / (*ms * 1e6);
    }
    if (vk.ok()) {
      absl::StatusOr<double> ms = TimeMatmul(**vk, n);
      if (!ms.ok()) return Fail("vulkan sgemm", ms.status());
      vk_gflops = flop / (*ms * 1e6);
    }
    std::printf("%8lld %12.2f %12.2f %10.3f\n", static_cast<long long>(n), cpu_gflops, vk_gflops,
                cpu_gflops > 0 ? vk_gflops / cpu_gflops : 0.0);
    std::fflush(stdout);
  }

  if (!absl::GetFlag(FLAGS_gpt)) return 0;
  const GPTConfig m =
      large ? GPTConfig{.vocab_size = 65, .block_size = 256, .n_layer = 6, .n_head = 6, .n_embd = 384, .bias = true}
            : GPTConfig{.vocab_size = 65, .block_size = 32, .n_layer = 2, .n_head = 2, .n_embd = 64, .bias = true};
  const int64_t batch = absl::GetFlag(FLAGS_batch_size) > 0 ? absl::GetFlag(FLAGS_batch_size) : (large ? 12 : 4);
  std::printf("\nGPT train step: n_layer %lld, n_head %lld, n_embd %lld, block %lld, batch %lld, vocab %lld\n",
              static_cast<long long>(m.n_layer), static_cast<long long>(m.n_head), static_cast<long long>(m.n_embd),
              static_cast<long long>(m.block_size), static_cast<long long>(batch),
              static_cast<long long>(m.vocab_size));
  absl::StatusOr<GptProgram> program =
      BuildGptProgram(m, batch,
                      AdamWConfig{.beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8, .weight_decay = 0.1, .grad_clip = 1.0});
  if (!program.ok()) return Fail("GPT program", program.status());
  absl::StatusOr<std::vector<NamedTensor>> init = InitGptParams(m, 1337);
  if (!init.ok()) return Fail("GPT init", init.status());
  std::vector<Tensor> params;
  for (const NamedTensor& t : *init) params.push_back(t.tensor);
  GptTiming c, v;
  if (with_cpu) {
    absl::StatusOr<GptTiming> t = TimeGpt(*cpu, *program, params);
    if (!t.ok()) return Fail("cpu GPT", t.status());
    c = *t;
    std::printf("cpu:    %10.2f ms/step (compile + first step %.0f ms), loss %.4f\n", c.ms, c.first_ms, c.loss);
    std::fflush(stdout);
  }
  if (vk.ok()) {
    absl::StatusOr<GptTiming> t = TimeGpt(**vk, *program, params);
    if (!t.ok()) return Fail("vulkan GPT", t.status());
    v = *t;
    std::printf("vulkan: %10.2f ms/step (compile + first step %.0f ms), loss %.4f\n", v.ms, v.first_ms, v.loss);
  }
  if (with_cpu && vk.ok()) std::printf("cpu/vulkan time ratio: %.3f (> 1: Vulkan faster)\n", c.ms / v.ms);
  return 0;
}

}  // namespace
}  // namespace pcp

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return pcp::Main();
}
