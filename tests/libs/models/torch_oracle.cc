#include "torch_oracle.h"

#include <stdlib.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pcp/base/status_macros.h"
#include "pcp/testing/tensor_testing.h"

namespace pcp::testing {

bool PythonCanImport(const std::string& module) {
  return std::system(absl::StrCat(kPython, " -c 'import ", module, "' >/dev/null 2>&1").c_str()) == 0;
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "pcp_torch_oracle_XXXXXX").string();
  if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

absl::StatusOr<SafetensorsContents> RunPythonOracle(const std::string& script, const std::string& leading_args,
                                                    const std::vector<NamedTensor>& inputs,
                                                    const std::string& trailing_args) {
  TempDir dir;
  if (dir.path().empty()) return absl::InternalError("mkdtemp failed");
  const std::string in = dir.path() + "/in.safetensors", out = dir.path() + "/out.safetensors";
  PCP_RETURN_IF_ERROR(WriteSafetensorsFile(in, inputs));
  std::string cmd = absl::StrCat(kPython, " ", script, " ", leading_args, " ", in, " ", out);
  if (!trailing_args.empty()) absl::StrAppend(&cmd, " ", trailing_args);
  if (int rc = std::system(cmd.c_str()); rc != 0) {
    return absl::InternalError(
        absl::StrCat(std::filesystem::path(script).filename().string(), " failed (", rc, "): ", cmd));
  }
  return ReadSafetensorsFile(out);
}

void ErrorLog::Check(const std::string& what, const Tensor& actual, const Tensor* expected) {
  ASSERT_NE(expected, nullptr) << what << " missing from the oracle's output";
  ASSERT_EQ(actual.shape(), expected->shape()) << what;
  // MaxRelativeError skips NaNs (std::max drops them), so non-finite values are caught here.
  double e = MaxRelativeError(actual, *expected);
  for (double x : ToDoubles(actual)) {
    if (!std::isfinite(x)) e = INFINITY;
  }
  EXPECT_LE(e, tolerance) << what;
  if (e > max_error) max_error = e, worst = what;
}

}  // namespace pcp::testing
