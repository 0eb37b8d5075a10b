// Ops added for StableHLO import, in the text form (text.h): stablehlo.ceil, and, or, not
// print and parse in both forms; stablehlo.dynamic_iota with a static result type is read as
// stablehlo.iota, its shape operand checked when it is known; dynamic shapes are errors at
// line:column.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/passes.h"
#include "pcp/autodiff/text.h"
#include "text_test_util.h"

namespace pcp {
namespace {

using text_testing::ModulesEqual;

constexpr char kLogicalPretty[] = R"(module {
  func.func @logical(%arg0: tensor<4xi1>, %arg1: tensor<4xi1>, %arg2: tensor<4xi32>, %arg3: tensor<4xf32>) -> (tensor<4xi1>, tensor<4xi32>, tensor<4xf32>) {
    %0 = stablehlo.and %arg0, %arg1 : tensor<4xi1>
    %1 = stablehlo.not %0 : tensor<4xi1>
    %2 = stablehlo.or %1, %arg1 : tensor<4xi1>
    %3 = stablehlo.and %arg2, %arg2 : tensor<4xi32>
    %4 = stablehlo.not %3 : tensor<4xi32>
    %5 = stablehlo.ceil %arg3 : tensor<4xf32>
    return %2, %4, %5 : tensor<4xi1>, tensor<4xi32>, tensor<4xf32>
  }
}
)";

TEST(TextImportOpsTest, LogicalAndCeilPrintInStableHloPrettyFormAndRoundTrip) {
  absl::StatusOr<Module> m = ParseModule(kLogicalPretty, "logical.mlir");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(PrintModule(*m, TextForm::kPretty), kLogicalPretty);
  const std::string generic = PrintModule(*m);
  EXPECT_TRUE(
      absl::StrContains(generic, R"("stablehlo.and"(%arg0, %arg1) : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>)"))
      << generic;
  EXPECT_TRUE(absl::StrContains(generic, R"("stablehlo.not"(%0) : (tensor<4xi1>) -> tensor<4xi1>)")) << generic;
  absl::StatusOr<Module> again = ParseModule(generic, "generic.mlir");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(ModulesEqual(*m, *again));
  absl::StatusOr<std::vector<Tensor>> r =
      Interpret(m->functions[0], {Tensor::FromVector<bool>({4}, {false, false, true, true}),
                                  Tensor::FromVector<bool>({4}, {false, true, false, true}),
                                  Tensor::FromVector<int32_t>({4}, {0, 1, -1, 6}),
                                  Tensor::FromVector<float>({4}, {0.5f, -0.5f, 2.0f, -2.5f})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].ToVector<uint8_t>(), (std::vector<uint8_t>{1, 1, 1, 1}));  // not(a and b) or b
  EXPECT_EQ((*r)[1].ToVector<int32_t>(), (std::vector<int32_t>{-1, -2, 0, -7}));
  EXPECT_EQ((*r)[2].ToVector<float>(), (std::vector<float>{1.0f, -0.0f, 2.0f, -2.0f}));
}

TEST(TextImportOpsTest, LogicalOpsRejectFloatsAndCeilRejectsIntegers) {
  for (const char* line : {"%0 = stablehlo.and %arg0, %arg0 : tensor<4xf32>",
                           "%0 = stablehlo.not %arg0 : tensor<4xf32>", "%0 = stablehlo.ceil %arg1 : tensor<4xi32>"}) {
    std::string text = absl::StrCat("func.func @f(%arg0: tensor<4xf32>, %arg1: tensor<4xi32>) -> tensor<4xf32> {\n  ",
                                    line, "\n  return %arg0 : tensor<4xf32>\n}\n");
    absl::StatusOr<Module> m = ParseModule(text, "bad.mlir");
    ASSERT_FALSE(m.ok()) << line;
    EXPECT_TRUE(absl::StartsWith(m.status().message(), "bad.mlir:2:3: stablehlo.")) << m.status();
  }
}

TEST(TextImportOpsTest, ClampScalarBoundsAreBroadcast) {
  for (const char* op :
       {"stablehlo.clamp %lo, %arg0, %hi : (tensor<f32>, tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>",
        "\"stablehlo.clamp\"(%lo, %arg0, %hi) : (tensor<f32>, tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>"}) {
    std::string text = absl::StrCat(
        "func.func @main(%arg0: tensor<2x2xf32>) -> tensor<2x2xf32> {\n"
        "  %lo = stablehlo.constant dense<-1.000000e+00> : tensor<f32>\n"
        "  %hi = stablehlo.constant dense<2.500000e-01> : tensor<f32>\n"
        "  %0 = ",
        op, "\n  return %0 : tensor<2x2xf32>\n}\n");
    absl::StatusOr<Module> m = ParseModule(text, "clamp.mlir");
    ASSERT_TRUE(m.ok()) << m.status();
    const std::string pretty = PrintModule(*m, TextForm::kPretty);
    EXPECT_TRUE(
        absl::StrContains(pretty, "stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<2x2xf32>"))
        << pretty;
    EXPECT_TRUE(absl::StrContains(pretty, "= stablehlo.clamp %2, %arg0, %3 : tensor<2x2xf32>")) << pretty;
    absl::StatusOr<Module> again = ParseModule(pretty, "again.mlir");
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_TRUE(ModulesEqual(*m, *again));
    absl::StatusOr<std::vector<Tensor>> r =
        Interpret(m->functions[0], {Tensor::FromVector<float>({2, 2}, {-3.0f, 0.125f, 0.5f, -0.0f})});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ((*r)[0].ToVector<float>(), (std::vector<float>{-1.0f, 0.125f, 0.25f, -0.0f}));
  }
  // Bounds of another shape are an error (only scalars broadcast).
  absl::StatusOr<Module> bad =
      ParseModule(R"(func.func @main(%arg0: tensor<2x2xf32>, %b: tensor<2xf32>) -> tensor<2x2xf32> {
  %0 = stablehlo.clamp %b, %arg0, %b : (tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
})",
                  "clamp.mlir");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::StartsWith(bad.status().message(), "clamp.mlir:2:3: stablehlo.clamp: operand types differ"))
      << bad.status();
}

// jnp.where with a scalar condition: select's predicate is tensor<i1>.
TEST(TextImportOpsTest, SelectScalarPredicateIsBroadcast) {
  for (const char* op :
       {"stablehlo.select %p, %arg0, %arg1 : tensor<i1>, tensor<3xf32>",
        "\"stablehlo.select\"(%p, %arg0, %arg1) : (tensor<i1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>"}) {
    for (bool pick : {true, false}) {
      std::string text = absl::StrCat(
          "func.func @main(%arg0: tensor<3xf32>, %arg1: tensor<3xf32>) -> tensor<3xf32> {\n"
          "  %p = stablehlo.constant dense<",
          pick ? "true" : "false",
          "> : tensor<i1>\n"
          "  %0 = ",
          op, "\n  return %0 : tensor<3xf32>\n}\n");
      absl::StatusOr<Module> m = ParseModule(text, "select.mlir");
      ASSERT_TRUE(m.ok()) << m.status();
      const Tensor a = Tensor::FromVector<float>({3}, {1, 2, 3}), b = Tensor::FromVector<float>({3}, {4, 5, 6});
      absl::StatusOr<std::vector<Tensor>> r = Interpret(m->functions[0], {a, b});
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ((*r)[0].ToVector<float>(), (pick ? a : b).ToVector<float>()) << op;
    }
  }
}

// dynamic_iota's shape from constants, as torch-mlir and JAX export it.
constexpr char kDynamicIotaPretty[] = R"(
  func.func @main() -> (tensor<4xi64>, tensor<2x3xf32>) {
    %c = stablehlo.constant dense<4> : tensor<1xi64>
    %0 = stablehlo.dynamic_iota %c, dim = 0 : (tensor<1xi64>) -> tensor<4xi64>
    %c2 = stablehlo.constant dense<[2, 3]> : tensor<2xi32>
    %c3 = stablehlo.convert %c2 : (tensor<2xi32>) -> tensor<2xi64>
    %1 = stablehlo.dynamic_iota %c3, dim = 1 : (tensor<2xi64>) -> tensor<2x3xf32>
    return %0, %1 : tensor<4xi64>, tensor<2x3xf32>
  })";

constexpr char kDynamicIotaGeneric[] = R"(
  "func.func"() ({
    %c = "stablehlo.constant"() {value = dense<4> : tensor<1xi64>} : () -> tensor<1xi64>
    %0 = "stablehlo.dynamic_iota"(%c) {iota_dimension = 0 : i64} : (tensor<1xi64>) -> tensor<4xi64>
    %c2 = "stablehlo.constant"() {value = dense<[2, 3]> : tensor<2xi32>} : () -> tensor<2xi32>
    %c3 = "stablehlo.convert"(%c2) : (tensor<2xi32>) -> tensor<2xi64>
    %1 = "stablehlo.dynamic_iota"(%c3) <{iota_dimension = 1 : i64}> : (tensor<2xi64>) -> tensor<2x3xf32>
    "func.return"(%0, %1) : (tensor<4xi64>, tensor<2x3xf32>) -> ()
  }) {function_type = () -> (tensor<4xi64>, tensor<2x3xf32>), sym_name = "main"} : () -> ())";

TEST(TextImportOpsTest, DynamicIotaWithAStaticResultIsIota) {
  for (const char* text : {kDynamicIotaPretty, kDynamicIotaGeneric}) {
    absl::StatusOr<Module> m = ParseModule(text, "iota.mlir");
    ASSERT_TRUE(m.ok()) << m.status();
    Function f = m->functions[0];
    ASSERT_TRUE(RunStandardPasses(f).ok());
    ASSERT_EQ(f.instructions.size(), 2u) << PrintFunction(f, TextForm::kPretty);  // the shapes are dead
    for (const Instruction& inst : f.instructions) EXPECT_EQ(inst.op, Op::kIota);
    EXPECT_EQ(f.instructions[0].attrs.dimension, 0);
    EXPECT_EQ(f.instructions[1].attrs.dimension, 1);
    absl::StatusOr<std::vector<Tensor>> r = Interpret(f, {});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ((*r)[0].ToVector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3}));
    EXPECT_EQ((*r)[1].ToVector<float>(), (std::vector<float>{0, 1, 2, 0, 1, 2}));
  }
}

TEST(TextImportOpsTest, DynamicIotaFromAParameterTrustsTheStaticType) {
  absl::StatusOr<Module> m = ParseModule(R"(
    func.func @main(%arg0: tensor<2xi64>) -> tensor<2x5xi32> {
      %0 = stablehlo.dynamic_iota %arg0, dim = 1 : (tensor<2xi64>) -> tensor<2x5xi32>
      return %0 : tensor<2x5xi32>
    })",
                                         "iota.mlir");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->functions[0].instructions.size(), 1u);
  EXPECT_EQ(m->functions[0].instructions[0].op, Op::kIota);
}

std::string IotaLine(const std::string& line) {
  return absl::StrCat(
      "func.func @main(%arg0: tensor<2xf32>) -> tensor<4xi64> {\n"
      "  %c = stablehlo.constant dense<[4, 1]> : tensor<2xi64>\n  ",
      line, "\n  return %0 : tensor<4xi64>\n}\n");
}

TEST(TextImportOpsTest, DynamicIotaErrorsNameLineAndColumn) {
  struct ErrorCase {
    std::string text, message;
  };
  const std::vector<ErrorCase> cases = {
      {IotaLine("%0 = stablehlo.dynamic_iota %c, dim = 0 : (tensor<2xi64>) -> tensor<?xi64>"),
       "t.mlir:3:71: dynamic dimensions are not supported"},
      {IotaLine("%0 = stablehlo.dynamic_iota %c, dim = 0 : (tensor<2xi64>) -> tensor<4x2xi64>"),
       "t.mlir:3:31: stablehlo.dynamic_iota: the shape operand is [4, 1] but the result type is tensor<4x2xi64>"},
      {IotaLine("%0 = stablehlo.dynamic_iota %c, dim = 0 : (tensor<2xi64>) -> tensor<4xi64>"),
       "t.mlir:3:31: stablehlo.dynamic_iota: the shape operand must be a tensor<1xi64> (or i32) with one entry per "
       "result dimension, got tensor<2xi64>"},
      {IotaLine("%0 = stablehlo.dynamic_iota %arg0, dim = 0 : (tensor<2xf32>) -> tensor<4xi64>"),
       "t.mlir:3:31: stablehlo.dynamic_iota: the shape operand must be a tensor<1xi64> (or i32) with one entry per "
       "result dimension, got tensor<2xf32>"},
      {IotaLine("%0 = stablehlo.dynamic_iota %c, dim = 2 : (tensor<2xi64>) -> tensor<4x1xi64>"),
       "t.mlir:3:3: stablehlo.iota: iota_dimension 2 outside the result's rank"},
      {IotaLine("%0 = stablehlo.dynamic_iota %c : (tensor<2xi64>) -> tensor<4xi64>"),
       "t.mlir:3:34: expected ',' and dim = N after the operand of stablehlo.dynamic_iota, got ':'"},
      {IotaLine("%0 = \"stablehlo.dynamic_iota\"(%c) : (tensor<2xi64>) -> tensor<4x1xi64>"),
       "t.mlir:3:3: stablehlo.dynamic_iota needs attribute 'iota_dimension'"},
      {IotaLine(
           "%0 = \"stablehlo.dynamic_iota\"(%c, %c) {iota_dimension = 0 : i64} : (tensor<2xi64>) -> tensor<4xi64>"),
       "t.mlir:3:3: stablehlo.dynamic_iota expects 1 operands, got 2"},
  };
  for (const ErrorCase& c : cases) {
    absl::StatusOr<Module> m = ParseModule(c.text, "t.mlir");
    ASSERT_FALSE(m.ok()) << c.text;
    EXPECT_EQ(m.status().message(), c.message) << c.text;
  }
}

}  // namespace
}  // namespace pcp
