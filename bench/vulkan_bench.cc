// The Vulkan backend against the CPU backend in one run: sgemm (C = A @ B, n x n, GFLOPS)
// and the GPT train step (forward + backward + clipping + AdamW, ms/step), each printed for
// both backends with the ratio CPU time / Vulkan time (> 1: Vulkan is faster).
//
//   build/bench/pcp_vulkan_bench                      # small sizes (fine on lavapipe)
//   build/bench/pcp_vulkan_bench --large              # sgemm 1024..4096 and nanoGPT's
//                                                     # 6-layer, 6-head, 384-wide, block-256 GPT
//   build/bench/pcp_vulkan_bench --device=h100 --threads=16 --sizes=512,1024 --gpt=false
//   build/bench/pcp_vulkan_bench --cpu=false --sizes=4096 --n_layer=12 --n_head=12 --n_embd=768
//       --block_size=1024 --vocab_size=50304 --batch_size=12 --json=out.jsonl   (GPT-2 small)
//   build/bench/pcp_vulkan_bench --cpu=false --sgemm=false --row_kernels=both --n_layer=4 --n_head=4
//       --n_embd=128 --block_size=64 --batch_size=12 --bias=false   (the default job's model: dispatches
//       per train step and forward, ms/step, with and without row kernels)
//
// --json=FILE appends one JSON line per figure (bench/gpu/run.sh builds its table from them):
//   {"kind": "matmul", "workload", "backend", "device", "precision", "n", "ms", "tflops"}
//   {"kind": "gpt", "workload", "backend", "device", "precision", "n_layer", "n_head", "n_embd", "block_size",
//    "vocab_size", "batch_size", "ms_per_step", "first_ms", "loss", "row_kernels", "dispatches"}
//   (dispatches: per train step, with --row_kernels=both; else null)
//
// Without a usable Vulkan device it prints why and exits 0 after the CPU figures.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "pcp/autodiff/attention.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/mixed_precision.h"
#include "pcp/autodiff/passes.h"
#include "pcp/kernels/cpu_backend.h"
#include "pcp/kernels/vulkan_backend.h"
#include "pcp/models/gpt.h"
#include "pcp/training/dataset.h"
#include "pcp/training/gpt_program.h"
#include "pcp/training/inner_loop.h"

ABSL_FLAG(bool, large, false, "sgemm 1024,2048,4096 and the 6-layer/384-wide/block-256 GPT (for real GPUs)");
ABSL_FLAG(std::string, sizes, "", "sgemm sizes, comma-separated (default 64,128,256; --large: 1024,2048,4096)");
ABSL_FLAG(bool, gpt, true, "time the GPT train step");
ABSL_FLAG(bool, sgemm, true, "time the sgemm sizes");
ABSL_FLAG(bool, info, false, "print the Vulkan device's description and features first");
ABSL_FLAG(std::string, workload, "", "a name for the figures in --json (e.g. nanogpt, gpt2)");
ABSL_FLAG(int, steps, 0, "timed GPT steps (default 3; --large: 10)");
ABSL_FLAG(int, warmup, 1, "untimed GPT steps first (the first Vulkan run also compiles)");
ABSL_FLAG(int64_t, batch_size, 0, "GPT batch (default 4; --large: 12)");
ABSL_FLAG(int, threads, 0, "CPU backend threads (0 = all cores)");
ABSL_FLAG(std::string, device, "", "Vulkan device: index or name substring (default: best)");
ABSL_FLAG(bool, cpu, true, "also time the CPU backend");
ABSL_FLAG(int64_t, n_layer, 0, "GPT layers (0: 2; --large: 6)");
ABSL_FLAG(int64_t, n_head, 0, "GPT heads (0: 2; --large: 6)");
ABSL_FLAG(int64_t, n_embd, 0, "GPT width (0: 64; --large: 384)");
ABSL_FLAG(int64_t, block_size, 0, "GPT block (0: 32; --large: 256)");
ABSL_FLAG(int64_t, vocab_size, 65, "GPT vocabulary (65: tiny_shakespeare's characters)");
ABSL_FLAG(bool, bias, true, "biases in the GPT's linear layers and LayerNorms");
ABSL_FLAG(std::string, json, "", "append one JSON line per figure to this file");
ABSL_FLAG(std::string, row_kernels, "on",
          "Vulkan row kernels (a softmax or LayerNorm in one dispatch): on, off, or both (time the GPT step with "
          "and without them and print the dispatches per train step and per forward of each)");
ABSL_FLAG(std::string, precision, "f32",
          "f32, bf16 or f16: products (sgemm and the GPT's) read and write values rounded to that type, f32 "
          "accumulation and master weights (pcp/autodiff/mixed_precision.h)");
ABSL_FLAG(std::string, attention, "decomposed",
          "the GPT's attention: decomposed (as the model writes it) or fused (pcp.attention ops, "
          "FlashAttention's kernels; pcp/autodiff/attention.h)");

namespace pcp {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// A JSON string literal of `s` (device names: printable ASCII; others escaped as \u00XX).
std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      out += absl::StrFormat("\\u%04x", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string JsonNumber(double v) { return std::isfinite(v) ? absl::StrFormat("%.6g", v) : "null"; }

// Appends `line` (one JSON object) to --json, if set.
void AppendJson(const std::string& line) {
  const std::string path = absl::GetFlag(FLAGS_json);
  if (path.empty()) return;
  FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) {
    std::fprintf(stderr, "vulkan_bench: cannot append to %s\n", path.c_str());
    return;
  }
  std::fprintf(f, "%s\n", line.c_str());
  std::fclose(f);
}

// ms per C = A @ B (n x n, f32) on `backend`: one untimed run, then runs for >= ~0.3 s (at
// least 2, at most 50). Buffers stay on the device; only the run is timed.
absl::StatusOr<double> TimeMatmul(Backend& backend, int64_t n, Precision precision) {
  FunctionBuilder b("sgemm");
  ValueId x = b.Parameter({DType::kF32, {n, n}}), y = b.Parameter({DType::kF32, {n, n}});
  b.Return({b.MatMul(x, y)});
  absl::StatusOr<Function> f = b.Build();
  if (!f.ok()) return f.status();
  if (absl::Status s = ApplyMixedPrecision(*f, precision).status(); !s.ok()) return s;
  if (absl::Status s = RunStandardPasses(*f); !s.ok()) return s;
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

// Dispatches per Run of `f` compiled by Vulkan backend `backend`.
absl::StatusOr<VulkanSchedule> ScheduleOf(Backend& backend, const Function& f) {
  absl::StatusOr<std::unique_ptr<Executable>> exe = backend.Compile(f);
  if (!exe.ok()) return exe.status();
  return GetVulkanSchedule(**exe);
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
  const std::string row_kernels = absl::GetFlag(FLAGS_row_kernels);
  if (row_kernels != "on" && row_kernels != "off" && row_kernels != "both") {
    return Fail("--row_kernels",
                absl::InvalidArgumentError(absl::StrCat("'", row_kernels, "': expected on, off or both")));
  }
  options.row_kernels = row_kernels != "off";
  absl::StatusOr<std::unique_ptr<Backend>> vk = CreateVulkanBackend(options);
  absl::StatusOr<std::unique_ptr<Backend>> vk_plain = absl::UnavailableError("not asked for");
  if (vk.ok() && row_kernels == "both") {
    VulkanBackendOptions plain = options;
    plain.row_kernels = false;
    vk_plain = CreateVulkanBackend(plain);
    if (!vk_plain.ok()) return Fail("vulkan backend without row kernels", vk_plain.status());
  }
  std::printf("cpu:    %s\n", cpu->DeviceDescription().c_str());
  if (vk.ok()) {
    std::printf("vulkan: %s\n", (*vk)->DeviceDescription().c_str());
  } else {
    std::printf("vulkan: unavailable (%s); CPU figures only\n", vk.status().ToString().c_str());
  }
  if (absl::GetFlag(FLAGS_info)) {
    absl::StatusOr<std::vector<VulkanDeviceInfo>> devices = ListVulkanDevices();
    if (!devices.ok()) std::printf("vulkan devices: %s\n", devices.status().ToString().c_str());
    for (const VulkanDeviceInfo& d : devices.ok() ? *devices : std::vector<VulkanDeviceInfo>{}) {
      std::printf("vulkan device %d: %s (%s, Vulkan %s)%s%s\n  %s\n", d.index, d.name.c_str(),
                  std::string(VulkanDeviceKindName(d.kind)).c_str(), d.api_version.c_str(),
                  d.usable ? "" : ": unusable, ", d.why_unusable.c_str(), d.features.c_str());
    }
  }
  const bool with_cpu = absl::GetFlag(FLAGS_cpu);
  absl::StatusOr<Precision> parsed = ParsePrecision(absl::GetFlag(FLAGS_precision));
  if (!parsed.ok()) return Fail("--precision", parsed.status());
  const Precision precision = *parsed;
  AttentionMode attention = AttentionMode::kDecomposed;
  {
    const std::string a = absl::GetFlag(FLAGS_attention);
    bool known = false;
    for (const auto& [mode, name] : kAttentionModeNames) {
      if (a == name) {
        attention = mode;
        known = true;
      }
    }
    if (!known)
      return Fail("--attention", absl::InvalidArgumentError(absl::StrCat("'", a, "': expected decomposed or fused")));
  }

  std::printf("\nsgemm C = A @ B (n x n, products in %s), GFLOPS:\n%8s %12s %12s %10s\n",
              std::string(PrecisionName(precision)).c_str(), "n", "cpu", "vulkan", "vk/cpu");
  for (int64_t n : sizes) {
    if (!absl::GetFlag(FLAGS_sgemm)) break;
    const double flop = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
    double cpu_gflops = 0, vk_gflops = 0;
    auto record = [&](const Backend& backend, double ms) {
      AppendJson(absl::StrCat(R"({"kind": "matmul", "workload": )", JsonString(absl::GetFlag(FLAGS_workload)),
                              R"(, "backend": )", JsonString(backend.Name()), R"(, "device": )",
                              JsonString(backend.DeviceDescription()), R"(, "precision": )",
                              JsonString(std::string(PrecisionName(precision))), R"(, "n": )", n, R"(, "ms": )",
                              JsonNumber(ms), R"(, "tflops": )", JsonNumber(flop / (ms * 1e9)), "}"));
    };
    if (with_cpu) {
      absl::StatusOr<double> ms = TimeMatmul(*cpu, n, precision);
      if (!ms.ok()) return Fail("cpu sgemm", ms.status());
      cpu_gflops = flop / (*ms * 1e6);
      record(*cpu, *ms);
    }
    if (vk.ok()) {
      absl::StatusOr<double> ms = TimeMatmul(**vk, n, precision);
      if (!ms.ok()) return Fail("vulkan sgemm", ms.status());
      vk_gflops = flop / (*ms * 1e6);
      record(**vk, *ms);
    }
    std::printf("%8lld %12.2f %12.2f %10.3f\n", static_cast<long long>(n), cpu_gflops, vk_gflops,
                cpu_gflops > 0 ? vk_gflops / cpu_gflops : 0.0);
    std::fflush(stdout);
  }

  if (!absl::GetFlag(FLAGS_gpt)) return 0;
  GPTConfig m =
      large ? GPTConfig{.vocab_size = 65, .block_size = 256, .n_layer = 6, .n_head = 6, .n_embd = 384, .bias = true}
            : GPTConfig{.vocab_size = 65, .block_size = 32, .n_layer = 2, .n_head = 2, .n_embd = 64, .bias = true};
  if (absl::GetFlag(FLAGS_n_layer) > 0) m.n_layer = absl::GetFlag(FLAGS_n_layer);
  if (absl::GetFlag(FLAGS_n_head) > 0) m.n_head = absl::GetFlag(FLAGS_n_head);
  if (absl::GetFlag(FLAGS_n_embd) > 0) m.n_embd = absl::GetFlag(FLAGS_n_embd);
  if (absl::GetFlag(FLAGS_block_size) > 0) m.block_size = absl::GetFlag(FLAGS_block_size);
  if (absl::GetFlag(FLAGS_vocab_size) > 0) m.vocab_size = absl::GetFlag(FLAGS_vocab_size);
  m.bias = absl::GetFlag(FLAGS_bias);
  const int64_t batch = absl::GetFlag(FLAGS_batch_size) > 0 ? absl::GetFlag(FLAGS_batch_size) : (large ? 12 : 4);
  std::printf(
      "\nGPT train step (%s, %s attention): n_layer %lld, n_head %lld, n_embd %lld, block %lld, batch %lld, vocab %lld\n",
      std::string(PrecisionName(precision)).c_str(), absl::GetFlag(FLAGS_attention).c_str(),
      static_cast<long long>(m.n_layer), static_cast<long long>(m.n_head), static_cast<long long>(m.n_embd),
      static_cast<long long>(m.block_size), static_cast<long long>(batch), static_cast<long long>(m.vocab_size));
  absl::StatusOr<GptProgram> program =
      BuildGptProgram(m, batch,
                      AdamWConfig{.beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8, .weight_decay = 0.1, .grad_clip = 1.0},
                      GptProgramOptions{.precision = precision, .attention = attention});
  if (!program.ok()) return Fail("GPT program", program.status());
  absl::StatusOr<std::vector<NamedTensor>> init = InitGptParams(m, 1337);
  if (!init.ok()) return Fail("GPT init", init.status());
  std::vector<Tensor> params;
  for (const NamedTensor& t : *init) params.push_back(t.tensor);
  GptTiming c, v;
  // rows: "true" / "false" for the Vulkan backend's row kernels, "null" for the CPU backend.
  auto record = [&](const Backend& backend, const GptTiming& t, const char* rows = "null", int dispatches = -1) {
    AppendJson(
        absl::StrCat(R"({"kind": "gpt", "workload": )", JsonString(absl::GetFlag(FLAGS_workload)), R"(, "backend": )",
                     JsonString(backend.Name()), R"(, "device": )", JsonString(backend.DeviceDescription()),
                     R"(, "precision": )", JsonString(std::string(PrecisionName(precision))), R"(, "n_layer": )",
                     m.n_layer, R"(, "n_head": )", m.n_head, R"(, "n_embd": )", m.n_embd, R"(, "block_size": )",
                     m.block_size, R"(, "vocab_size": )", m.vocab_size, R"(, "bias": )", m.bias ? "true" : "false",
                     R"(, "batch_size": )", batch, R"(, "ms_per_step": )", JsonNumber(t.ms), R"(, "first_ms": )",
                     JsonNumber(t.first_ms), R"(, "loss": )", JsonNumber(t.loss), R"(, "row_kernels": )", rows,
                     R"(, "dispatches": )", dispatches >= 0 ? absl::StrCat(dispatches) : "null", "}"));
  };
  if (with_cpu) {
    absl::StatusOr<GptTiming> t = TimeGpt(*cpu, *program, params);
    if (!t.ok()) return Fail("cpu GPT", t.status());
    c = *t;
    std::printf("cpu:    %10.2f ms/step (compile + first step %.0f ms), loss %.4f\n", c.ms, c.first_ms, c.loss);
    std::fflush(stdout);
    record(*cpu, c);
  }
  if (vk.ok()) {
    struct Variant {
      Backend* backend;
      bool rows;
      const char* label;
    };
    std::vector<Variant> variants = {{vk->get(), options.row_kernels, options.row_kernels ? "" : " (no row kernels)"}};
    if (vk_plain.ok()) variants.push_back({vk_plain->get(), false, " (no row kernels)"});
    for (const Variant& variant : variants) {
      int dispatches = -1;
      if (vk_plain.ok()) {
        absl::StatusOr<VulkanSchedule> step = ScheduleOf(*variant.backend, program->train_step);
        if (!step.ok()) return Fail("vulkan GPT train step", step.status());
        absl::StatusOr<VulkanSchedule> forward = ScheduleOf(*variant.backend, program->eval_loss);
        if (!forward.ok()) return Fail("vulkan GPT forward", forward.status());
        dispatches = step->dispatches;
        std::printf(
            "vulkan%s: %d dispatches per train step (%d row kernels, %d map groups, %d reduction groups), %d per "
            "forward (%d row kernels)\n",
            variant.label, step->dispatches, step->row_kernels, step->map_groups, step->reduction_groups,
            forward->dispatches, forward->row_kernels);
      }
      absl::StatusOr<GptTiming> t = TimeGpt(*variant.backend, *program, params);
      if (!t.ok()) return Fail("vulkan GPT", t.status());
      std::printf("vulkan%s: %10.2f ms/step (compile + first step %.0f ms), loss %.4f\n", variant.label, t->ms,
                  t->first_ms, t->loss);
      std::fflush(stdout);
      record(*variant.backend, *t, variant.rows ? "true" : "false", dispatches);
      if (variant.backend == vk->get()) {
        v = *t;
      } else if (v.ms > 0) {
        std::printf("vulkan without/with row kernels time ratio: %.3f (> 1: row kernels faster)\n", t->ms / v.ms);
      }
    }
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
