// The train step of imported StableHLO models on the CPU backend: one or more modules, their
// steps alternated one by one (this machine's speed drifts by up to 1.5x within minutes, so
// timings taken apart would compare phases, not programs), ms/step as the median of each
// module's steps and, for two modules, the median of the per-pair ratios.
//
//   build/bench/pcp_import_step_bench --stablehlo=before.mlir,examples/stablehlo/nanogpt_2l.mlir
//       [--steps=40] [--warmup=3] [--threads=2]
//
// Each module is imported as a job would import it (the last two arguments are the data,
// initial values from the default init rule), its AdamW train step built and compiled once;
// tokens and targets are drawn once (uniform over the model's vocabulary-sized first
// dimension of its first parameter) and reused every step, so only the program differs.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "pcp/autodiff/train_step.h"
#include "pcp/base/status_macros.h"
#include "pcp/kernels/cpu_backend.h"
#include "pcp/models/stablehlo_model.h"

ABSL_FLAG(std::string, stablehlo, PCP_SOURCE_DIR "/examples/stablehlo/nanogpt_2l.mlir",
          "comma-separated StableHLO modules whose @main is a loss (params..., tokens, targets)");
ABSL_FLAG(int, steps, 40, "timed steps per module");
ABSL_FLAG(int, warmup, 3, "untimed steps per module first");
ABSL_FLAG(int, threads, 2, "CPU backend threads");

namespace pcp {
namespace {

// One module's compiled step with its state resident in backend buffers.
struct Runner {
  std::string file;
  std::unique_ptr<Executable> exe;
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<Buffer*> args, results;
  std::vector<double> ms;
  float loss = 0;
};

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

absl::StatusOr<std::unique_ptr<Buffer>> Upload(Backend& backend, const Tensor& t) {
  PCP_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> buf, backend.Allocate({t.dtype(), t.shape()}));
  PCP_RETURN_IF_ERROR(backend.CopyIn(t, *buf));
  return buf;
}

absl::Status Prepare(Backend& backend, const std::string& file, Runner* r) {
  r->file = file;
  PCP_ASSIGN_OR_RETURN(std::string text, ReadFile(file));
  PCP_ASSIGN_OR_RETURN(ImportedModel m, ImportStableHloModel(text, file, {}));
  PCP_ASSIGN_OR_RETURN(Function step,
                       BuildTrainStep(m.forward, AdamWConfig{.beta2 = 0.99, .weight_decay = 0.1, .grad_clip = 1.0}));
  PCP_ASSIGN_OR_RETURN(r->exe, backend.Compile(step));
  const int64_t vocab = m.types.empty() || m.types[0].rank() == 0 ? 2 : m.types[0].shape[0];
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(vocab - 1));
  std::vector<Tensor> inputs = m.initial;
  for (const Tensor& p : m.initial) inputs.push_back(Tensor(DType::kF32, p.shape()));  // m: zeros
  for (const Tensor& p : m.initial) inputs.push_back(Tensor(DType::kF32, p.shape()));  // v: zeros
  inputs.push_back(Tensor::Scalar<float>(1.0f));                                       // step
  inputs.push_back(Tensor::Scalar<float>(1e-3f));                                      // lr
  for (int k = 0; k < 2; ++k) {
    Tensor data(DType::kI32, {m.batch_size, m.block_size});
    for (int64_t i = 0; i < data.num_elements(); ++i) data.data<int32_t>()[i] = token(rng);
    inputs.push_back(data);
  }
  for (const Tensor& t : inputs) {
    PCP_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> buf, Upload(backend, t));
    r->args.push_back(buf.get());
    r->owned.push_back(std::move(buf));
  }
  for (ValueId v : step.results) {
    PCP_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> buf, backend.Allocate(step.type(v)));
    r->results.push_back(buf.get());
    r->owned.push_back(std::move(buf));
  }
  return absl::OkStatus();
}

// One step; the same inputs every time (the results go to their own buffers).
absl::StatusOr<double> Step(Backend& backend, Runner& r) {
  const absl::Time start = absl::Now();
  PCP_RETURN_IF_ERROR(r.exe->Run(r.args, r.results));
  const double ms = absl::ToDoubleMilliseconds(absl::Now() - start);
  PCP_ASSIGN_OR_RETURN(Tensor loss, backend.CopyOut(*r.results.back()));
  r.loss = loss.data<float>()[0];
  return ms;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int Main() {
  std::unique_ptr<Backend> backend = CreateCpuBackend({.threads = absl::GetFlag(FLAGS_threads)});
  std::vector<Runner> runners;
  for (absl::string_view file : absl::StrSplit(absl::GetFlag(FLAGS_stablehlo), ',', absl::SkipEmpty())) {
    runners.emplace_back();
    if (absl::Status s = Prepare(*backend, std::string(file), &runners.back()); !s.ok()) {
      std::fprintf(stderr, "import_step_bench: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  const int warmup = absl::GetFlag(FLAGS_warmup), steps = absl::GetFlag(FLAGS_steps);
  std::printf("%zu module(s), %d threads, %d warm-up + %d timed steps each, alternated step by step\n", runners.size(),
              absl::GetFlag(FLAGS_threads), warmup, steps);
  for (int i = 0; i < warmup + steps; ++i) {
    for (Runner& r : runners) {
      absl::StatusOr<double> ms = Step(*backend, r);
      if (!ms.ok()) {
        std::fprintf(stderr, "import_step_bench: %s: %s\n", r.file.c_str(), std::string(ms.status().message()).c_str());
        return 1;
      }
      if (i >= warmup) r.ms.push_back(*ms);
    }
  }
  for (const Runner& r : runners) {
    std::printf("%s: median %.2f ms/step (min %.2f), loss %.6f\n", r.file.c_str(), Median(r.ms),
                *std::min_element(r.ms.begin(), r.ms.end()), r.loss);
  }
  if (runners.size() == 2) {
    std::vector<double> ratios;
    int faster = 0;
    for (int i = 0; i < steps; ++i) {
      ratios.push_back(runners[1].ms[i] / runners[0].ms[i]);
      faster += runners[1].ms[i] < runners[0].ms[i];
    }
    std::printf("second / first: median of %d pairs %.3f (second faster in %d)\n", steps, Median(ratios), faster);
  }
  return 0;
}

}  // namespace
}  // namespace pcp

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return pcp::Main();
}
