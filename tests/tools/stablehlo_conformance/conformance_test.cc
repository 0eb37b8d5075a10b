// pcp-stablehlo-conformance's verdicts on modules written for this test in the format of
// openxla/stablehlo's testdata/ and tests/interpret/ (the suites themselves are not in CI).
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/conformance/check_compare.h"
#include "pcp/conformance/runner.h"
#include "pcp/conformance/scope.h"
#include "pcp/conformance/table.h"

namespace pcp::conformance {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Read(const std::string& relative) {
  std::ifstream in(std::string(CONFORMANCE_DATA) + "/" + relative);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

CaseResult RunText(const std::string& text) { return RunCase(text, "t.mlir", RunOptions{}); }

// What `snippet` lacks, with a check beside it (a module without checks lacks "no checks").
std::vector<std::string> Lacks(const std::string& snippet) {
  return ScanScope(snippet + "\n    check.expect_eq %2, %2 : tensor<2xf32>").lacks;
}

TEST(StablehloConformanceTest, PassingModuleWithCallsDefinedAfterMain) {
  CaseResult r = RunText(Read("testdata/exp_float32_4.mlir"));
  EXPECT_EQ(r.verdict, Verdict::kPassed) << r.reason;
  EXPECT_EQ(r.checks, 1);
}

TEST(StablehloConformanceTest, FailingCheckNamesTheCheckAndTheError) {
  CaseResult r = RunText(Read("testdata/add_int32_2_int32_2.mlir"));
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  // The interpreter is asked first; the message names the check by its line and column.
  EXPECT_THAT(r.reason, HasSubstr("interpreter: check.expect_eq@8:5: 1 of 2 elements differ"));
  EXPECT_THAT(r.reason, HasSubstr("3 (computed) vs 4 (expected)"));
}

TEST(StablehloConformanceTest, OutOfScopeNamesEverythingLacked) {
  CaseResult r = RunText(Read("testdata/pad_uint8_3.mlir"));
  EXPECT_EQ(r.verdict, Verdict::kUnsupported);
  EXPECT_THAT(r.lacks, ElementsAre("type ui8 (read widened; wraparound not modelled)", "op stablehlo.pad"));
}

TEST(StablehloConformanceTest, InterpretFileSplitsIntoCases) {
  std::vector<std::string> cases = SplitCases(Read("interpret/maximum.mlir"));
  ASSERT_EQ(cases.size(), 3u);
  CaseResult f32 = RunText(cases[0]);
  EXPECT_EQ(f32.verdict, Verdict::kPassed) << f32.reason;
  CaseResult f64 = RunText(cases[1]);
  EXPECT_EQ(f64.verdict, Verdict::kUnsupported);
  EXPECT_THAT(f64.lacks, ElementsAre("type f64 (PCP computes f64 in f32)"));
  CaseResult call = RunText(cases[2]);  // @double takes arguments: only @main runs, inlining it
  EXPECT_EQ(call.verdict, Verdict::kPassed) << call.reason;
}

TEST(StablehloConformanceTest, ScopeOfRegionsAndCustomCalls) {
  const std::string scatter_multiply = R"(
    %2 = "stablehlo.scatter"(%0, %c, %1) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0],
        inserted_window_dims = [1], scatter_dims_to_operand_dims = [1], index_vector_dim = 1>}> ({
    ^bb0(%arg0: tensor<f32>, %arg1: tensor<f32>):
      %3 = stablehlo.multiply %arg0, %arg1 : tensor<f32>
      stablehlo.return %3 : tensor<f32>
    }) : (tensor<2x3xf32>, tensor<2x1xi32>, tensor<2x2xf32>) -> tensor<2x3xf32>)";
  EXPECT_THAT(Lacks(scatter_multiply), ElementsAre("scatter with a multiply region"));
  const std::string scatter_assign = R"(
    %2 = "stablehlo.scatter"(%0, %c, %1) ({
    ^bb0(%arg0: tensor<i32>, %arg1: tensor<i32>):
      stablehlo.return %arg1 : tensor<i32>
    }) : (tensor<2x3xi32>, tensor<2x1xi32>, tensor<2x2xi32>) -> tensor<2x3xi32>)";
  EXPECT_THAT(Lacks(scatter_assign), ElementsAre());
  EXPECT_THAT(ScanScope(scatter_assign).lacks, ElementsAre("no checks"));
  EXPECT_THAT(Lacks("%1 = stablehlo.reduce(%0 init: %c) applies stablehlo.minimum across dimensions = [0] : "
                    "(tensor<4xf32>, tensor<f32>) -> tensor<f32>"),
              ElementsAre("reduce with a minimum region"));
  EXPECT_THAT(Lacks("%0:2 = stablehlo.reduce(%a init: %b), (%c init: %d) across dimensions = [0] : "
                    "(tensor<4xf32>, tensor<4xi32>, tensor<f32>, tensor<i32>) -> (tensor<f32>, tensor<i32>)"),
              ElementsAre("reduce with several inputs"));
  EXPECT_THAT(Lacks("stablehlo.custom_call @Sharding(%0) {mhlo.sharding = \"{replicated}\"} : "
                    "(tensor<2xf32>) -> tensor<2xf32>"),
              ElementsAre("custom_call @Sharding"));
}

TEST(StablehloConformanceTest, CloseCountsUlpsAsTheCheckDialectDoes) {
  ParsedCheck close;
  close.kind = ParsedCheck::Kind::kClose;
  close.custom_call = true;  // 0..3 ULP
  const float one_up = std::nextafter(std::nextafter(1.0f, 2.0f), 2.0f);
  EXPECT_TRUE(
      CompareCheck(close, Tensor::FromVector<float>({2}, {1.0f, NAN}), Tensor::FromVector<float>({2}, {one_up, NAN}))
          .passed);
  CheckOutcome far =
      CompareCheck(close, Tensor::FromVector<float>({1}, {1.0f}), Tensor::FromVector<float>({1}, {1.001f}));
  EXPECT_FALSE(far.passed);
  EXPECT_THAT(far.detail, HasSubstr("allowed 0..3 ULP"));
  EXPECT_FALSE(
      CompareCheck(close, Tensor::FromVector<float>({1}, {INFINITY}), Tensor::FromVector<float>({1}, {3e38f})).passed);
  ParsedCheck eq;  // IEEE equality: NaN never equals
  EXPECT_FALSE(CompareCheck(eq, Tensor::FromVector<float>({1}, {NAN}), Tensor::FromVector<float>({1}, {NAN})).passed);
  EXPECT_TRUE(CompareCheck(eq, Tensor::FromVector<float>({1}, {-0.0f}), Tensor::FromVector<float>({1}, {0.0f})).passed);
}

TEST(StablehloConformanceTest, TableOpAndReasonClasses) {
  EXPECT_EQ(TableOp("abs_float32_20_20.mlir"), "abs");
  EXPECT_EQ(TableOp("scatter_add_int32_5_6_7_int32_5_2_2.mlir"), "scatter_add");
  EXPECT_EQ(TableOp("dir/add.mlir"), "add");
  EXPECT_EQ(ReasonClass("parse: a/b.mlir:12:7: expected ')', got tensor<20x20xf32>"),
            "parse: expected ')', got tensor<Nxf32>");
  EXPECT_EQ(ReasonClass("interpreter: check.expect_close@13:5: 2 of 24 elements differ (allowed 0..3 ULP), max error "
                        "512 ULP at [3, 0]: 0.0057 (computed) vs 0.0058 (expected); cpu: @main: out of memory"),
            "interpreter: check.expect_close@N:N: N of N elements differ (allowed N ULP); cpu: @main: out of memory");
}

TEST(StablehloConformanceTest, BinaryTalliesTheSuites) {
  const std::string command = std::string(CONFORMANCE_BINARY) + " --progress_every=0 " + CONFORMANCE_DATA +
                              "/testdata " + CONFORMANCE_DATA + "/interpret 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe.get())) out.append(buffer, n);
  EXPECT_THAT(out, HasSubstr("cases 6: in scope 4, passed 3 (75.0 % of in scope), failed 1, unsupported 2"));
}

}  // namespace
}  // namespace pcp::conformance
