// Test-only: the two ways PCP runs a function, the reference interpreter and the CPU backend,
// for tests that check both against one oracle.
//
//   for (const auto& [runner_name, run] : Runners()) {
//     SCOPED_TRACE(runner_name);
//     absl::StatusOr<std::vector<Tensor>> results = run(function, args);
//   }
#ifndef PCP_TESTS_LIBS_MODELS_FUNCTION_RUNNERS_H_
#define PCP_TESTS_LIBS_MODELS_FUNCTION_RUNNERS_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "pcp/autodiff/ir.h"
#include "pcp/kernels/backend.h"
#include "pcp/tensor/tensor.h"

namespace pcp::testing {

using Runner = std::function<absl::StatusOr<std::vector<Tensor>>(const Function&, const std::vector<Tensor>&)>;

// {"interpreter", Interpret} and {"cpu", a 2-thread CPU backend}, in that order.
std::vector<std::pair<std::string, Runner>> Runners();

// Runs `function` on `backend`: compile, copy in, run, copy out.
absl::StatusOr<std::vector<Tensor>> RunOnBackend(Backend& backend, const Function& function,
                                                 const std::vector<Tensor>& args);

}  // namespace pcp::testing

#endif  // PCP_TESTS_LIBS_MODELS_FUNCTION_RUNNERS_H_
