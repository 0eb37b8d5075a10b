// pcp-stablehlo-run: evaluates one function of a StableHLO module on inputs read from a
// safetensors file and writes its results to another, so that an export can be checked
// against the framework that produced it (bench/public_exports/), or a module's results seen.
//
//   pcp-stablehlo-run model.mlir --inputs=in.safetensors --outputs=out.safetensors
//       [--function=main] [--backend=interpreter|cpu|vulkan|auto] [--threads=0] [--runs=1]
//
// Inputs: by argument name when every argument's name is in the file (its pcp.name, else
// "arg0", "arg1", ... by position), otherwise the file's tensors in order; each of its
// argument's exact type. Outputs: each result's pcp.name, else "result0", "result1", ... . f64 values are computed in f32
// on a backend (LowerF64ToF32), exactly by the interpreter.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/passes.h"
#include "pcp/autodiff/text.h"
#include "pcp/base/file.h"
#include "pcp/base/status_macros.h"
#include "pcp/kernels/backend_factory.h"
#include "pcp/tensor/convert.h"
#include "pcp/tensor/safetensors.h"

ABSL_FLAG(std::string, inputs, "", "safetensors file with one tensor per argument (required)");
ABSL_FLAG(std::string, outputs, "", "safetensors file to write the results to (required)");
ABSL_FLAG(std::string, function, "", "function to run (default: main, else the module's first)");
ABSL_FLAG(std::string, backend, "interpreter", "interpreter | cpu | vulkan | vulkan:N | auto");
ABSL_FLAG(int, threads, 0, "CPU backend threads (0 = all cores)");
ABSL_FLAG(int, runs, 1, "run this many times and report the fastest (a backend compiles once)");

namespace pcp {
namespace {

std::string ArgName(const Function& f, size_t i) {
  return f.param_names[i].empty() ? absl::StrCat("arg", i) : f.param_names[i];
}

// The function's arguments from the file: by name when every name is there, else in order.
absl::StatusOr<std::vector<Tensor>> MatchInputs(const Function& f, const SafetensorsContents& file,
                                                const std::string& path) {
  bool by_name = true;
  for (size_t i = 0; i < f.params.size(); ++i) by_name = by_name && file.Find(ArgName(f, i)) != nullptr;
  if (!by_name && file.tensors.size() != f.params.size()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": @", f.name, " takes ", f.params.size(),
                                                   " arguments but the file has ", file.tensors.size(),
                                                   " tensors and not every argument's name (e.g. '",
                                                   f.params.empty() ? "" : ArgName(f, 0), "')"));
  }
  std::vector<Tensor> args;
  for (size_t i = 0; i < f.params.size(); ++i) {
    const Tensor& t = by_name ? *file.Find(ArgName(f, i)) : file.tensors[i].tensor;
    const TensorType& want = f.type(f.params[i]);
    if (t.dtype() != want.dtype || t.shape() != want.shape) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": argument #", i, " (", ArgName(f, i), ") is ",
                                                     want.ToString(), " but the file's tensor '",
                                                     by_name ? ArgName(f, i) : file.tensors[i].name, "' is ",
                                                     TensorType{t.dtype(), t.shape()}.ToString()));
    }
    args.push_back(t);
  }
  return args;
}

absl::StatusOr<std::vector<Tensor>> RunOnBackend(const std::string& name, Function f, const std::vector<Tensor>& args,
                                                 int runs, double* best_s) {
  PCP_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, CreateBackend(name, absl::GetFlag(FLAGS_threads)));
  std::string first;
  PCP_ASSIGN_OR_RETURN(int lowered, LowerF64ToF32(f, &first));
  if (lowered > 0) std::fprintf(stderr, "note: %d f64 values computed in f32 (first: %s)\n", lowered, first.c_str());
  PCP_ASSIGN_OR_RETURN(std::unique_ptr<Executable> exe, backend->Compile(f));
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<Buffer*> in, out;
  for (size_t i = 0; i < args.size(); ++i) {
    PCP_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> b, backend->Allocate(f.type(f.params[i])));
    if (args[i].dtype() == DType::kF64) {
      PCP_ASSIGN_OR_RETURN(Tensor lowered_arg, ConvertTensor(args[i], DType::kF32));
      PCP_RETURN_IF_ERROR(backend->CopyIn(lowered_arg, *b));
    } else {
      PCP_RETURN_IF_ERROR(backend->CopyIn(args[i], *b));
    }
    in.push_back(b.get());
    owned.push_back(std::move(b));
  }
  for (ValueId r : f.results) {
    PCP_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> b, backend->Allocate(f.type(r)));
    out.push_back(b.get());
    owned.push_back(std::move(b));
  }
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    PCP_RETURN_IF_ERROR(exe->Run(in, out));
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r == 0 || s < *best_s) *best_s = s;
  }
  std::vector<Tensor> results;
  for (Buffer* b : out) {
    PCP_ASSIGN_OR_RETURN(Tensor t, backend->CopyOut(*b));
    results.push_back(std::move(t));
  }
  std::fprintf(stderr, "%s: %s\n", backend->Name().c_str(), backend->DeviceDescription().c_str());
  return results;
}

absl::Status Run(const std::string& module_path) {
  const std::string inputs = absl::GetFlag(FLAGS_inputs), outputs = absl::GetFlag(FLAGS_outputs);
  if (inputs.empty() || outputs.empty()) return absl::InvalidArgumentError("--inputs and --outputs are required");
  const int runs = absl::GetFlag(FLAGS_runs);
  if (runs < 1) return absl::InvalidArgumentError(absl::StrCat("--runs must be at least 1, got ", runs));
  PCP_ASSIGN_OR_RETURN(std::string text, ReadFile(module_path));
  PCP_ASSIGN_OR_RETURN(Module module, ParseModule(text, module_path));
  std::string name = absl::GetFlag(FLAGS_function);
  const Function* f = nullptr;
  if (name.empty()) {
    f = module.Find("main") != nullptr ? module.Find("main") : &module.functions.at(0);
  } else if ((f = module.Find(name)) == nullptr) {
    return absl::NotFoundError(absl::StrCat(module_path, " has no function @", name));
  }
  PCP_ASSIGN_OR_RETURN(SafetensorsContents file, ReadSafetensorsFile(inputs));
  PCP_ASSIGN_OR_RETURN(std::vector<Tensor> args, MatchInputs(*f, file, inputs));
  const std::string backend = absl::GetFlag(FLAGS_backend);
  double best_s = 0;
  std::vector<Tensor> results;
  if (backend == "interpreter") {
    for (int r = 0; r < runs; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      PCP_ASSIGN_OR_RETURN(results, Interpret(*f, args));
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (r == 0 || s < best_s) best_s = s;
    }
  } else {
    PCP_ASSIGN_OR_RETURN(results, RunOnBackend(backend, *f, args, runs, &best_s));
  }
  std::vector<NamedTensor> named;
  for (size_t i = 0; i < results.size(); ++i) {
    std::string n = f->result_names[i].empty() ? absl::StrCat("result", i) : f->result_names[i];
    named.push_back({std::move(n), std::move(results[i])});
  }
  PCP_RETURN_IF_ERROR(WriteSafetensorsFile(outputs, named));
  std::printf("@%s on %s: %zu arguments, %zu results in %.3f s -> %s\n", f->name.c_str(), backend.c_str(), args.size(),
              named.size(), best_s, outputs.c_str());
  return absl::OkStatus();
}

}  // namespace
}  // namespace pcp

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "pcp-stablehlo-run MODULE.mlir --inputs=IN.safetensors --outputs=OUT.safetensors [--function=F] "
      "[--backend=interpreter|cpu|vulkan|auto]");
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() != 2) {
    std::fprintf(stderr, "usage: %s\n", absl::ProgramUsageMessage().data());
    return 2;
  }
  absl::Status status = pcp::Run(positional[1]);
  if (!status.ok()) {
    std::fprintf(stderr, "pcp-stablehlo-run: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
