// Test-only: PyTorch (or any /usr/bin/python3 script) as the oracle of a parity test. A script
// reads named tensors from a safetensors file and writes its results to another; the test
// compares PCP's tensors with them by relative error.
//
//   if (!PythonCanImport("torch")) GTEST_SKIP() << kPython << " cannot import torch (install python3-torch)";
//   absl::StatusOr<SafetensorsContents> ref = RunPythonOracle(script, "grad", inputs);  // script grad IN OUT
//   ErrorLog log;  // tolerance 1e-4 unless set
//   log.Check("loss", ours, ref->Find("loss"));  // fails the test beyond the tolerance
//   std::cout << log.max_error << " (" << log.worst << ")\n";
//
// The error of a tensor is max |a - b| / max |b| (MaxRelativeError); a non-finite value of
// ours counts as an infinite error.
#ifndef PCP_TESTS_LIBS_MODELS_TORCH_ORACLE_H_
#define PCP_TESTS_LIBS_MODELS_TORCH_ORACLE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pcp/tensor/safetensors.h"
#include "pcp/tensor/tensor.h"

namespace pcp::testing {

inline constexpr char kPython[] = "/usr/bin/python3";

// Whether kPython can `import module` (e.g. "torch", "numpy").
bool PythonCanImport(const std::string& module);

// A fresh directory under the system's temp directory, removed with everything in it on
// destruction; path() is empty if it could not be made.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Writes `inputs` to IN.safetensors in a temporary directory, runs
// `kPython script leading_args IN OUT trailing_args` (arguments as shell words, already
// quoted where needed) and returns what the script wrote to OUT.safetensors. An error names
// the command when the script fails.
absl::StatusOr<SafetensorsContents> RunPythonOracle(const std::string& script, const std::string& leading_args,
                                                    const std::vector<NamedTensor>& inputs,
                                                    const std::string& trailing_args = "");

// Checks tensors against the oracle's and keeps the largest error seen.
struct ErrorLog {
  double tolerance = 1e-4;
  double max_error = 0.0;
  std::string worst;  // what had the largest error
  // Fails the test when `expected` is missing, the shapes differ or the error exceeds tolerance.
  void Check(const std::string& what, const Tensor& actual, const Tensor* expected);
};

}  // namespace pcp::testing

#endif  // PCP_TESTS_LIBS_MODELS_TORCH_ORACLE_H_
