// Exporters' older spellings that the parser rewrites into PCP's ops (text_compat.cc):
// old MHLO names and attributes, the legacy dot, attributes on a generic builtin.module, and
// reduce over i1 with an or / and body. Each is compared with the module written the way PCP
// prints it, or run through the interpreter; what stays unsupported is an error at line:col.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/text.h"
#include "text_test_util.h"

namespace pcp {
namespace {

using text_testing::ModulesEqual;

// The same function in old MHLO's generic spelling and in StableHLO's.
constexpr char kMhlo[] = R"("builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2x3xf32>, %arg1: tensor<3x2xf32>):
    %0 = "mhlo.constant"() {value = dense<1.0> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
    %1 = "mhlo.add"(%arg0, %0) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %2 = "mhlo.compare"(%1, %0) {compare_type = #mhlo<comparison_type FLOAT>, comparison_direction = #mhlo<comparison_direction LT>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %3 = "mhlo.compare"(%1, %0) {comparison_direction = "GT"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %4 = "mhlo.select"(%2, %1, %0) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %5 = "mhlo.dot_general"(%4, %arg1) {dot_dimension_numbers = #mhlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#mhlo<precision DEFAULT>, #mhlo<precision DEFAULT>]} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
    %6 = "mhlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %7 = "mhlo.reduce"(%5, %6) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = "mhlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "mhlo.return"(%s) : (tensor<f32>) -> ()
    }) {dimensions = dense<1> : tensor<1xi64>} : (tensor<2x2xf32>, tensor<f32>) -> tensor<2xf32>
    "func.return"(%7, %3) : (tensor<2xf32>, tensor<2x3xi1>) -> ()
  }) {function_type = (tensor<2x3xf32>, tensor<3x2xf32>) -> (tensor<2xf32>, tensor<2x3xi1>), sym_name = "main"} : () -> ()
}) {torch.debug_module_name = "GraphModule"} : () -> ()
)";

constexpr char kStablehlo[] =
    R"(func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<3x2xf32>) -> (tensor<2xf32>, tensor<2x3xi1>) {
  %0 = stablehlo.constant dense<1.0> : tensor<2x3xf32>
  %1 = stablehlo.add %arg0, %0 : tensor<2x3xf32>
  %2 = stablehlo.compare LT, %1, %0, FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %3 = stablehlo.compare GT, %1, %0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %4 = stablehlo.select %2, %1, %0 : tensor<2x3xi1>, tensor<2x3xf32>
  %5 = stablehlo.dot_general %4, %arg1, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %6 = stablehlo.constant dense<0.0> : tensor<f32>
  %7 = stablehlo.reduce(%5 init: %6) applies stablehlo.add across dimensions = [1] : (tensor<2x2xf32>, tensor<f32>) -> tensor<2xf32>
  return %7, %3 : tensor<2xf32>, tensor<2x3xi1>
}
)";

TEST(TextCompatTest, MhloOpsAndAttributesReadAsStablehlo) {
  absl::StatusOr<Module> mhlo = ParseModule(kMhlo, "mhlo.mlir");
  ASSERT_TRUE(mhlo.ok()) << mhlo.status();
  absl::StatusOr<Module> stablehlo = ParseModule(kStablehlo, "stablehlo.mlir");
  ASSERT_TRUE(stablehlo.ok()) << stablehlo.status();
  EXPECT_TRUE(ModulesEqual(*mhlo, *stablehlo));
  // The pretty spelling of MHLO ops too.
  std::string pretty = kStablehlo;
  for (const char* op : {"stablehlo.constant", "stablehlo.add", "stablehlo.compare", "stablehlo.dot_general"}) {
    for (size_t at = pretty.find(op); at != std::string::npos; at = pretty.find(op, at)) {
      pretty.replace(at, std::string(op).size(), absl::StrCat("mhlo.", std::string(op).substr(10)));
    }
  }
  absl::StatusOr<Module> pretty_mhlo = ParseModule(pretty, "pretty.mlir");
  ASSERT_TRUE(pretty_mhlo.ok()) << pretty_mhlo.status() << "\n" << pretty;
  EXPECT_TRUE(ModulesEqual(*pretty_mhlo, *stablehlo));
}

TEST(TextCompatTest, UnsupportedMhloOpsAreNamedAsWritten) {
  for (const char* line : {"%0 = \"mhlo.rng\"(%arg0, %arg0) : (tensor<f32>, tensor<f32>) -> tensor<f32>",
                           "%0 = mhlo.rng %arg0, %arg0 : tensor<f32>"}) {
    absl::StatusOr<Module> m = ParseModule(absl::StrCat("func.func @f(%arg0: tensor<f32>) -> tensor<f32> {\n  ", line,
                                                        "\n  return %arg0 : tensor<f32>\n}\n"),
                                           "rng.mlir");
    ASSERT_FALSE(m.ok()) << line;
    EXPECT_TRUE(absl::StartsWith(m.status().message(), "rng.mlir:2:8: unsupported operation 'mhlo.rng' (PCP supports"))
        << m.status();
  }
}

TEST(TextCompatTest, GenericModuleAttributesAndPropertiesAreReadPast) {
  const std::string body = R"(({
  "func.func"() ({
  ^bb0(%arg0: tensor<2xf32>):
    "func.return"(%arg0) : (tensor<2xf32>) -> ()
  }) {function_type = (tensor<2xf32>) -> tensor<2xf32>, sym_name = "f"} : () -> ()
}))";
  for (const std::string& text : {absl::StrCat("\"builtin.module\"() ", body,
                                               " {sym_name = \"m\", torch.debug_module_name = \"X\"} : () -> ()\n"),
                                  absl::StrCat("\"builtin.module\"() <{sym_name = \"m\"}> ", body,
                                               " {mhlo.num_partitions = 1 : i32} : () -> ()\n")}) {
    absl::StatusOr<Module> m = ParseModule(text, "module.mlir");
    ASSERT_TRUE(m.ok()) << m.status() << "\n" << text;
    ASSERT_EQ(m->functions.size(), 1u);
  }
  absl::StatusOr<Module> bad =
      ParseModule(absl::StrCat("\"builtin.module\"() ", body, " {foo.bar = 1} : () -> ()\n"), "module.mlir");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(
      absl::StartsWith(bad.status().message(), "module.mlir:6:5: unsupported attribute 'foo.bar' on the module"))
      << bad.status();
}

// tt-xla's module says which results alias which arguments: buffers, not values.
TEST(TextCompatTest, InputOutputAliasOnTheModuleIsReadPast) {
  absl::StatusOr<Module> m = ParseModule(
      R"(module @SyncTensorsGraph.5 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false} {
  func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    return %arg0 : tensor<2xf32>
  }
}
)",
      "alias.mlir");
  ASSERT_TRUE(m.ok()) << m.status();
}

// dot of every rank pair, generic and pretty, against dot_general computed by hand.
TEST(TextCompatTest, LegacyDotIsDotGeneralOverLastAndFirstDimensions) {
  struct Case {
    const char* lhs;
    const char* rhs;
    const char* result;
    std::vector<float> want;
  };
  // lhs = [1, 2] or [[1, 2], [3, 4]]; rhs = [5, 6] or [[5, 6], [7, 8]]
  const Case cases[] = {
      {"tensor<2xf32>", "tensor<2xf32>", "tensor<f32>", {17}},
      {"tensor<2x2xf32>", "tensor<2xf32>", "tensor<2xf32>", {17, 39}},
      {"tensor<2xf32>", "tensor<2x2xf32>", "tensor<2xf32>", {19, 22}},
      {"tensor<2x2xf32>", "tensor<2x2xf32>", "tensor<2x2xf32>", {19, 22, 43, 50}},
  };
  auto value = [](const char* type, float first) {
    return absl::StrContains(type, "2x2") ? Tensor::FromVector<float>({2, 2}, {first, first + 1, first + 2, first + 3})
                                          : Tensor::FromVector<float>({2}, {first, first + 1});
  };
  for (const Case& c : cases) {
    const std::string sig = absl::StrCat("(", c.lhs, ", ", c.rhs, ") -> ", c.result);
    for (const std::string& op :
         {absl::StrCat("\"stablehlo.dot\"(%arg0, %arg1) : ", sig),
          absl::StrCat("\"mhlo.dot\"(%arg0, %arg1) {precision_config = [#mhlo<precision DEFAULT>, #mhlo<precision "
                       "DEFAULT>]} : ",
                       sig),
          absl::StrCat("stablehlo.dot %arg0, %arg1 : ", sig),
          absl::StrCat("stablehlo.dot %arg0, %arg1, precision = [DEFAULT, HIGHEST] : ", sig)}) {
      const std::string text = absl::StrCat("func.func @f(%arg0: ", c.lhs, ", %arg1: ", c.rhs, ") -> ", c.result,
                                            " {\n  %0 = ", op, "\n  return %0 : ", c.result, "\n}\n");
      absl::StatusOr<Module> m = ParseModule(text, "dot.mlir");
      ASSERT_TRUE(m.ok()) << m.status() << "\n" << text;
      ASSERT_EQ(m->functions[0].instructions.size(), 1u);
      EXPECT_EQ(m->functions[0].instructions[0].op, Op::kDotGeneral);
      absl::StatusOr<std::vector<Tensor>> r = Interpret(m->functions[0], {value(c.lhs, 1), value(c.rhs, 5)});
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ((*r)[0].ToVector<float>(), c.want) << op;
    }
  }
}

TEST(TextCompatTest, LegacyDotErrors) {
  struct Case {
    const char* op;
    const char* error;
  };
  const Case cases[] = {
      {"\"stablehlo.dot\"(%arg0, %arg1) : (tensor<2x2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>",
       "dot.mlir:2:3: dot takes rank-1 or rank-2 operands"},
      {"\"mhlo.dot\"(%arg1, %arg1) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>",
       "dot.mlir:2:3: stablehlo.dot_general: "},
      {"stablehlo.dot %arg0, %arg1, contracting_dims = [2] x [0] : (tensor<2x2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>",
       "dot.mlir:2:34: stablehlo.dot takes no batching_dims or contracting_dims"},
      {"\"stablehlo.dot\"(%arg0, %arg1) {dot_dimension_numbers = #stablehlo.dot<>} : (tensor<2x2x2xf32>, tensor<2xf32>) "
       "-> tensor<2x2xf32>",
       "dot.mlir:2:3: stablehlo.dot does not take attribute 'dot_dimension_numbers'"},
  };
  for (const Case& c : cases) {
    const std::string text =
        absl::StrCat("func.func @f(%arg0: tensor<2x2x2xf32>, %arg1: tensor<2xf32>) -> tensor<2x2xf32> {\n  %0 = ", c.op,
                     "\n  return %0 : tensor<2x2xf32>\n}\n");
    absl::StatusOr<Module> m = ParseModule(text, "dot.mlir");
    ASSERT_FALSE(m.ok()) << c.op;
    EXPECT_TRUE(absl::StartsWith(m.status().message(), c.error)) << m.status();
  }
}

constexpr char kLogicalReduce[] =
    R"(func.func @f(%arg0: tensor<2x3xi1>, %arg1: tensor<i1>) -> (tensor<2xi1>, tensor<2xi1>, tensor<3xi1>) {
  %0 = stablehlo.reduce(%arg0 init: %arg1) applies stablehlo.or across dimensions = [1] : (tensor<2x3xi1>, tensor<i1>) -> tensor<2xi1>
  %1 = stablehlo.reduce(%arg0 init: %arg1) across dimensions = [1] : (tensor<2x3xi1>, tensor<i1>) -> tensor<2xi1>
   reducer(%a: tensor<i1>, %b: tensor<i1>)  {
    %m = stablehlo.and %a, %b : tensor<i1>
    stablehlo.return %m : tensor<i1>
  }
  %2 = "stablehlo.reduce"(%arg0, %arg1) ({
  ^bb0(%a: tensor<i1>, %b: tensor<i1>):
    %m = "mhlo.and"(%a, %b) : (tensor<i1>, tensor<i1>) -> tensor<i1>
    "stablehlo.return"(%m) : (tensor<i1>) -> ()
  }) {dimensions = array<i64: 0>} : (tensor<2x3xi1>, tensor<i1>) -> tensor<3xi1>
  return %0, %1, %2 : tensor<2xi1>, tensor<2xi1>, tensor<3xi1>
}
)";

TEST(TextCompatTest, ReduceOverI1WithOrAndBodiesIsRewrittenToMaximum) {
  absl::StatusOr<Module> m = ParseModule(kLogicalReduce, "logical.mlir");
  ASSERT_TRUE(m.ok()) << m.status();
  for (const Instruction& inst : m->functions[0].instructions) {
    if (inst.op == Op::kReduce) EXPECT_EQ(inst.attrs.reduce_kind, ReduceKind::kMax);
  }
  const Tensor x = Tensor::FromVector<bool>({2, 3}, {false, false, false, true, true, true});
  for (bool init : {false, true}) {
    absl::StatusOr<std::vector<Tensor>> r = Interpret(m->functions[0], {x, Tensor::FromVector<bool>({}, {init})});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ((*r)[0].ToVector<uint8_t>(), (std::vector<uint8_t>{init, 1})) << "or, init " << init;
    EXPECT_EQ((*r)[1].ToVector<uint8_t>(), (std::vector<uint8_t>{0, init})) << "and, init " << init;
    EXPECT_EQ((*r)[2].ToVector<uint8_t>(), (std::vector<uint8_t>{0, 0, 0})) << "and over rows, init " << init;
  }
  // Printing gives PCP's ops, which read back the same.
  absl::StatusOr<Module> again = ParseModule(PrintModule(*m), "printed.mlir");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(ModulesEqual(*m, *again));
}

TEST(TextCompatTest, OtherReduceBodiesStayErrors) {
  struct Case {
    const char* op;
    const char* error;
  };
  const Case cases[] = {
      {"%0 = stablehlo.reduce(%arg0 init: %arg1) applies stablehlo.multiply across dimensions = [1] : "
       "(tensor<2x3xi1>, tensor<i1>) -> tensor<2xi1>",
       "t.mlir:2:52: unsupported body of stablehlo.reduce: expected stablehlo.add, stablehlo.maximum, or "
       "stablehlo.or / stablehlo.and over i1, got 'stablehlo.multiply'"},
      {"%0 = stablehlo.reduce(%arg2 init: %arg3) applies stablehlo.or across dimensions = [1] : "
       "(tensor<2x3xi32>, tensor<i32>) -> tensor<2xi32>",
       "t.mlir:2:52: unsupported body of stablehlo.reduce: or is supported over i1 only, got i32"},
      {"%0 = stablehlo.reduce(%arg0 init: %arg1) applies stablehlo.or across dimensions = [1] : "
       "(tensor<2x3xi1>, tensor<i1>) -> tensor<3xi1>",
       "t.mlir:2:3: stablehlo.reduce: declared result type tensor<3xi1> but the operands give tensor<2xi1>"},
  };
  for (const Case& c : cases) {
    const std::string text = absl::StrCat(
        "func.func @f(%arg0: tensor<2x3xi1>, %arg1: tensor<i1>, %arg2: tensor<2x3xi32>, %arg3: tensor<i32>) -> "
        "tensor<i1> {\n  ",
        c.op, "\n  return %arg1 : tensor<i1>\n}\n");
    absl::StatusOr<Module> m = ParseModule(text, "t.mlir");
    ASSERT_FALSE(m.ok()) << c.op;
    EXPECT_TRUE(absl::StartsWith(m.status().message(), c.error)) << m.status();
  }
}

// byteir's generic "arith.constant" reads like the pretty one; a custom call with several
// results is refused by its target, which says more than "several results".
TEST(TextCompatTest, GenericArithConstantAndMultiResultCustomCall) {
  absl::StatusOr<Module> m = ParseModule(R"(func.func @f() -> tensor<2xi64> {
  %0 = "arith.constant"() {value = dense<[64, 256]> : tensor<2xi64>} : () -> tensor<2xi64>
  return %0 : tensor<2xi64>
}
)",
                                         "c.mlir");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->functions[0].instructions[0].op, Op::kConstant);
  absl::StatusOr<Module> call = ParseModule(R"(func.func @f(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0:2 = "mhlo.custom_call"(%arg0) {call_target_name = "byteir.layer_norm", has_side_effect = false} : (tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  return %arg0 : tensor<2xf32>
}
)",
                                            "c.mlir");
  ASSERT_FALSE(call.ok());
  EXPECT_TRUE(absl::StartsWith(call.status().message(), "c.mlir:2:3: custom_call @byteir.layer_norm is not supported"))
      << call.status();
}

// IREE writes its checks with parenthesised operands; other shapes say what is expected.
TEST(TextCompatTest, IreeCheckSpelling) {
  const std::string text = R"(func.func @f(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.add %arg0, %arg0 : tensor<2xf32>
  check.expect_almost_eq_const(%0, dense<[2.0, 4.0]> : tensor<2xf32>) : tensor<2xf32>
  check.expect_eq(%0, %0) : tensor<2xf32>
  return %0 : tensor<2xf32>
}
)";
  absl::StatusOr<Module> refused = ParseModule(text, "iree.mlir");
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(
      absl::StartsWith(refused.status().message(), "iree.mlir:3:3: check.expect_almost_eq_const is not supported"))
      << refused.status();
  std::vector<ParsedCheck> checks;
  absl::StatusOr<Module> m = ParseModule(text, "iree.mlir", ParseOptions{.checks = &checks});
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(checks.size(), 2u);
  absl::StatusOr<std::vector<Tensor>> out = Interpret(m->functions[0], {Tensor::FromVector<float>({2}, {1, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[checks[0].rhs_result].ToVector<float>(), (std::vector<float>{2, 4}));
  EXPECT_EQ((*out)[checks[0].lhs_result].ToVector<float>(), (std::vector<float>{2, 4}));

  for (const char* bad : {"check.expect_eq_const(dense<1.0> : tensor<2xf32>, %0) : tensor<2xf32>",
                          "check.expect_eq_const(%0, dense<1.0> : tensor<2xf32>) : tensor<3xf32>"}) {
    std::string bad_text = text;
    bad_text.replace(bad_text.find("check.expect_almost"),
                     std::string("check.expect_almost_eq_const(%0, dense<[2.0, 4.0]> "
                                 ": tensor<2xf32>) : tensor<2xf32>")
                         .size(),
                     bad);
    absl::StatusOr<Module> b = ParseModule(bad_text, "iree.mlir", ParseOptions{.checks = &checks});
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_TRUE(absl::StrContains(b.status().message(), "iree.mlir:3:")) << b.status();
    EXPECT_TRUE(absl::StrContains(b.status().message(), "expected the operands of check.expect_eq_const") ||
                absl::StrContains(b.status().message(), "is not its operand's"))
        << b.status();
  }
}

}  // namespace
}  // namespace pcp
