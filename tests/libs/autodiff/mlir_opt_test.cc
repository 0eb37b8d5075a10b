// Interoperability with LLVM's MLIR: `mlir-opt --allow-unregistered-dialect` (Debian's
// mlir-15-tools) accepts every module PCP prints, prints it back in generic form exactly as
// PCP does, and PCP parses what mlir-opt prints (its list and hex literal spellings) back to
// the same module. Skipped, with the reason, where mlir-opt is not installed.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/text.h"
#include "text_test_util.h"

namespace pcp {
namespace {

using text_testing::FindMlirOpt;
using text_testing::MlirOptResult;
using text_testing::ModulesEqual;
using text_testing::RunMlirOpt;

class MlirOptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> path = FindMlirOpt();
    if (!path.ok()) GTEST_SKIP() << "skipped: " << path.status().message();
    mlir_opt_ = *path;
  }

  // mlir-opt accepts `m`; parsing its output (printed with `extra_args`) gives `m` back.
  void ExpectAcceptedAndReadBack(const Module& m, const std::vector<std::string>& extra_args = {}) {
    std::string text = PrintModule(m);
    MlirOptResult r = RunMlirOpt(mlir_opt_, text, extra_args);
    ASSERT_TRUE(r.status.ok()) << r.status.message() << "\n" << r.stderr_text << "\n" << text;
    absl::StatusOr<Module> back = ParseModule(r.output, "mlir-opt-output");
    ASSERT_TRUE(back.ok()) << back.status().message() << "\n" << r.output;
    EXPECT_TRUE(ModulesEqual(m, *back)) << r.output;
  }

  std::string mlir_opt_;
};

TEST_F(MlirOptTest, AcceptsOneModulePerOp) {
  for (int i = 0; i < kNumOps; ++i) {
    absl::StatusOr<Function> f = text_testing::SingleOpFunction(AllOps()[i]);
    ASSERT_TRUE(f.ok()) << f.status();
    Module m;
    m.functions.push_back(*std::move(f));
    SCOPED_TRACE(OpName(AllOps()[i]));
    ExpectAcceptedAndReadBack(m);
  }
}

TEST_F(MlirOptTest, AcceptsComposedModuleAndExamples) {
  absl::StatusOr<Module> all = text_testing::AllOpsModule();
  ASSERT_TRUE(all.ok()) << all.status();
  ExpectAcceptedAndReadBack(*all);
  absl::StatusOr<std::vector<std::pair<std::string, Module>>> examples = text_testing::ExampleModules();
  ASSERT_TRUE(examples.ok()) << examples.status();
  for (const auto& [name, module] : *examples) {
    SCOPED_TRACE(name);
    ExpectAcceptedAndReadBack(module);
  }
  ExpectAcceptedAndReadBack(Module{});
}

// Decimal float literals replaced by their f32 bits in hex: MLIR spells some floats
// differently (e.g. 9.99999974E-6 for PCP's 1.000000e-05), with the same value.
std::string CanonicalFloats(const std::string& text) {
  static const std::regex kFloat(R"(-?[0-9]+\.[0-9]*([eE][-+]?[0-9]+)?)");
  std::string out;
  auto begin = std::sregex_iterator(text.begin(), text.end(), kFloat);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    out.append(text, last, static_cast<size_t>(it->position()) - last);
    auto f = static_cast<float>(std::strtod(it->str().c_str(), nullptr));
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    char hex[16];
    std::snprintf(hex, sizeof(hex), "0x%08X", bits);
    out += hex;
    last = static_cast<size_t>(it->position() + it->length());
  }
  out.append(text, last);
  return out;
}

// mlir-opt prints PCP's text back identically: same attribute order, value numbering
// (regions included), attribute spellings and splat literals (compared by value, see
// CanonicalFloats, applied to both sides alike). It prints non-splat literals
// as lists by default and both those and integer-list attributes as hex with
// --mlir-print-elementsattrs-with-hex-if-larger=1, while PCP prints the former as hex and the
// latter as lists, so non-splat constants are compared in a module of their own.
// Without --mlir-print-op-generic, mlir-opt prints `module { func.func @f(...) {...} }` in the
// pretty form around generic StableHLO ops: PCP parses that mix back into the same module.
// mlir-opt 15 cannot read PCP's pretty form itself: StableHLO's custom syntax needs the
// dialect registered, which mlir-opt is not built with.
TEST_F(MlirOptTest, ItsPrettyModulesParseAndPcpPrettyFormNeedsTheDialect) {
  absl::StatusOr<Module> all = text_testing::AllOpsModule();
  ASSERT_TRUE(all.ok()) << all.status();
  std::vector<Module> modules = {*all, Module{}};
  absl::StatusOr<std::vector<std::pair<std::string, Module>>> examples = text_testing::ExampleModules();
  ASSERT_TRUE(examples.ok()) << examples.status();
  for (const auto& [name, module] : *examples) modules.push_back(module);
  for (const Module& m : modules) {
    MlirOptResult r = RunMlirOpt(mlir_opt_, PrintModule(m), {}, /*print_generic=*/false);
    ASSERT_TRUE(r.status.ok()) << r.status.message() << "\n" << r.stderr_text;
    EXPECT_TRUE(absl::StartsWith(r.output, "module {")) << r.output.substr(0, 200);
    absl::StatusOr<Module> back = ParseModule(r.output, "mlir-opt-pretty-output");
    ASSERT_TRUE(back.ok()) << back.status() << "\n" << r.output;
    EXPECT_TRUE(text_testing::ModulesEqual(m, *back));
  }
  MlirOptResult r = RunMlirOpt(mlir_opt_, PrintModule(*all, TextForm::kPretty));
  EXPECT_FALSE(r.status.ok());
  EXPECT_TRUE(absl::StrContains(r.stderr_text, "custom op 'stablehlo.")) << r.stderr_text;
}

TEST_F(MlirOptTest, PrintsBackIdenticalText) {
  absl::StatusOr<Module> all = text_testing::AllOpsModule();
  ASSERT_TRUE(all.ok()) << all.status();
  Module constants;
  for (auto it = all->functions.begin(); it != all->functions.end();) {
    if (it->name == "constant") {
      constants.functions.push_back(*it);
      it = all->functions.erase(it);
    } else {
      ++it;
    }
  }
  ASSERT_EQ(constants.functions.size(), 1u);
  std::vector<Module> modules = {*all, Module{}};
  absl::StatusOr<std::vector<std::pair<std::string, Module>>> examples = text_testing::ExampleModules();
  ASSERT_TRUE(examples.ok()) << examples.status();
  for (const auto& [name, module] : *examples) modules.push_back(module);
  auto expect_identical = [this](const Module& m, const std::vector<std::string>& args) {
    std::string text = PrintModule(m);
    MlirOptResult r = RunMlirOpt(mlir_opt_, text, args);
    ASSERT_TRUE(r.status.ok()) << r.status.message() << "\n" << r.stderr_text;
    // mlir-opt ends its output with an empty line.
    EXPECT_EQ(CanonicalFloats(r.output), CanonicalFloats(text + "\n"));
  };
  for (const Module& m : modules) expect_identical(m, {});
  expect_identical(constants, {"--mlir-print-elementsattrs-with-hex-if-larger=1"});
}

TEST_F(MlirOptTest, LiteralsSurviveMlirOptBitExact) {
  std::vector<Tensor> literals = {
      Tensor::FromVector<float>({3}, {0.1f, 1.0f / 3.0f, 16777216.0f}),
      Tensor::FromVector<float>({2, 2}, {1e-45f, -0.0f, 3.4028235e38f, 1.17549435e-38f}),
      Tensor::Scalar<float>(1.0f / 3.0f),
      Tensor::Scalar<float>(1e-45f),
      Tensor::FromVector<int32_t>({3}, {-2147483647 - 1, 0, 2147483647}),
      Tensor::FromVector<int64_t>({2}, {-9223372036854775807 - 1, 9223372036854775807}),
      Tensor::FromVector<bool>({11}, {true, false, false, true, true, false, true, false, false, false, true}),
  };
  Tensor inf_nan(DType::kF32, {3});
  inf_nan.data<float>()[0] = std::numeric_limits<float>::infinity();
  inf_nan.data<float>()[1] = -std::numeric_limits<float>::infinity();
  inf_nan.data<float>()[2] = std::numeric_limits<float>::quiet_NaN();
  literals.push_back(inf_nan);
  Tensor half(DType::kF16, {3}), bf16(DType::kBF16, {3});
  const uint16_t half_bits[] = {0x3555, 0x0001, 0x7C00}, bf16_bits[] = {0x3DCD, 0xFF80, 0x0001};
  for (int i = 0; i < 3; ++i) {
    half.data<uint16_t>()[i] = half_bits[i];
    bf16.data<uint16_t>()[i] = bf16_bits[i];
  }
  literals.push_back(half);
  literals.push_back(bf16);
  FunctionBuilder b("literals");
  std::vector<ValueId> results;
  for (const Tensor& t : literals) results.push_back(b.Constant(t));
  b.Return(results);
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  Module m;
  m.functions.push_back(*std::move(f));
  ExpectAcceptedAndReadBack(m);                                                       // lists
  ExpectAcceptedAndReadBack(m, {"--mlir-print-elementsattrs-with-hex-if-larger=1"});  // hex
}

TEST_F(MlirOptTest, ReportsErrorsForInvalidText) {
  MlirOptResult r =
      RunMlirOpt(mlir_opt_, "\"builtin.module\"() ({\n  %0 = \"x.y\"(%1) : (tensor<f32>) -> tensor<f32>\n");
  EXPECT_FALSE(r.status.ok());
  EXPECT_FALSE(r.stderr_text.empty());
}

}  // namespace
}  // namespace pcp
