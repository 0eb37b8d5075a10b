// The IR's text form (text.h): print -> parse -> print is the identity and parsing gives the
// same module back (literals bit-exact) for every op, special floats and every dtype; parse
// errors name file:line:col; garbage never crashes the parser; the checked-in examples
// (libs/autodiff/examples/*.mlir) are what the printer emits now.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/text.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/base/file.h"
#include "text_test_util.h"

namespace pcp {
namespace {

using text_testing::ConstantsFunction;
using text_testing::ModulesEqual;
using text_testing::OneFunction;

// print -> parse gives an equal module, and printing that gives the same text.
::testing::AssertionResult RoundTrips(const Module& m) {
  std::string text = PrintModule(m);
  absl::StatusOr<Module> parsed = ParseModule(text, "roundtrip.mlir");
  if (!parsed.ok()) return ::testing::AssertionFailure() << parsed.status().message() << "\n" << text;
  ::testing::AssertionResult equal = ModulesEqual(m, *parsed);
  if (!equal) return equal << "\n" << text;
  std::string again = PrintModule(*parsed);
  if (again != text) return ::testing::AssertionFailure() << "reprinted text differs:\n" << text << "\nvs\n" << again;
  return ::testing::AssertionSuccess();
}

TEST(TextTest, EveryOpRoundTripsAndAppearsInPrintedText) {
  absl::StatusOr<Module> all = text_testing::AllOpsModule();
  ASSERT_TRUE(all.ok()) << all.status();
  std::string text = PrintModule(*all);
  for (int i = 0; i < kNumOps; ++i) {
    Op op = AllOps()[i];
    EXPECT_TRUE(absl::StrContains(text, absl::StrCat("= \"", OpName(op), "\"("))) << OpName(op);
    absl::StatusOr<Function> f = text_testing::SingleOpFunction(op);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_TRUE(RoundTrips(OneFunction(*f))) << OpName(op);
  }
  EXPECT_TRUE(RoundTrips(*all));
  EXPECT_TRUE(RoundTrips(Module{}));
}

TEST(TextTest, PrintsMlirGenericForm) {
  FunctionBuilder b("f");
  ValueId x = b.Parameter({DType::kF32, {4, 8}}, "x");
  ValueId bias = b.Parameter({DType::kF32, {8}}, "b");
  ValueId y = b.Add(x, b.BroadcastInDim(bias, {4, 8}, {1}));
  b.Return({b.ReduceSum(y, {0, 1})}, {"loss"});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(PrintFunction(*f), R"("builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<4x8xf32>, %arg1: tensor<8xf32>):
    %0 = "stablehlo.broadcast_in_dim"(%arg1) {broadcast_dimensions = dense<1> : tensor<1xi64>} : (tensor<8xf32>) -> tensor<4x8xf32>
    %1 = "stablehlo.add"(%arg0, %0) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %2 = "stablehlo.constant"() {value = dense<0.000000e+00> : tensor<f32>} : () -> tensor<f32>
    %3 = "stablehlo.reduce"(%1, %2) ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %4 = "stablehlo.add"(%arg2, %arg3) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%4) : (tensor<f32>) -> ()
    }) {dimensions = dense<[0, 1]> : tensor<2xi64>} : (tensor<4x8xf32>, tensor<f32>) -> tensor<f32>
    "func.return"(%3) : (tensor<f32>) -> ()
  }) {arg_attrs = [{pcp.name = "x"}, {pcp.name = "b"}], function_type = (tensor<4x8xf32>, tensor<8xf32>) -> tensor<f32>, res_attrs = [{pcp.name = "loss"}], sym_name = "f"} : () -> ()
}) : () -> ()
)");
}

TEST(TextTest, PrintsStablehloAttributes) {
  std::string text;
  for (Op op : {Op::kCompare, Op::kDotGeneral, Op::kGather, Op::kScatter, Op::kSlice, Op::kIota}) {
    absl::StatusOr<Function> f = text_testing::SingleOpFunction(op);
    ASSERT_TRUE(f.ok()) << f.status();
    text += PrintFunction(*f);
  }
  for (const char* expected :
       {"{comparison_direction = #stablehlo<comparison_direction GE>}",
        "{dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], "
        "lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>}",
        "{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = "
        "[0], index_vector_dim = 2>, slice_sizes = dense<[1, 8]> : tensor<2xi64>}",
        "{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [2], inserted_window_dims = [0], "
        "scatter_dims_to_operand_dims = [0], index_vector_dim = 2>}",
        "{limit_indices = dense<[3, 6]> : tensor<2xi64>, start_indices = dense<[1, 0]> : tensor<2xi64>, "
        "strides = dense<[1, 2]> : tensor<2xi64>}",
        "{iota_dimension = 1 : i64}"}) {
    EXPECT_TRUE(absl::StrContains(text, expected)) << expected << "\n" << text;
  }
}

// ---- Literals ----------------------------------------------------------------------------

Tensor F32Bits(const std::vector<uint32_t>& bits, Shape shape) {
  Tensor t(DType::kF32, std::move(shape));
  std::memcpy(t.raw_data(), bits.data(), bits.size() * 4);
  return t;
}

Tensor Bits16(DType dtype, const std::vector<uint16_t>& bits, Shape shape) {
  Tensor t(dtype, std::move(shape));
  std::memcpy(t.raw_data(), bits.data(), bits.size() * 2);
  return t;
}

const std::vector<uint32_t> kSpecialF32 = {
    0x7F800000, 0xFF800000,              // +-inf
    0x7FC00000, 0xFFC00000, 0x7F800001,  // quiet nan, negative nan, signalling nan with payload
    0x7FBFFFFF, 0x80000000, 0x00000000,  // nan with all payload bits, -0.0, +0.0
    0x00000001, 0x807FFFFF, 0x00800000,  // smallest and largest denormal, FLT_MIN
    0x7F7FFFFF, 0xFF7FFFFF, 0x3DCCCCCD,  // +-FLT_MAX, 0.1f
    0x3EAAAAAB, 0x4B800001, 0x3F800001,  // 1/3, 2^24 + 2, 1 + ulp
};

TEST(TextTest, SpecialFloatsRoundTripBitExact) {
  std::vector<Tensor> literals;
  for (uint32_t bits : kSpecialF32) literals.push_back(F32Bits({bits}, {}));             // splats
  literals.push_back(F32Bits(kSpecialF32, {static_cast<int64_t>(kSpecialF32.size())}));  // hex
  literals.push_back(F32Bits({0x7F800000, 0x7F800000, 0x7F800000}, {3}));                // splat inf
  std::string text = PrintFunction(ConstantsFunction(literals));
  EXPECT_TRUE(absl::StrContains(text, "dense<0x7F800000> : tensor<f32>")) << text;
  EXPECT_TRUE(absl::StrContains(text, "dense<0xFF800000> : tensor<f32>")) << text;
  EXPECT_TRUE(absl::StrContains(text, "dense<0x7FC00000> : tensor<f32>")) << text;
  EXPECT_TRUE(absl::StrContains(text, "dense<-0.000000e+00> : tensor<f32>")) << text;
  EXPECT_TRUE(absl::StrContains(text, "dense<0x7F800000> : tensor<3xf32>")) << text;
  EXPECT_TRUE(absl::StrContains(text, "dense<\"0x0000807F0000807F") ||
              absl::StrContains(text, "dense<\"0x0000807F000080FF"))
      << text;
  EXPECT_TRUE(RoundTrips(OneFunction(ConstantsFunction(literals))));
}

TEST(TextTest, RandomF32BitPatternsRoundTripThroughDecimal) {
  std::mt19937 rng(7);
  std::vector<Tensor> literals;
  for (int i = 0; i < 20000; ++i) literals.push_back(F32Bits({static_cast<uint32_t>(rng())}, {}));
  EXPECT_TRUE(RoundTrips(OneFunction(ConstantsFunction(literals))));
}

TEST(TextTest, EveryF16AndBF16BitPatternRoundTrips) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    std::vector<Tensor> literals;
    std::vector<uint16_t> all;
    for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
      literals.push_back(Bits16(dtype, {static_cast<uint16_t>(bits)}, {}));
      all.push_back(static_cast<uint16_t>(bits));
    }
    literals.push_back(Bits16(dtype, all, {256, 256}));
    EXPECT_TRUE(RoundTrips(OneFunction(ConstantsFunction(literals)))) << MlirName(dtype);
  }
  std::string text = PrintFunction(
      ConstantsFunction({Bits16(DType::kBF16, {0x3F80}, {}), Bits16(DType::kF16, {0x7C00, 0x7C00}, {2})}));
  EXPECT_TRUE(absl::StrContains(text, "dense<1.000000e+00> : tensor<bf16>")) << text;
  EXPECT_TRUE(absl::StrContains(text, "dense<0x7C00> : tensor<2xf16>")) << text;
}

TEST(TextTest, IntegerAndBoolLiteralsRoundTrip) {
  const int64_t kMin64 = std::numeric_limits<int64_t>::min(), kMax64 = std::numeric_limits<int64_t>::max();
  std::vector<bool> mask;
  for (int i = 0; i < 13; ++i) mask.push_back(i % 3 == 0);
  std::vector<Tensor> literals = {
      Tensor::Scalar<int32_t>(-7),
      Tensor::FromVector<int32_t>({4},
                                  {std::numeric_limits<int32_t>::min(), -1, 0, std::numeric_limits<int32_t>::max()}),
      Tensor::FromVector<int32_t>({2, 2}, {5, 5, 5, 5}),
      Tensor::FromVector<int64_t>({3}, {kMin64, 0, kMax64}),
      Tensor::Scalar<int64_t>(kMin64),
      Tensor::FromVector<bool>({13}, mask),
      Tensor::FromVector<bool>({3}, {true, true, true}),
      Tensor::Scalar<bool>(false),
      Tensor(DType::kF32, {2, 0}),
  };
  Function f = ConstantsFunction(literals);
  std::string text = PrintFunction(f);
  for (const char* expected :
       {"dense<-7> : tensor<i32>", "dense<\"0x00000080FFFFFFFF00000000FFFFFF7F\"> : tensor<4xi32>",
        "dense<5> : tensor<2x2xi32>", "dense<-9223372036854775808> : tensor<i64>", "dense<\"0x4912\"> : tensor<13xi1>",
        "dense<true> : tensor<3xi1>", "dense<false> : tensor<i1>", "dense<> : tensor<2x0xf32>"}) {
    EXPECT_TRUE(absl::StrContains(text, expected)) << expected << "\n" << text;
  }
  EXPECT_TRUE(RoundTrips(OneFunction(f)));
}

TEST(TextTest, NamesAreEscapedAndRoundTrip) {
  FunctionBuilder b("weird \"name\"\\");
  ValueId x = b.Parameter({DType::kF32, {2}}, "transformer.h.0.attn.c_attn.weight");
  ValueId y = b.Parameter({DType::kF32, {2}}, "");
  ValueId z = b.Parameter({DType::kF32, {2}}, "quote\" back\\slash\nnewline\ttab \xC3\xA9");
  b.Return({b.Add(x, y), z}, {"", "out"});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  std::string text = PrintFunction(*f);
  EXPECT_TRUE(absl::StrContains(text, R"({pcp.name = "quote\22 back\\slash\0Anewline\09tab \C3\A9"})")) << text;
  EXPECT_TRUE(absl::StrContains(text, R"(sym_name = "weird \22name\22\\")")) << text;
  EXPECT_TRUE(absl::StrContains(text, R"(arg_attrs = [{pcp.name = "transformer.h.0.attn.c_attn.weight"}, {}, )"))
      << text;
  EXPECT_TRUE(RoundTrips(OneFunction(*f)));
}

// ---- Parsing what people and tools write -------------------------------------------------

TEST(TextTest, AcceptsAnyValidNamesOrderAndLiteralForms) {
  absl::StatusOr<Module> m = ParseModule(R"(// A comment.
"func.func"() ({
^entry(%x: tensor<2x2xf32>, %ids.v1: tensor<3xi32>):
  %a_1 = "stablehlo.constant"() {value = dense<[[1.5, -2.0], [0x7F800000, 4.]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %sum$ = "stablehlo.add"(%x, %a_1) : (tensor<2x2xf32>, tensor<2x2xf32>) -> (tensor<2x2xf32>)  // trailing comment
  %-r = "stablehlo.reduce"(%sum$, %zero) ({
  ^bb7(%p: tensor<f32>, %q: tensor<f32>):
    %m = "stablehlo.maximum"(%q, %p) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%m) : (tensor<f32>) -> ()
  }) {"dimensions" = dense<1> : tensor<1xi64>} : (tensor<2x2xf32>, tensor<f32>) -> tensor<2xf32>
  "func.return"(%-r, %ids.v1) : (tensor<2xf32>, tensor<3xi32>) -> ()
}) {sym_name = "g", res_attrs = [{}, {"pcp.name" = "ids"}], function_type = (tensor<2x2xf32>, tensor<3xi32>) -> (tensor<2xf32>, tensor<3xi32>)} : () -> ()
)");
  // %zero is used before it is defined: an error, reported where it is used.
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(std::string(m.status().message()), "<input>:6:35: use of undefined value %zero");
  m = ParseModule(R"(// A comment.
"func.func"() ({
^entry(%x: tensor<2x2xf32>, %ids.v1: tensor<3xi32>):
  %a_1 = "stablehlo.constant"() {value = dense<[[1.5, -2.0], [0x7F800000, 4.]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %zero = "stablehlo.constant"() {value = dense<"0x00000000"> : tensor<f32>} : () -> tensor<f32>
  %sum$ = "stablehlo.add"(%x, %a_1) : (tensor<2x2xf32>, tensor<2x2xf32>) -> (tensor<2x2xf32>)  // trailing comment
  %-r = "stablehlo.reduce"(%sum$, %zero) ({
  ^bb7(%p: tensor<f32>, %q: tensor<f32>):
    %m = "stablehlo.maximum"(%q, %p) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%m) : (tensor<f32>) -> ()
  }) {"dimensions" = dense<1> : tensor<1xi64>} : (tensor<2x2xf32>, tensor<f32>) -> tensor<2xf32>
  "func.return"(%-r, %ids.v1) : (tensor<2xf32>, tensor<3xi32>) -> ()
}) {sym_name = "g", res_attrs = [{}, {"pcp.name" = "ids"}], function_type = (tensor<2x2xf32>, tensor<3xi32>) -> (tensor<2xf32>, tensor<3xi32>)} : () -> ()
)");
  ASSERT_TRUE(m.ok()) << m.status();
  const Function& f = m->functions.at(0);
  EXPECT_EQ(f.name, "g");
  EXPECT_EQ(f.params, (std::vector<ValueId>{0, 1}));
  ASSERT_EQ(f.instructions.size(), 4u);
  EXPECT_EQ(f.instructions[2].operands, (std::vector<ValueId>{0, 2}));
  EXPECT_EQ(f.instructions[3].op, Op::kReduce);
  EXPECT_EQ(f.instructions[3].operands, (std::vector<ValueId>{4, 3}));
  EXPECT_EQ(f.instructions[3].attrs.reduce_kind, ReduceKind::kMax);
  EXPECT_EQ(f.instructions[3].attrs.dims, (std::vector<int64_t>{1}));
  EXPECT_EQ(f.results, (std::vector<ValueId>{5, 1}));
  EXPECT_EQ(f.result_names, (std::vector<std::string>{"", "ids"}));
  const Tensor& lit = f.instructions[0].attrs.literal;
  ASSERT_EQ(lit.dtype(), DType::kF32);
  EXPECT_EQ(lit.data<float>()[0], 1.5f);
  EXPECT_EQ(lit.data<float>()[1], -2.0f);
  EXPECT_TRUE(std::isinf(lit.data<float>()[2]));
  EXPECT_EQ(lit.data<float>()[3], 4.0f);
  EXPECT_TRUE(RoundTrips(*m));
}

struct ErrorCase {
  const char* name;
  std::string text;
  std::string message;  // the whole message
};

// A function with parameters %x: tensor<2xf32>, %i: tensor<3xi32>, %t: tensor<4x5xf32> whose
// line 3 is `op_line`; it returns %0 of type `result`.
std::string ErrorText(absl::string_view op_line, absl::string_view result = "tensor<2xf32>") {
  return absl::StrCat(
      "\"func.func\"() ({\n"
      "^bb0(%x: tensor<2xf32>, %i: tensor<3xi32>, %t: tensor<4x5xf32>):\n",
      op_line, "\n  \"func.return\"(%0) : (", result, ") -> ()\n",
      "}) {function_type = (tensor<2xf32>, tensor<3xi32>, tensor<4x5xf32>) -> ", result,
      ", sym_name = \"f\"} : () -> ()\n");
}

TEST(TextTest, ErrorsNameLineColumnAndWhatWasExpected) {
  // The list of supported ops comes from PCP_OP_LIST, so every op added there appears in it.
  std::vector<absl::string_view> op_names;
  for (int i = 0; i < kNumOps; ++i) op_names.push_back(OpName(AllOps()[i]));
  const std::string kUnsupportedFrobnicate =
      absl::StrCat("t.mlir:3:8: unsupported operation 'stablehlo.frobnicate' (PCP supports ",
                   absl::StrJoin(op_names, ", "), ", arith.constant and func.return)");
  EXPECT_TRUE(absl::StrContains(kUnsupportedFrobnicate, "stablehlo.abs, stablehlo.ceil, chlo.erf"));
  const std::string kAdd = R"(  %0 = "stablehlo.add"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>)";
  ASSERT_TRUE(ParseModule(ErrorText(kAdd), "t.mlir").ok());
  const std::string valid = ErrorText(kAdd);
  std::vector<ErrorCase> cases = {
      {"truncated", valid.substr(0, valid.find("%x, %x") + 6),
       "t.mlir:3:30: expected ')' to close the operand list, got end of input"},
      {"truncated in type", valid.substr(0, valid.find("tensor<2xf32>)") + 9),
       "t.mlir:3:59: expected an element type, got end of input"},
      {"unknown op",
       ErrorText(R"(  %0 = "stablehlo.frobnicate"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>)"),
       kUnsupportedFrobnicate},
      {"bad element type",
       ErrorText(R"(  %0 = "stablehlo.add"(%x, %x) : (tensor<2xui64>, tensor<2xf32>) -> tensor<2xf32>)"),
       "t.mlir:3:44: unsupported element type 'ui64' (PCP has f32, f64, f16, bf16, i32, i64 and i1, and reads i8, "
       "i16, ui8 and ui16 as i32 and ui32 as i64)"},
      {"dynamic shape",
       ErrorText(R"(  %0 = "stablehlo.add"(%x, %x) : (tensor<?xf32>, tensor<2xf32>) -> tensor<2xf32>)"),
       "t.mlir:3:42: dynamic dimensions are not supported"},
      {"undefined value",
       ErrorText(R"(  %0 = "stablehlo.add"(%x, %y) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>)"),
       "t.mlir:3:28: use of undefined value %y"},
      {"wrong operand count",
       ErrorText(
           R"(  %0 = "stablehlo.add"(%x, %x, %x) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>)"),
       "t.mlir:3:3: stablehlo.add expects 2 operands, got 3"},
      {"operand type differs from signature",
       ErrorText(R"(  %0 = "stablehlo.add"(%x, %i) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>)"),
       "t.mlir:3:28: operand #1 has type tensor<3xi32> but the operation's type says tensor<2xf32>"},
      {"verifier type mismatch",
       ErrorText(R"(  %0 = "stablehlo.add"(%x, %i) : (tensor<2xf32>, tensor<3xi32>) -> tensor<2xf32>)"),
       "t.mlir:3:3: stablehlo.add: operand types differ: tensor<2xf32> vs tensor<3xi32>"},
      {"declared result type",
       ErrorText(R"(  %0 = "stablehlo.add"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<3xf32>)",
                 "tensor<3xf32>"),
       "t.mlir:3:3: stablehlo.add: declared result type tensor<3xf32> but the operands give tensor<2xf32>"},
      {"gather index_vector_dim outside the indices",
       ErrorText(
           R"(  %0 = "stablehlo.gather"(%t, %i) {dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [1], start_index_map = [1], index_vector_dim = 2>, slice_sizes = dense<[4, 1]> : tensor<2xi64>} : (tensor<4x5xf32>, tensor<3xi32>) -> tensor<4x3xf32>)",
           "tensor<4x3xf32>"),
       "t.mlir:3:56: stablehlo.gather: index_vector_dim = 2 is outside [0, 1] for indices tensor<3xi32>"},
      {"gather result type differs from the spec's",
       ErrorText(
           R"(  %0 = "stablehlo.gather"(%t, %i) {dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = dense<[1, 2]> : tensor<2xi64>} : (tensor<4x5xf32>, tensor<3xi32>) -> tensor<3x5xf32>)",
           "tensor<3x5xf32>"),
       "t.mlir:3:214: stablehlo.gather: the result type is tensor<3x5xf32> but the operands and dimension numbers "
       "give tensor<3x2xf32>"},
      {"unsupported reduce body",
       ErrorText("  %z = \"stablehlo.constant\"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>\n"
                 "  %0 = \"stablehlo.reduce\"(%t, %z) ({\n"
                 "  ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
                 "    %p = \"stablehlo.multiply\"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
                 "    \"stablehlo.return\"(%p) : (tensor<f32>) -> ()\n"
                 "  }) {dimensions = dense<0> : tensor<1xi64>} : (tensor<4x5xf32>, tensor<f32>) -> tensor<5xf32>",
                 "tensor<5xf32>"),
       "t.mlir:6:10: unsupported body of stablehlo.reduce: expected \"stablehlo.add\", \"stablehlo.maximum\", or "
       "\"stablehlo.or\" / \"stablehlo.and\" over i1, got "
       "\"stablehlo.multiply\""},
      {"unsupported scatter body",
       ErrorText(
           "  %u = \"stablehlo.constant\"() {value = dense<1.0> : tensor<3x5xf32>} : () -> tensor<3x5xf32>\n"
           "  %0 = \"stablehlo.scatter\"(%t, %i, %u) ({\n"
           "  ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
           "    %p = \"stablehlo.maximum\"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
           "    \"stablehlo.return\"(%p) : (tensor<f32>) -> ()\n"
           "  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], "
           "scatter_dims_to_operand_dims = [0], index_vector_dim = 1>} : (tensor<4x5xf32>, tensor<3xi32>, "
           "tensor<3x5xf32>) -> tensor<4x5xf32>",
           "tensor<4x5xf32>"),
       "t.mlir:6:10: unsupported body of stablehlo.scatter: expected \"stablehlo.add\", or stablehlo.return of the "
       "update (assign), got \"stablehlo.maximum\""},
      {"unknown dot field",
       ErrorText(
           R"(  %0 = "stablehlo.dot_general"(%x, %x) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [0], rhs_contracting_dimensions = [0], precision = [1]>} : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>)",
           "tensor<f32>"),
       "t.mlir:3:148: unknown field 'precision' in #stablehlo.dot (expected one of lhs_batching_dimensions, "
       "rhs_batching_dimensions, lhs_contracting_dimensions, rhs_contracting_dimensions)"},
      {"float literal without a dot",
       ErrorText(R"(  %0 = "stablehlo.constant"() {value = dense<1> : tensor<2xf32>} : () -> tensor<2xf32>)"),
       "t.mlir:3:46: expected a floating-point literal for f32 (add a '.'), got '1'"},
      {"missing attribute", ErrorText(R"(  %0 = "stablehlo.transpose"(%x) : (tensor<2xf32>) -> tensor<2xf32>)"),
       "t.mlir:3:3: stablehlo.transpose needs attribute 'permutation'"},
      {"unknown attribute",
       ErrorText(R"(  %0 = "stablehlo.add"(%x, %x) {fast = true} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>)"),
       "t.mlir:3:33: stablehlo.add does not take attribute 'fast'"},
      {"redefinition", ErrorText(R"(  %x = "stablehlo.add"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>)"),
       "t.mlir:3:3: redefinition of %x"},
      {"invalid character",
       ErrorText(R"(  %0 = "stablehlo.add"(%x, &x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>)"),
       "t.mlir:3:28: expected an operand (%name), got unexpected character '&'"},
      {"function type mismatch",
       ErrorText(kAdd, "tensor<2xf32>").replace(valid.find("-> tensor<2xf32>, sym"), 16, "-> tensor<3xf32>"),
       "t.mlir:5:21: function_type (tensor<2xf32>, tensor<3xi32>, tensor<4x5xf32>) -> (tensor<3xf32>) does not "
       "match the body, which has type (tensor<2xf32>, tensor<3xi32>, tensor<4x5xf32>) -> (tensor<2xf32>)"},
      {"duplicate function", valid + valid, "t.mlir:10:98: function @f is defined twice"},
      {"neither module nor function", "stablehlo.add {\n}\n",
       "t.mlir:1:1: expected a module or a function (\"builtin.module\", module, \"func.func\" or func.func), got "
       "'stablehlo.add'"},
      {"unterminated string", ErrorText(R"(  %0 = "stablehlo.add(%x, %x))"),
       "t.mlir:3:8: expected an operation name, got unterminated string '\"stablehlo.add(%x, %x)'"},
  };
  for (const ErrorCase& c : cases) {
    absl::StatusOr<Module> m = ParseModule(c.text, "t.mlir");
    ASSERT_FALSE(m.ok()) << c.name << "\n" << c.text;
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_EQ(std::string(m.status().message()), c.message) << c.name << "\n" << c.text;
  }
}

TEST(TextTest, DeepNestingIsAnErrorNotAStackOverflow) {
  std::string text = ErrorText(absl::StrCat("  %0 = \"stablehlo.constant\"() {value = dense<", std::string(100000, '['),
                                            "> : tensor<2xf32>} : () -> tensor<2xf32>"));
  absl::StatusOr<Module> m = ParseModule(text, "t.mlir");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(std::string(m.status().message()), "t.mlir:3:110: literal nests too deeply");
}

// Truncations and random byte mutations of a module using every op: the parser returns an
// error or a module that verifies and round-trips, and never crashes.
TEST(TextTest, GarbageNeverCrashesTheParser) {
  absl::StatusOr<Module> all = text_testing::AllOpsModule();
  ASSERT_TRUE(all.ok()) << all.status();
  const std::string text = PrintModule(*all);
  auto check = [](const std::string& input) {
    absl::StatusOr<Module> m = ParseModule(input, "fuzz.mlir");
    if (!m.ok()) {
      EXPECT_TRUE(absl::StartsWith(m.status().message(), "fuzz.mlir:")) << m.status().message();
      return 0;
    }
    EXPECT_TRUE(Verify(*m).ok());
    EXPECT_TRUE(RoundTrips(*m));
    return 1;
  };
  int accepted = 0;
  for (size_t n = 0; n < text.size(); n += 7) accepted += check(text.substr(0, n));
  std::mt19937 rng(42);
  const std::string kInteresting = "%\"(){}[]<>,:=-x0123456789.^#e+ \n\\";
  const char* iterations = std::getenv("PCP_FUZZ_ITERATIONS");  // more for a sanitizer run
  const int n_iterations = iterations != nullptr ? std::atoi(iterations) : 3000;
  for (int iter = 0; iter < n_iterations; ++iter) accepted += check(text_testing::MutateText(text, rng, kInteresting));
  // Sanity: some mutations (e.g. inside a name string or comment-like spots) still parse.
  EXPECT_GT(accepted, 0);
}

// ---- Examples ----------------------------------------------------------------------------

TEST(TextTest, ExampleFilesAreCurrentAndParse) {
  absl::StatusOr<std::vector<std::pair<std::string, Module>>> examples = text_testing::ExampleModules();
  ASSERT_TRUE(examples.ok()) << examples.status();
  ASSERT_GE(examples->size(), 3u);
  const bool update = std::getenv("PCP_UPDATE_EXAMPLES") != nullptr;
  for (const auto& [name, module] : *examples) {
    std::string path = absl::StrCat(PCP_SOURCE_DIR, "/libs/autodiff/examples/", name, ".mlir");
    std::string expected = absl::StrCat(text_testing::kExampleHeader, PrintModule(module));
    if (update) {
      std::ofstream(path, std::ios::binary) << expected;
    }
    const std::string actual = ReadFile(path).value_or("");  // (missing: differs from `expected`)
    EXPECT_EQ(actual, expected) << path << " is out of date; regenerate it with PCP_UPDATE_EXAMPLES=1";
    absl::StatusOr<Module> parsed = ParseModule(actual, path);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_TRUE(Verify(*parsed).ok());
    EXPECT_TRUE(ModulesEqual(module, *parsed)) << path;
  }
}

}  // namespace
}  // namespace pcp
