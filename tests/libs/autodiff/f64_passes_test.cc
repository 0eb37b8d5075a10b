// f64 in the IR (passes.h's f64 policy): f64 literals parse and print bit-exactly in both
// text forms; the interpreter computes f64 in double, so constant folding of an f64 subgraph
// rounds to f32 once, at its convert; LowerF64ToF32 retypes the f64 values folding leaves,
// and the result is what the same program computes in f32; backends never see f64.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/passes.h"
#include "pcp/autodiff/text.h"
#include "pcp/autodiff/verifier.h"
#include "text_test_util.h"

namespace pcp {
namespace {

using text_testing::ConstantsFunction;
using text_testing::ModulesEqual;
using text_testing::OneFunction;

Tensor F64(Shape s, std::vector<double> v) { return Tensor::FromVector<double>(std::move(s), v); }

bool HasF64(const Function& f) {
  for (const TensorType& t : f.value_types) {
    if (t.dtype == DType::kF64) return true;
  }
  return false;
}

int Count(const Function& f, Op op) {
  int n = 0;
  for (const Instruction& inst : f.instructions) n += inst.op == op;
  return n;
}

Function ParseOne(const std::string& text) {
  absl::StatusOr<Module> m = ParseModule(text, "f64.mlir");
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok() || m->functions.size() != 1) return Function{};
  return m->functions[0];
}

TEST(F64TextTest, ParsesDecimalHexAndListLiteralsInBothForms) {
  Function pretty = ParseOne(R"(
    func.func @main() -> (tensor<f64>, tensor<f64>, tensor<2xf64>, tensor<2xf64>) {
      %0 = stablehlo.constant dense<1.250000e-01> : tensor<f64>
      %1 = stablehlo.constant dense<0x3FC0000000000000> : tensor<f64>
      %2 = stablehlo.constant dense<[0.1, -2.5]> : tensor<2xf64>
      %3 = stablehlo.constant dense<"0x000000000000F03F0000000000000040"> : tensor<2xf64>
      return %0, %1, %2, %3 : tensor<f64>, tensor<f64>, tensor<2xf64>, tensor<2xf64>
    })");
  Function generic = ParseOne(R"(
    "func.func"() ({
      %0 = "stablehlo.constant"() {value = dense<1.250000e-01> : tensor<f64>} : () -> tensor<f64>
      %1 = "stablehlo.constant"() {value = dense<0x3FC0000000000000> : tensor<f64>} : () -> tensor<f64>
      %2 = "stablehlo.constant"() {value = dense<[0.1, -2.5]> : tensor<2xf64>} : () -> tensor<2xf64>
      %3 = "stablehlo.constant"() {value = dense<"0x000000000000F03F0000000000000040"> : tensor<2xf64>} : () -> tensor<2xf64>
      "func.return"(%0, %1, %2, %3) : (tensor<f64>, tensor<f64>, tensor<2xf64>, tensor<2xf64>) -> ()
    }) {function_type = () -> (tensor<f64>, tensor<f64>, tensor<2xf64>, tensor<2xf64>), sym_name = "main"} : () -> ())");
  for (const Function* f : {&pretty, &generic}) {
    absl::StatusOr<std::vector<Tensor>> r = Interpret(*f, {});
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->size(), 4u);
    EXPECT_EQ((*r)[0].dtype(), DType::kF64);
    EXPECT_EQ((*r)[0].data<double>()[0], 0.125);
    EXPECT_EQ((*r)[1].data<double>()[0], 0.125);
    EXPECT_EQ((*r)[2].ToVector<double>(), (std::vector<double>{0.1, -2.5}));  // 0.1 as a double, not a float
    EXPECT_EQ((*r)[3].ToVector<double>(), (std::vector<double>{1.0, 2.0}));
  }
}

TEST(F64TextTest, RoundTripsBitExactInBothForms) {
  const double kInf = std::numeric_limits<double>::infinity();
  Module m = OneFunction(ConstantsFunction({
      F64({}, {1.0 / 3.0}),
      F64({3}, {0.1, -0.0, 4.9406564584124654e-324}),  // shortest, -0, smallest subnormal
      F64({2}, {1e300, -kInf}),
      F64({}, {std::numeric_limits<double>::quiet_NaN()}),
      F64({4}, {2.5, 2.5, 2.5, 2.5}),  // splat
      F64({0}, {}),
  }));
  for (TextForm form : {TextForm::kGeneric, TextForm::kPretty}) {
    std::string text = PrintModule(m, form);
    absl::StatusOr<Module> parsed = ParseModule(text, "f64.mlir");
    ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
    EXPECT_TRUE(ModulesEqual(m, *parsed)) << text;
    EXPECT_EQ(PrintModule(*parsed, form), text);
  }
  // A scalar prints as the shortest decimal that reads back exactly; inf / nan as hex bits.
  std::string text =
      PrintModule(OneFunction(ConstantsFunction({F64({}, {1.0 / 3.0}), F64({}, {0.1}), F64({}, {-kInf})})),
                  TextForm::kPretty);
  EXPECT_TRUE(absl::StrContains(text, "dense<3.333333333333333e-01> : tensor<f64>")) << text;
  EXPECT_TRUE(absl::StrContains(text, "dense<1.000000e-01> : tensor<f64>")) << text;
  EXPECT_TRUE(absl::StrContains(text, "dense<0xFFF0000000000000> : tensor<f64>")) << text;
}

TEST(F64TextTest, RejectsBadF64Literals) {
  for (const char* literal : {"dense<1e400> : tensor<f64>", "dense<0x1FFF0000000000000> : tensor<f64>",
                              "dense<1> : tensor<f64>", "dense<true> : tensor<f64>"}) {
    std::string text = std::string("func.func @main() -> tensor<f64> {\n  %0 = stablehlo.constant ") + literal +
                       "\n  return %0 : tensor<f64>\n}\n";
    absl::StatusOr<Module> m = ParseModule(text, "bad.mlir");
    ASSERT_FALSE(m.ok()) << literal;
    EXPECT_TRUE(absl::StartsWith(m.status().message(), "bad.mlir:2:")) << m.status();
  }
}

// The exporter's pattern: a scale computed in f64 from constants, converted once to f32.
constexpr char kScaleModule[] = R"(
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %c = stablehlo.constant dense<3.000000e+00> : tensor<f64>
    %one = stablehlo.constant dense<1.000000e+00> : tensor<f64>
    %0 = stablehlo.sqrt %c : tensor<f64>
    %1 = stablehlo.divide %one, %0 : tensor<f64>
    %2 = stablehlo.convert %1 : (tensor<f64>) -> tensor<f32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %4 = stablehlo.multiply %arg0, %3 : tensor<4xf32>
    return %4 : tensor<4xf32>
  })";

TEST(F64FoldTest, ConstantSubgraphFoldsInDoubleAndRoundsOnce) {
  Function f = ParseOne(kScaleModule);
  ASSERT_TRUE(RunStandardPasses(f).ok());
  EXPECT_FALSE(HasF64(f));
  EXPECT_EQ(Count(f, Op::kConvert), 0);
  EXPECT_EQ(Count(f, Op::kSqrt), 0);
  const float exact = static_cast<float>(1.0 / std::sqrt(3.0));
  bool found = false;
  for (const Instruction& inst : f.instructions) {
    if (inst.op != Op::kConstant) continue;
    ASSERT_EQ(inst.attrs.literal.dtype(), DType::kF32);
    EXPECT_EQ(inst.attrs.literal.data<float>()[0], exact);
    found = true;
  }
  EXPECT_TRUE(found) << PrintFunction(f, TextForm::kPretty);
  absl::StatusOr<int> lowered = LowerF64ToF32(f);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(*lowered, 0);
  absl::StatusOr<std::vector<Tensor>> r = Interpret(f, {Tensor::FromVector<float>({4}, {1, 2, -3, 0.5f})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].ToVector<float>(), (std::vector<float>{exact, 2 * exact, -3 * exact, 0.5f * exact}));
}

TEST(F64InterpreterTest, ComputesInDouble) {
  FunctionBuilder b("f");
  ValueId x = b.Parameter(TensorType{DType::kF64, {3}}, "x");
  ValueId third = b.Div(x, b.Full(3.0, TensorType{DType::kF64, {3}}));
  ValueId to_i64 = b.Convert(x, DType::kI64);
  ValueId to_i32 = b.Convert(x, DType::kI32);
  ValueId back = b.Convert(b.Convert(to_i64, DType::kF32), DType::kF64);
  ValueId less = b.Compare(x, back, ComparisonDirection::kGT);
  ValueId picked = b.Select(less, x, third);
  b.Return({third, to_i64, to_i32, picked, b.ReduceSum(x, {0})});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<std::vector<Tensor>> r = Interpret(*f, {F64({3}, {1.0, -7.5, 1e300})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].ToVector<double>(), (std::vector<double>{1.0 / 3.0, -2.5, 1e300 / 3.0}));
  EXPECT_EQ((*r)[1].ToVector<int64_t>(), (std::vector<int64_t>{1, -7, std::numeric_limits<int64_t>::max()}));
  EXPECT_EQ((*r)[2].ToVector<int32_t>(), (std::vector<int32_t>{1, -7, std::numeric_limits<int32_t>::max()}));
  // -7.5 > -7 is false: the third; 1e300 > 9.2e18: x itself.
  EXPECT_EQ((*r)[3].ToVector<double>(), (std::vector<double>{1.0 / 3.0, -2.5, 1e300}));
  EXPECT_EQ((*r)[4].data<double>()[0], 1.0 - 7.5 + 1e300);
}

// f32 x -> f64, scaled and shifted in f64 (not foldable: it depends on x), back to f32.
constexpr char kSurvivingModule[] = R"(
  func.func @main(%arg0: tensor<3xf32> {pcp.name = "x"}) -> tensor<3xf32> {
    %s = stablehlo.constant dense<1.000000e-01> : tensor<3xf64>
    %c = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf64>
    %0 = stablehlo.convert %arg0 : (tensor<3xf32>) -> tensor<3xf64>
    %1 = stablehlo.multiply %0, %s : tensor<3xf64>
    %2 = stablehlo.add %1, %c : tensor<3xf64>
    %3 = stablehlo.convert %2 : (tensor<3xf64>) -> tensor<3xf32>
    return %3 : tensor<3xf32>
  })";

// The same program written in f32.
constexpr char kF32Module[] = R"(
  func.func @main(%arg0: tensor<3xf32> {pcp.name = "x"}) -> tensor<3xf32> {
    %s = stablehlo.constant dense<1.000000e-01> : tensor<3xf32>
    %c = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
    %1 = stablehlo.multiply %arg0, %s : tensor<3xf32>
    %2 = stablehlo.add %1, %c : tensor<3xf32>
    return %2 : tensor<3xf32>
  })";

TEST(LowerF64ToF32Test, RetypesSurvivingF64AndMatchesTheF32Program) {
  Function f = ParseOne(kSurvivingModule);
  ASSERT_TRUE(RunStandardPasses(f).ok());
  ASSERT_TRUE(HasF64(f)) << "folding cannot remove f64 that depends on a parameter";
  std::string first;
  absl::StatusOr<int> lowered = LowerF64ToF32(f, &first);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_GE(*lowered, 4);  // the convert, multiply, add and the constants (splat + broadcast)
  EXPECT_TRUE(absl::StartsWith(first, "instruction ")) << first;
  EXPECT_FALSE(HasF64(f));
  EXPECT_EQ(Count(f, Op::kConvert), 0);
  ASSERT_TRUE(Verify(f).ok());
  ASSERT_TRUE(RunStandardPasses(f).ok());
  Function f32 = ParseOne(kF32Module);
  ASSERT_TRUE(RunStandardPasses(f32).ok());
  Tensor x = Tensor::FromVector<float>({3}, {0.3f, -17.25f, 1e6f});
  absl::StatusOr<std::vector<Tensor>> got = Interpret(f, {x});
  absl::StatusOr<std::vector<Tensor>> want = Interpret(f32, {x});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_TRUE(BitwiseEqual((*got)[0], (*want)[0]));
  EXPECT_EQ(PrintFunction(f), PrintFunction(f32));
}

TEST(LowerF64ToF32Test, RetypesParametersAndNamesTheFirst) {
  FunctionBuilder b("f");
  ValueId x = b.Parameter(TensorType{DType::kF64, {2}}, "x");
  b.Return({b.Convert(b.Exp(x), DType::kF32), b.Mul(x, x)});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  std::string first;
  absl::StatusOr<int> lowered = LowerF64ToF32(*f, &first);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(*lowered, 3);  // x, exp, multiply
  EXPECT_EQ(first, "argument 0 'x'");
  EXPECT_FALSE(HasF64(*f));
  EXPECT_EQ(Count(*f, Op::kConvert), 0);
  absl::StatusOr<std::vector<Tensor>> r = Interpret(*f, {Tensor::FromVector<float>({2}, {0.5f, 2.0f})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].ToVector<float>(),
            (std::vector<float>{static_cast<float>(std::exp(0.5)), static_cast<float>(std::exp(2.0))}));
  EXPECT_EQ((*r)[1].ToVector<float>(), (std::vector<float>{0.25f, 4.0f}));
}

TEST(LowerF64ToF32Test, LeavesFunctionsWithoutF64Alone) {
  Function f = ParseOne(kF32Module);
  std::string before = PrintFunction(f);
  std::string first = "untouched";
  absl::StatusOr<int> lowered = LowerF64ToF32(f, &first);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(*lowered, 0);
  EXPECT_EQ(first, "untouched");
  EXPECT_EQ(PrintFunction(f), before);
}

// A mixed-precision export: weights and activations in bf16, a residual in f16, the loss
// converted to f32 at the end. LowerHalfToF32 computes all of it in f32: the program equals
// the f32 one bit for bit (constants widened exactly, converts gone, no rounding to bf16).
TEST(LowerHalfToF32Test, ComputesBf16AndF16InF32) {
  Function f = ParseOne(R"(func.func @f(%w: tensor<3xbf16>, %x: tensor<3xf32>) -> tensor<3xf32> {
    %c = stablehlo.constant dense<[1.5, -2.0, 0.1]> : tensor<3xbf16>
    %xb = stablehlo.convert %x : (tensor<3xf32>) -> tensor<3xbf16>
    %0 = stablehlo.multiply %w, %xb : tensor<3xbf16>
    %1 = stablehlo.add %0, %c : tensor<3xbf16>
    %h = stablehlo.convert %1 : (tensor<3xbf16>) -> tensor<3xf16>
    %2 = stablehlo.tanh %h : tensor<3xf16>
    %3 = stablehlo.convert %2 : (tensor<3xf16>) -> tensor<3xf32>
    return %3 : tensor<3xf32>
  })");
  std::string first;
  absl::StatusOr<int> lowered = LowerHalfToF32(f, &first);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(*lowered, 7);  // w, then every instruction but the last convert
  EXPECT_EQ(first, "argument 0");
  EXPECT_EQ(Count(f, Op::kConvert), 0);
  for (const TensorType& t : f.value_types) EXPECT_EQ(t.dtype, DType::kF32);
  ASSERT_TRUE(Verify(f).ok());
  // 0.1 is not a bf16 value: the constant is bf16's nearest, widened exactly.
  Function f32 = ParseOne(R"(func.func @f(%w: tensor<3xf32>, %x: tensor<3xf32>) -> tensor<3xf32> {
    %c = stablehlo.constant dense<[1.5, -2.0, 0x3DCD0000]> : tensor<3xf32>
    %0 = stablehlo.multiply %w, %x : tensor<3xf32>
    %1 = stablehlo.add %0, %c : tensor<3xf32>
    %2 = stablehlo.tanh %1 : tensor<3xf32>
    return %2 : tensor<3xf32>
  })");
  const Tensor w = Tensor::FromVector<float>({3}, {0.5f, 0.25f, -3.0f});
  const Tensor x = Tensor::FromVector<float>({3}, {0.3f, -17.25f, 0.123f});
  absl::StatusOr<std::vector<Tensor>> got = Interpret(f, {w, x});
  absl::StatusOr<std::vector<Tensor>> want = Interpret(f32, {w, x});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_TRUE(BitwiseEqual((*got)[0], (*want)[0]));
  // f64 is not its business, and a function without bf16 / f16 is left alone.
  Function plain = ParseOne(kF32Module);
  const std::string before = PrintFunction(plain);
  absl::StatusOr<int> none = LowerHalfToF32(plain);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(*none, 0);
  EXPECT_EQ(PrintFunction(plain), before);
}

}  // namespace
}  // namespace pcp
