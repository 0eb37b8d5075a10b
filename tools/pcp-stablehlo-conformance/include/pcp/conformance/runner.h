// Runs one StableHLO test case: decides its scope (scope.h), parses it with its checks
// recorded (text.h's ParseOptions), evaluates every function that holds checks and takes no
// arguments with the reference interpreter and each requested backend, and compares every
// check's two values as the check dialect does (check_compare.h).
//
//   CaseResult r = RunCase(text, "abs_float32_20_20.mlir", {.backends = {"cpu"}});
//   // r.verdict == Verdict::kFailed, r.reason == "cpu: check.expect_close@10:5: 1 of 400 ..."
//
// A case is a whole file of stablehlo/testdata/, or one `// -----`-separated part of a file of
// stablehlo/tests/interpret/ (SplitCases).
#ifndef PCP_CONFORMANCE_RUNNER_H_
#define PCP_CONFORMANCE_RUNNER_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace pcp::conformance {

enum class Verdict { kPassed, kFailed, kUnsupported };
absl::string_view VerdictName(Verdict v);  // "passed", "failed", "unsupported"

struct CaseResult {
  Verdict verdict = Verdict::kFailed;
  // Failed: what went wrong, prefixed by where ("parse: file:3:7: ...", "interpreter: ...",
  // "cpu: check.expect_eq@12:5: 2 of 8 elements differ ..."), one entry per evaluator (the
  // interpreter, then each backend) that failed, "; "-separated. Unsupported: what the case
  // lacks, "; "-separated ("op stablehlo.pad; type ui32"), or "no checks".
  std::string reason;
  std::vector<std::string> lacks;  // unsupported: each thing the case lacks
  int checks = 0;                  // checks evaluated (per backend)
};

struct RunOptions {
  // Backends besides the interpreter, by backend_factory.h's names ("cpu", "vulkan").
  std::vector<std::string> backends = {"cpu"};
  int threads = 1;
};

CaseResult RunCase(absl::string_view text, absl::string_view source_name, const RunOptions& options);

// The parts of an interpret test file between lines that start with "// -----".
std::vector<std::string> SplitCases(absl::string_view text);

// The op a testdata file tests: its name up to the first element type
// ("abs_float32_20_20.mlir" -> "abs", "scatter_add_int32_5_6.mlir" -> "scatter_add");
// the file's stem if no element type is in the name ("add.mlir" -> "add").
std::string TableOp(absl::string_view file_name);

}  // namespace pcp::conformance

#endif  // PCP_CONFORMANCE_RUNNER_H_
