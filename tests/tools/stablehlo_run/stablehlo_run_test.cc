// pcp-stablehlo-run (tools/pcp-stablehlo-run): a module's function evaluated on a safetensors
// file's tensors, matched by argument name or in order, on the interpreter and the CPU
// backend; the results written as safetensors named after the module's results; bad input
// is an error naming the argument, never a crash.
#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pcp/base/file.h"
#include "pcp/tensor/safetensors.h"

namespace pcp {
namespace {

// y = x * w (w broadcast over rows) + 1, and the row sums of x; arguments and the first
// result named by pcp.name.
constexpr char kModule[] = R"(module @jit_f {
  func.func public @main(%arg0: tensor<2x3xf32> {pcp.name = "x"}, %arg1: tensor<3xf32> {pcp.name = "w"}) -> (tensor<2x3xf32> {pcp.name = "y"}, tensor<2xf32>) {
    %one = stablehlo.constant dense<1.0> : tensor<2x3xf32>
    %zero = stablehlo.constant dense<0.0> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<2x3xf32>
    %2 = stablehlo.add %1, %one : tensor<2x3xf32>
    %3 = stablehlo.reduce(%arg0 init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    return %2, %3 : tensor<2x3xf32>, tensor<2xf32>
  }
}
)";

Tensor F32(std::vector<int64_t> shape, std::vector<float> values) {
  Tensor t(DType::kF32, shape);
  for (size_t i = 0; i < values.size(); ++i) t.data<float>()[i] = values[i];
  return t;
}

class StablehloRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           absl::StrCat("stablehlo_run_", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    ASSERT_TRUE(WriteFileAtomic(Path("f.mlir"), kModule).ok());
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  // Runs the tool with `flags`; returns its exit status, its output in *output.
  int Run(const std::string& flags, std::string* output) {
    std::string command = absl::StrCat(PCP_STABLEHLO_RUN_BINARY, " ", Path("f.mlir"), " ", flags, " 2>&1");
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return -1;
    std::array<char, 512> buffer;
    output->clear();
    while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) output->append(buffer.data());
    int status = pclose(pipe);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  void ExpectResults(const std::string& out_path) {
    absl::StatusOr<SafetensorsContents> out = ReadSafetensorsFile(out_path);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->tensors.size(), 2u);
    EXPECT_EQ(out->tensors[0].name, "y");        // pcp.name
    EXPECT_EQ(out->tensors[1].name, "result1");  // unnamed
    const float* y = out->tensors[0].tensor.data<float>();
    const std::vector<float> want_y = {1 + 1 * 10, 1 + 2 * 20, 1 + 3 * 30, 1 + 4 * 10, 1 + 5 * 20, 1 + 6 * 30};
    for (size_t i = 0; i < want_y.size(); ++i) EXPECT_EQ(y[i], want_y[i]) << i;
    const float* sums = out->tensors[1].tensor.data<float>();
    EXPECT_EQ(sums[0], 6.0f);
    EXPECT_EQ(sums[1], 15.0f);
  }

  std::filesystem::path dir_;
};

TEST_F(StablehloRunTest, MatchesArgumentsByNameOnEveryEvaluator) {
  // Named w first: matched by name, not by position.
  ASSERT_TRUE(WriteSafetensorsFile(Path("in.safetensors"),
                                   {{"w", F32({3}, {10, 20, 30})}, {"x", F32({2, 3}, {1, 2, 3, 4, 5, 6})}})
                  .ok());
  for (const char* backend : {"interpreter", "cpu"}) {
    SCOPED_TRACE(backend);
    std::string output;
    const std::string out = Path(absl::StrCat(backend, ".safetensors"));
    ASSERT_EQ(Run(absl::StrCat("--inputs=", Path("in.safetensors"), " --outputs=", out, " --backend=", backend,
                               " --threads=1 --runs=2"),
                  &output),
              0)
        << output;
    EXPECT_TRUE(absl::StrContains(output, absl::StrCat("@main on ", backend, ": 2 arguments, 2 results"))) << output;
    ExpectResults(out);
  }
}

TEST_F(StablehloRunTest, TakesTensorsInOrderWhenNamesDoNotMatch) {
  ASSERT_TRUE(WriteSafetensorsFile(Path("in.safetensors"),
                                   {{"a", F32({2, 3}, {1, 2, 3, 4, 5, 6})}, {"b", F32({3}, {10, 20, 30})}})
                  .ok());
  std::string output;
  ASSERT_EQ(Run(absl::StrCat("--inputs=", Path("in.safetensors"), " --outputs=", Path("out.safetensors")), &output), 0)
      << output;
  ExpectResults(Path("out.safetensors"));
}

TEST_F(StablehloRunTest, BadInputIsAnErrorNamingWhat) {
  ASSERT_TRUE(WriteSafetensorsFile(Path("wrong_type.safetensors"),
                                   {{"x", F32({2, 3}, {1, 2, 3, 4, 5, 6})}, {"w", F32({2}, {1, 2})}})
                  .ok());
  ASSERT_TRUE(WriteSafetensorsFile(Path("one.safetensors"), {{"a", F32({3}, {1, 2, 3})}}).ok());
  struct Case {
    std::string flags, message;
  };
  const std::vector<Case> cases = {
      {absl::StrCat("--inputs=", Path("wrong_type.safetensors"), " --outputs=", Path("o.safetensors")),
       "argument #1 (w) is tensor<3xf32> but the file's tensor 'w' is tensor<2xf32>"},
      {absl::StrCat("--inputs=", Path("one.safetensors"), " --outputs=", Path("o.safetensors")),
       "@main takes 2 arguments but the file has 1 tensors and not every argument's name (e.g. 'x')"},
      {absl::StrCat("--inputs=", Path("one.safetensors"), " --outputs=", Path("o.safetensors"), " --function=g"),
       "has no function @g"},
      {absl::StrCat("--inputs=", Path("absent.safetensors"), " --outputs=", Path("o.safetensors")),
       "absent.safetensors"},
      {absl::StrCat("--outputs=", Path("o.safetensors")), "--inputs and --outputs are required"},
      {absl::StrCat("--inputs=", Path("one.safetensors"), " --outputs=", Path("o.safetensors"), " --runs=0"),
       "--runs must be at least 1, got 0"},
  };
  for (const Case& c : cases) {
    std::string output;
    EXPECT_EQ(Run(c.flags, &output), 1) << c.flags << "\n" << output;
    EXPECT_TRUE(absl::StrContains(output, c.message)) << c.flags << "\n" << output;
    EXPECT_FALSE(std::filesystem::exists(Path("o.safetensors"))) << c.flags;
  }
}

}  // namespace
}  // namespace pcp
