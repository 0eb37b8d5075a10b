// Calls, custom calls and checks in the text form (text.h): func.call is inlined while
// parsing, whichever order caller and callee come in; multi-result calls bind %r#N; recursion,
// undefined callees and type mismatches are errors at line:col; custom_call and composite are
// errors naming the target or the decomposition; checks are read only with ParseOptions.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/text.h"

namespace pcp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The error message of parsing `text` (empty if it parses).
std::string ParseError(const std::string& text, const ParseOptions& options = {}) {
  absl::StatusOr<Module> m = ParseModule(text, "t.mlir", options);
  return m.ok() ? "" : std::string(m.status().message());
}

std::vector<float> Floats(const Tensor& t) { return {t.data<float>(), t.data<float>() + t.num_elements()}; }

TEST(TextCallsTest, ForwardReferenceIsInlined) {
  const std::string text = R"(module {
  func.func public @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    %0 = call @offset() : () -> tensor<2xf32>
    %1 = func.call @add(%arg0, %0) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    return %1 : tensor<2xf32>
  }
  func.func private @add(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.add %a, %b : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
  func.func private @offset() -> tensor<2xf32> {
    %cst = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
    return %cst : tensor<2xf32>
  }
})";
  absl::StatusOr<Module> m = ParseModule(text, "t.mlir");
  ASSERT_TRUE(m.ok()) << m.status();
  const Function* main = m->Find("main");
  ASSERT_NE(main, nullptr);
  ASSERT_EQ(main->instructions.size(), 2u);  // the constant and the add, inlined
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*main, {Tensor::FromVector<float>({2}, {10, 20})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Floats((*out)[0]), ElementsAre(11, 22));
  EXPECT_NE(m->Find("add"), nullptr);  // callees stay in the module
}

TEST(TextCallsTest, MultiResultCallsInBothForms) {
  const std::string text = R"(
  func.func private @pair() -> (tensor<f32>, tensor<f32>) {
    %a = stablehlo.constant dense<3.0> : tensor<f32>
    %b = stablehlo.constant dense<4.0> : tensor<f32>
    return %a, %b : tensor<f32>, tensor<f32>
  }
  func.func @main() -> (tensor<f32>, tensor<f32>) {
    %0:2 = call @pair() : () -> (tensor<f32>, tensor<f32>)
    %1:2 = "func.call"() {callee = @pair} : () -> (tensor<f32>, tensor<f32>)
    %2 = stablehlo.subtract %0#1, %1#0 : tensor<f32>
    return %2, %0#0 : tensor<f32>, tensor<f32>
  })";
  absl::StatusOr<Module> m = ParseModule(text, "t.mlir");
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*m->Find("main"), {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Floats((*out)[0]), ElementsAre(1));
  EXPECT_THAT(Floats((*out)[1]), ElementsAre(3));
}

TEST(TextCallsTest, Errors) {
  const std::string pair = R"(
  func.func private @pair() -> (tensor<f32>, tensor<f32>) {
    %a = stablehlo.constant dense<3.0> : tensor<f32>
    return %a, %a : tensor<f32>, tensor<f32>
  })";
  EXPECT_EQ(ParseError(pair + R"(
  func.func @main() -> tensor<f32> {
    %0:2 = call @pair() : () -> (tensor<f32>, tensor<f32>)
    return %0 : tensor<f32>
  })"),
            "t.mlir:8:12: %0 names several results: use %0#0, %0#1, ...");
  EXPECT_EQ(ParseError(pair + R"(
  func.func @main() -> tensor<f32> {
    %0 = call @pair() : () -> (tensor<f32>, tensor<f32>)
    return %0 : tensor<f32>
  })"),
            "t.mlir:7:5: the call of @pair has 2 results but one is named (write %0:2 = call ...)");
  EXPECT_EQ(ParseError(pair + R"(
  func.func @main() -> tensor<f32> {
    %0:2 = call @pair() : () -> (tensor<f32>, tensor<2xf32>)
    return %0#0 : tensor<f32>
  })"),
            "t.mlir:7:5: the call's type () -> (tensor<f32>, tensor<2xf32>) does not match @pair, which has type "
            "() -> (tensor<f32>, tensor<f32>)");
  EXPECT_EQ(ParseError(R"(
  func.func @main() -> tensor<f32> {
    %0 = call @missing() : () -> tensor<f32>
    return %0 : tensor<f32>
  })"),
            "t.mlir:3:15: call of undefined function @missing");
  EXPECT_EQ(ParseError(R"(
  func.func @a(%x: tensor<f32>) -> tensor<f32> {
    %0 = call @b(%x) : (tensor<f32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
  func.func @b(%x: tensor<f32>) -> tensor<f32> {
    %0 = call @a(%x) : (tensor<f32>) -> tensor<f32>
    return %0 : tensor<f32>
  })"),
            "t.mlir:7:5: recursive call: @a -> @b -> @a (PCP inlines every call, so calls must not form a cycle)");
  EXPECT_EQ(ParseError(R"(
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = call @f(%x) : (tensor<3xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  })"),
            "t.mlir:3:18: operand #0 has type tensor<2xf32> but the call's type says tensor<3xf32>");
}

TEST(TextCallsTest, CustomCallAndCompositeAreErrorsNamingWhatTheyRun) {
  EXPECT_EQ(ParseError(R"(
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.custom_call @cublas.gemm(%x) {backend_config = ""} : (tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  })"),
            "t.mlir:3:5: custom_call @cublas.gemm is not supported: PCP cannot run foreign code");
  EXPECT_EQ(ParseError(R"(
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = "stablehlo.custom_call"(%x) <{call_target_name = "Sharding"}> : (tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  })"),
            "t.mlir:3:5: custom_call @Sharding is not supported: PCP cannot run foreign code");
  EXPECT_EQ(ParseError(R"(
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.composite "my.gelu" %x {composite_attributes = {approximate = true}, decomposition = @gelu_impl} : (tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  })"),
            "t.mlir:3:5: stablehlo.composite \"my.gelu\" is not supported: call its decomposition @gelu_impl instead");
  // Checks are test-suite ops: without ParseOptions::checks they are refused like any custom call.
  EXPECT_EQ(ParseError(R"(
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    stablehlo.custom_call @check.expect_close(%x, %x) {has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> ()
    return %x : tensor<2xf32>
  })"),
            "t.mlir:3:5: custom_call @check.expect_close is not supported: PCP cannot run foreign code");
}

TEST(TextCallsTest, ChecksBecomeResultsWithParseOptions) {
  const std::string text = R"(
  func.func @main() {
    %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
    %1 = call @twice(%0) : (tensor<2xf32>) -> tensor<2xf32>
    check.expect_almost_eq_const %1, dense<[2.0, 4.0]> : tensor<2xf32>, tolerance = 0.01
    check.expect_close %1, %1, max_ulp_difference = 2 : tensor<2xf32>, tensor<2xf32>
    stablehlo.custom_call @check.expect_eq(%1, %0) {has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> ()
    "check.expect_eq_const"(%0) <{value = dense<[1.0, 2.0]> : tensor<2xf32>}> : (tensor<2xf32>) -> ()
    func.return
  }
  func.func private @twice(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.add %x, %x : tensor<2xf32>
    return %0 : tensor<2xf32>
  })";
  EXPECT_THAT(ParseError(text), HasSubstr("t.mlir:5:5: check.expect_almost_eq_const is not supported"));
  std::vector<ParsedCheck> checks;
  absl::StatusOr<Module> m = ParseModule(text, "t.mlir", ParseOptions{.checks = &checks});
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(checks.size(), 4u);
  EXPECT_EQ(checks[0].kind, ParsedCheck::Kind::kAlmostEq);
  EXPECT_EQ(checks[0].tolerance, 0.01);
  EXPECT_EQ(checks[0].location, "t.mlir:5:5");
  EXPECT_EQ(checks[1].max_ulp, 2u);
  EXPECT_TRUE(checks[2].custom_call);
  const Function& main = *m->Find("main");
  EXPECT_THAT(main.result_names,
              ElementsAre("check.expect_almost_eq_const@5:5:lhs", "check.expect_almost_eq_const@5:5:rhs",
                          "check.expect_close@6:5:lhs", "check.expect_close@6:5:rhs", "check.expect_eq@7:5:lhs",
                          "check.expect_eq@7:5:rhs", "check.expect_eq_const@8:5:lhs", "check.expect_eq_const@8:5:rhs"));
  absl::StatusOr<std::vector<Tensor>> out = Interpret(main, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Floats((*out)[checks[0].lhs_result]), ElementsAre(2, 4));
  EXPECT_THAT(Floats((*out)[checks[0].rhs_result]), ElementsAre(2, 4));
  EXPECT_THAT(Floats((*out)[checks[2].rhs_result]), ElementsAre(1, 2));
  EXPECT_THAT(Floats((*out)[checks[3].rhs_result]), ElementsAre(1, 2));  // the generic form's constant
}

}  // namespace
}  // namespace pcp
