#include "function_runners.h"

#include <memory>

#include "pcp/autodiff/interpreter.h"
#include "pcp/base/status_macros.h"
#include "pcp/kernels/cpu_backend.h"

namespace pcp::testing {

std::vector<std::pair<std::string, Runner>> Runners() {
  auto cpu = std::shared_ptr<Backend>(CreateCpuBackend({.threads = 2}));
  return {{"interpreter", [](const Function& f, const std::vector<Tensor>& args) { return Interpret(f, args); }},
          {"cpu", [cpu](const Function& f, const std::vector<Tensor>& args) { return RunOnBackend(*cpu, f, args); }}};
}

absl::StatusOr<std::vector<Tensor>> RunOnBackend(Backend& backend, const Function& function,
                                                 const std::vector<Tensor>& args) {
  PCP_ASSIGN_OR_RETURN(std::unique_ptr<Executable> exe, backend.Compile(function));
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<Buffer*> in, out;
  for (size_t i = 0; i < args.size(); ++i) {
    PCP_ASSIGN_OR_RETURN(owned.emplace_back(), backend.Allocate(function.type(function.params[i])));
    PCP_RETURN_IF_ERROR(backend.CopyIn(args[i], *owned.back()));
    in.push_back(owned.back().get());
  }
  for (ValueId r : function.results) {
    PCP_ASSIGN_OR_RETURN(owned.emplace_back(), backend.Allocate(function.type(r)));
    out.push_back(owned.back().get());
  }
  PCP_RETURN_IF_ERROR(exe->Run(in, out));
  std::vector<Tensor> results;
  for (Buffer* b : out) {
    PCP_ASSIGN_OR_RETURN(results.emplace_back(), backend.CopyOut(*b));
  }
  return results;
}

}  // namespace pcp::testing
