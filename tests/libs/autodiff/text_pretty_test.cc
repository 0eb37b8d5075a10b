// The pretty (custom) form of the IR's text (text.h): what JAX and torch-mlir export parses
// into the same IR as the generic form of the same program; the pretty printer round-trips
// every op, literal and example bit-exactly; the two forms mix in one module; unsupported ops,
// attributes and types are errors at line:column; garbage never crashes the parser; the
// checked-in pretty examples (libs/autodiff/examples/pretty/*.mlir) are current.
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/text.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/base/file.h"
#include "text_test_util.h"

namespace pcp {
namespace {

using text_testing::ConstantsFunction;
using text_testing::ModulesEqual;
using text_testing::OneFunction;

// pretty print -> parse gives an equal module, which prints the same in both forms.
::testing::AssertionResult RoundTripsPretty(const Module& m) {
  std::string text = PrintModule(m, TextForm::kPretty);
  absl::StatusOr<Module> parsed = ParseModule(text, "pretty.mlir");
  if (!parsed.ok()) return ::testing::AssertionFailure() << parsed.status().message() << "\n" << text;
  ::testing::AssertionResult equal = ModulesEqual(m, *parsed);
  if (!equal) return equal << "\n" << text;
  std::string again = PrintModule(*parsed, TextForm::kPretty);
  if (again != text) return ::testing::AssertionFailure() << "reprinted text differs:\n" << text << "\nvs\n" << again;
  if (PrintModule(*parsed) != PrintModule(m)) return ::testing::AssertionFailure() << "generic forms differ";
  return ::testing::AssertionSuccess();
}

std::string Hex(const Tensor& t) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  const auto* p = static_cast<const uint8_t*>(t.raw_data());
  for (int64_t i = 0; i < t.byte_size(); ++i) {
    out.push_back(kDigits[p[i] >> 4]);
    out.push_back(kDigits[p[i] & 15]);
  }
  return out;
}

// ---- Printing ----------------------------------------------------------------------------

TEST(TextPrettyTest, EveryOpRoundTripsInPrettyForm) {
  absl::StatusOr<Module> all = text_testing::AllOpsModule();
  ASSERT_TRUE(all.ok()) << all.status();
  std::string text = PrintModule(*all, TextForm::kPretty);
  for (int i = 0; i < kNumOps; ++i) {
    Op op = AllOps()[i];
    // Gather and scatter have no custom syntax in StableHLO, PCP's attention ops none at all:
    // they stay generic.
    const bool generic = op == Op::kGather || op == Op::kScatter || GetOpCategory(op) == OpCategory::kAttention;
    std::string spelling = generic             ? absl::StrCat("= \"", OpName(op), "\"(")
                           : op == Op::kReduce ? "= stablehlo.reduce("
                                               : absl::StrCat("= ", OpName(op), " ");
    EXPECT_TRUE(absl::StrContains(text, spelling)) << spelling;
    absl::StatusOr<Function> f = text_testing::SingleOpFunction(op);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_TRUE(RoundTripsPretty(OneFunction(*f))) << OpName(op);
  }
  EXPECT_TRUE(RoundTripsPretty(*all));
  EXPECT_TRUE(RoundTripsPretty(Module{}));
  absl::StatusOr<std::vector<std::pair<std::string, Module>>> examples = text_testing::ExampleModules();
  ASSERT_TRUE(examples.ok()) << examples.status();
  for (const auto& [name, module] : *examples) EXPECT_TRUE(RoundTripsPretty(module)) << name;
}

TEST(TextPrettyTest, PrintsStablehloPrettySpellings) {
  FunctionBuilder b("f");
  ValueId x = b.Parameter({DType::kF32, {4, 8}}, "x");
  ValueId bias = b.Parameter({DType::kF32, {8}}, "b");
  ValueId y = b.Add(x, b.BroadcastInDim(bias, {4, 8}, {1}));
  b.Return({b.ReduceSum(y, {0, 1})}, {"loss"});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(PrintFunction(*f, TextForm::kPretty), R"(module {
  func.func @f(%arg0: tensor<4x8xf32> {pcp.name = "x"}, %arg1: tensor<8xf32> {pcp.name = "b"}) -> (tensor<f32> {pcp.name = "loss"}) {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
    %1 = stablehlo.add %arg0, %0 : tensor<4x8xf32>
    %2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.reduce(%1 init: %2) applies stablehlo.add across dimensions = [0, 1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<f32>
    return %3 : tensor<f32>
  }
}
)");
  std::string text;
  for (Op op : {Op::kCompare, Op::kDotGeneral, Op::kSlice, Op::kIota, Op::kSelect, Op::kConvert, Op::kErf,
                Op::kConcatenate, Op::kTranspose}) {
    absl::StatusOr<Function> g = text_testing::SingleOpFunction(op);
    ASSERT_TRUE(g.ok()) << g.status();
    text += PrintFunction(*g, TextForm::kPretty);
  }
  for (const char* expected :
       {"= stablehlo.compare GE, %", "batching_dims = [0] x [0], contracting_dims = [2] x [1] : (",
        "= stablehlo.slice %", " [1:3, 0:6:2] : (", "= stablehlo.iota dim = 1 : tensor<", "= chlo.erf %",
        "= stablehlo.select %", "= stablehlo.convert %", ", dim = ", "= stablehlo.transpose %"}) {
    EXPECT_TRUE(absl::StrContains(text, expected)) << expected << "\n" << text;
  }
}

// ---- Literals ----------------------------------------------------------------------------

TEST(TextPrettyTest, LiteralsRoundTripBitExact) {
  std::mt19937 rng(11);
  std::vector<Tensor> literals;
  for (uint32_t bits : {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7F800001u, 0x80000000u, 0x00000001u, 0x7F7FFFFFu}) {
    Tensor t(DType::kF32, {});
    std::memcpy(t.raw_data(), &bits, 4);
    literals.push_back(t);
  }
  for (int i = 0; i < 3000; ++i) {
    uint32_t bits = static_cast<uint32_t>(rng());
    Tensor t(DType::kF32, {});
    std::memcpy(t.raw_data(), &bits, 4);
    literals.push_back(t);
  }
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    Tensor all(dtype, {256, 256});
    for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
      auto b16 = static_cast<uint16_t>(bits);
      std::memcpy(static_cast<uint8_t*>(all.raw_data()) + 2 * bits, &b16, 2);
    }
    literals.push_back(all);
  }
  literals.push_back(Tensor::FromVector<int64_t>({3}, {std::numeric_limits<int64_t>::min(), 0, 7}));
  literals.push_back(Tensor::FromVector<int32_t>({2}, {-1, 5}));
  literals.push_back(Tensor::FromVector<bool>({3}, {true, false, true}));
  literals.push_back(Tensor(DType::kF32, {2, 0}));
  EXPECT_TRUE(RoundTripsPretty(OneFunction(ConstantsFunction(literals))));
}

// ---- What exporters write ----------------------------------------------------------------

// An attention-like block and a masked loss, written the way JAX / torch-mlir print StableHLO:
// locations and #loc aliases, module and argument attributes, a dense_resource weight,
// hex-float constants, reduce in both forms, dot_general with batching dims.
const char kExportStyle[] = R"(#loc = loc(unknown)
#loc1 = loc("model.py":12:0)
module @jit_loss attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x4x8xf32> {mhlo.sharding = "{replicated}"} loc("x"), %arg1: tensor<2x4xi32> loc("targets")) -> (tensor<f32> {jax.result_info = "loss"}, tensor<48xf32>, tensor<2x4xf32>) {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32> loc(#loc)
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %w = stablehlo.constant dense_resource<torch_tensor_8_8_torch.float32> : tensor<8x8xf32>
    %0 = stablehlo.dot_general %arg0, %arg0, batching_dims = [0] x [0], contracting_dims = [2] x [2], precision = [DEFAULT, DEFAULT] : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32> loc(#loc1)
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.maximum across dimensions = [2] : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4xf32> loc(fused[#loc1, "softmax"])
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<2x4x4xf32>
    %3 = stablehlo.subtract %0, %2 : tensor<2x4x4xf32>
    %4 = stablehlo.exponential %3 : tensor<2x4x4xf32>
    %5 = stablehlo.reduce(%4 init: %cst_0) across dimensions = [2] : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4xf32>
     reducer(%arg2: tensor<f32> loc(unknown), %arg3: tensor<f32> loc(unknown))  {
      %30 = stablehlo.add %arg2, %arg3 : tensor<f32> loc(#loc1)
      stablehlo.return %30 : tensor<f32> loc(#loc1)
    } loc(#loc1)
    %6 = stablehlo.broadcast_in_dim %5, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<2x4x4xf32>
    %7 = stablehlo.divide %4, %6 : tensor<2x4x4xf32>
    %8 = stablehlo.dot_general %7, %arg0, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %9 = stablehlo.dot_general %8, %w, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %10 = stablehlo.iota dim = 2 : tensor<2x4x8xi32>
    %11 = stablehlo.broadcast_in_dim %arg1, dims = [0, 1] : (tensor<2x4xi32>) -> tensor<2x4x8xi32>
    %12 = stablehlo.compare  EQ, %10, %11,  SIGNED : (tensor<2x4x8xi32>, tensor<2x4x8xi32>) -> tensor<2x4x8xi1>
    %13 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x4x8xf32>
    %14 = stablehlo.select %12, %9, %13 : tensor<2x4x8xi1>, tensor<2x4x8xf32>
    %15 = stablehlo.reduce(%14 init: %cst_0) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<f32>
    %16 = stablehlo.negate %15 : tensor<f32>
    %cst_1 = arith.constant dense<0x3E000000> : tensor<f32>
    %17 = stablehlo.multiply %16, %cst_1 : tensor<f32>
    %18 = stablehlo.transpose %9, dims = [0, 2, 1] : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
    %19 = stablehlo.slice %18 [0:2, 0:8:2, 1:4] : (tensor<2x8x4xf32>) -> tensor<2x4x3xf32>
    %20 = stablehlo.reshape %19 : (tensor<2x4x3xf32>) -> tensor<24xf32>
    %21 = stablehlo.concatenate %20, %20, dim = 0 : (tensor<24xf32>, tensor<24xf32>) -> tensor<48xf32>
    %22 = stablehlo.convert %arg1 : (tensor<2x4xi32>) -> tensor<2x4xf32>
    %23 = stablehlo.rsqrt %22 : tensor<2x4xf32>
    return %17, %21, %23 : tensor<f32>, tensor<48xf32>, tensor<2x4xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc2 = loc("model.py":20:4)
{-#
  dialect_resources: {
    builtin: {
      torch_tensor_8_8_torch.float32: "0x04000000@HEX@"
    }
  }
#-}
)";

// The same program in MLIR's generic form, as newer MLIR prints it (properties, array<i64>)
// and as mlir-opt 15 does (attribute dictionaries, dense<...> : tensor<Nxi64>).
const char kGenericForm[] = R"("builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2x4x8xf32>, %arg1: tensor<2x4xi32>):
    %cst = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %cst_0 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %w = "stablehlo.constant"() <{value = dense<"0x@HEX@"> : tensor<8x8xf32>}> : () -> tensor<8x8xf32>
    %0 = "stablehlo.dot_general"(%arg0, %arg0) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [2]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
    %1 = "stablehlo.reduce"(%0, %cst) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %m = "stablehlo.maximum"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%m) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 2>} : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4xf32>
    %2 = "stablehlo.broadcast_in_dim"(%1) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<2x4xf32>) -> tensor<2x4x4xf32>
    %3 = "stablehlo.subtract"(%0, %2) : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %4 = "stablehlo.exponential"(%3) : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %5 = "stablehlo.reduce"(%4, %cst_0) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%s) : (tensor<f32>) -> ()
    }) {dimensions = dense<2> : tensor<1xi64>} : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4xf32>
    %6 = "stablehlo.broadcast_in_dim"(%5) {broadcast_dimensions = dense<[0, 1]> : tensor<2xi64>} : (tensor<2x4xf32>) -> tensor<2x4x4xf32>
    %7 = "stablehlo.divide"(%4, %6) : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %8 = "stablehlo.dot_general"(%7, %arg0) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>} : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %9 = "stablehlo.dot_general"(%8, %w) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [0]>} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %10 = "stablehlo.iota"() {iota_dimension = 2 : i64} : () -> tensor<2x4x8xi32>
    %11 = "stablehlo.broadcast_in_dim"(%arg1) {broadcast_dimensions = dense<[0, 1]> : tensor<2xi64>} : (tensor<2x4xi32>) -> tensor<2x4x8xi32>
    %12 = "stablehlo.compare"(%10, %11) {compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction EQ>} : (tensor<2x4x8xi32>, tensor<2x4x8xi32>) -> tensor<2x4x8xi1>
    %13 = "stablehlo.broadcast_in_dim"(%cst_0) {broadcast_dimensions = dense<> : tensor<0xi64>} : (tensor<f32>) -> tensor<2x4x8xf32>
    %14 = "stablehlo.select"(%12, %9, %13) : (tensor<2x4x8xi1>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %15 = "stablehlo.reduce"(%14, %cst_0) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%s) : (tensor<f32>) -> ()
    }) {dimensions = dense<[0, 1, 2]> : tensor<3xi64>} : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<f32>
    %16 = "stablehlo.negate"(%15) : (tensor<f32>) -> tensor<f32>
    %cst_1 = "stablehlo.constant"() {value = dense<1.250000e-01> : tensor<f32>} : () -> tensor<f32>
    %17 = "stablehlo.multiply"(%16, %cst_1) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %18 = "stablehlo.transpose"(%9) {permutation = dense<[0, 2, 1]> : tensor<3xi64>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
    %19 = "stablehlo.slice"(%18) {start_indices = dense<[0, 0, 1]> : tensor<3xi64>, limit_indices = dense<[2, 8, 4]> : tensor<3xi64>, strides = dense<[1, 2, 1]> : tensor<3xi64>} : (tensor<2x8x4xf32>) -> tensor<2x4x3xf32>
    %20 = "stablehlo.reshape"(%19) : (tensor<2x4x3xf32>) -> tensor<24xf32>
    %21 = "stablehlo.concatenate"(%20, %20) {dimension = 0 : i64} : (tensor<24xf32>, tensor<24xf32>) -> tensor<48xf32>
    %22 = "stablehlo.convert"(%arg1) : (tensor<2x4xi32>) -> tensor<2x4xf32>
    %23 = "stablehlo.rsqrt"(%22) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    "func.return"(%17, %21, %23) : (tensor<f32>, tensor<48xf32>, tensor<2x4xf32>) -> ()
  }) {function_type = (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<48xf32>, tensor<2x4xf32>), sym_name = "main"} : () -> ()
}) : () -> ()
)";

Tensor Weight() {
  std::vector<float> w;
  for (int i = 0; i < 64; ++i) w.push_back(static_cast<float>(i) * 0.25f - 3.0f);
  return Tensor::FromVector<float>({8, 8}, w);
}

std::string WithWeight(const char* text) { return absl::StrReplaceAll(text, {{"@HEX@", Hex(Weight())}}); }

TEST(TextPrettyTest, ExportStyleModuleParsesLikeItsGenericForm) {
  absl::StatusOr<Module> pretty = ParseModule(WithWeight(kExportStyle), "export.mlir");
  ASSERT_TRUE(pretty.ok()) << pretty.status();
  absl::StatusOr<Module> generic = ParseModule(WithWeight(kGenericForm), "generic.mlir");
  ASSERT_TRUE(generic.ok()) << generic.status();
  EXPECT_TRUE(ModulesEqual(*pretty, *generic));
  EXPECT_EQ(PrintModule(*pretty), PrintModule(*generic));
  const Function& f = pretty->functions.at(0);
  EXPECT_EQ(f.name, "main");
  ASSERT_EQ(f.instructions.size(), 28u);
  // The dense_resource blob, after its 4-byte alignment header, is the weight.
  const Tensor& w = f.instructions[2].attrs.literal;
  ASSERT_EQ(w.byte_size(), Weight().byte_size());
  EXPECT_EQ(std::memcmp(w.raw_data(), Weight().raw_data(), static_cast<size_t>(w.byte_size())), 0);
  EXPECT_EQ(f.instructions[4].attrs.reduce_kind, ReduceKind::kMax);
  EXPECT_EQ(f.instructions[8].attrs.reduce_kind, ReduceKind::kSum);
  EXPECT_EQ(f.instructions[3].attrs.dot.lhs_batch, (std::vector<int64_t>{0}));
  EXPECT_TRUE(RoundTripsPretty(*pretty));
}

TEST(TextPrettyTest, GenericAndPrettyFormsMixInOneModule) {
  absl::StatusOr<Module> m = ParseModule(R"("builtin.module"() ({
  func.func @pretty(%arg0: tensor<4x8xf32>, %ids: tensor<3xi32>) -> tensor<3x8xf32> {
    %0 = "stablehlo.gather"(%arg0, %ids) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 8>}> : (tensor<4x8xf32>, tensor<3xi32>) -> tensor<3x8xf32>
    %1 = stablehlo.tanh %0 : tensor<3x8xf32>
    "func.return"(%1) : (tensor<3x8xf32>) -> ()
  }
  "func.func"() ({
  ^bb0(%t: tensor<4x8xf32>, %i: tensor<3xi32>, %u: tensor<3x8xf32>):
    %s = "stablehlo.scatter"(%t, %i, %u) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      %x = stablehlo.add %arg3, %arg4 : tensor<f32>
      stablehlo.return %x : tensor<f32>
    }) : (tensor<4x8xf32>, tensor<3xi32>, tensor<3x8xf32>) -> tensor<4x8xf32>
    %e = chlo.erf %s : tensor<4x8xf32> -> tensor<4x8xf32>
    return %e : tensor<4x8xf32>
  }) {function_type = (tensor<4x8xf32>, tensor<3xi32>, tensor<3x8xf32>) -> tensor<4x8xf32>, sym_name = "generic"} : () -> ()
}) : () -> ()
)",
                                         "mixed.mlir");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->functions.size(), 2u);
  EXPECT_EQ(m->functions[0].instructions.at(0).op, Op::kGather);
  EXPECT_EQ(m->functions[0].instructions.at(1).op, Op::kTanh);
  EXPECT_EQ(m->functions[1].instructions.at(0).op, Op::kScatter);
  EXPECT_EQ(m->functions[1].instructions.at(1).op, Op::kErf);
  EXPECT_TRUE(RoundTripsPretty(*m));
}

// Module, function, argument and result attributes that JAX and torch-mlir put on their
// exports only shard, lay out or name things: they are read past.
TEST(TextPrettyTest, ReadsPastExporterMetadata) {
  absl::StatusOr<Module> m = ParseModule(
      R"(module @jit_f attributes {jax.uses_shape_polymorphism = false, mhlo.cross_program_prefetches = [], mhlo.is_dynamic = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32, mhlo.use_auto_spmd_partitioning = false} {
  func.func public @main(%arg0: tensor<1x7xi32> {jax.arg_info = "inputs['input_ids']", mhlo.layout_mode = "default", mhlo.sharding = "{replicated}"}) -> (tensor<1x7xf32> {jax.result_info = "[0]", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.convert %arg0 {mhlo.frontend_attributes = {_xla_compute_type = "host"}} : (tensor<1x7xi32>) -> tensor<1x7xf32>
    return %0 : tensor<1x7xf32>
  }
  func.func private @helper(%x: tensor<f32>) -> tensor<f32> attributes {torch.assume_strict_symbolic_shapes} {
    func.return %x : tensor<f32>
  }
}
)");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->functions.size(), 2u);
  EXPECT_EQ(m->functions[0].name, "main");
  EXPECT_EQ(m->functions[0].instructions.at(0).op, Op::kConvert);
  EXPECT_EQ(m->functions[1].name, "helper");
  absl::StatusOr<Module> torch = ParseModule(R"(module attributes {torch.debug_module_name = "Net"} {
  func.func @forward(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %0 = stablehlo.abs %arg0 : tensor<2x3xf32>
    return %0 : tensor<2x3xf32>
  }
}
)");
  ASSERT_TRUE(torch.ok()) << torch.status();
  // The same in the generic form: sym_visibility and metadata in arg_attrs / res_attrs.
  absl::StatusOr<Module> generic = ParseModule(R"("func.func"() ({
^bb0(%arg0: tensor<1x7xi32>):
  %0 = "stablehlo.convert"(%arg0) : (tensor<1x7xi32>) -> tensor<1x7xf32>
  "func.return"(%0) : (tensor<1x7xf32>) -> ()
}) {arg_attrs = [{jax.arg_info = "x", mhlo.sharding = "{replicated}", pcp.name = "x"}], function_type = (tensor<1x7xi32>) -> tensor<1x7xf32>, res_attrs = [{jax.result_info = ""}], sym_name = "main", sym_visibility = "public"} : () -> ()
)");
  ASSERT_TRUE(generic.ok()) << generic.status();
  EXPECT_EQ(generic->functions.at(0).param_names, (std::vector<std::string>{"x"}));
}

// Narrow and unsigned integers, as JAX prints a board encoding (searchless chess: a ui8
// constant broadcast and converted): read as i32 (ui32 as i64) with every stored value exact,
// from decimal lists, hex literals, splats and dense_resource blobs; UNSIGNED comparisons read.
TEST(TextPrettyTest, NarrowAndUnsignedIntegersAreWidenedExactly) {
  absl::StatusOr<Module> m = ParseModule(R"(module {
  func.func @main(%arg0: tensor<3xui8>) -> (tensor<3xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi64>, tensor<33x1xi32>, tensor<2xi32>, tensor<3xi1>) {
    %c = stablehlo.constant dense<[0, 200, 255]> : tensor<3xui8>
    %h8 = stablehlo.constant dense<"0xFF80"> : tensor<2xi8>
    %h16 = stablehlo.constant dense<"0xFFFF3412"> : tensor<2xui16>
    %h32 = stablehlo.constant dense<"0xFFFFFFFF07000000"> : tensor<2xui32>
    %s = stablehlo.constant dense<"0xFE"> : tensor<2xui8>
    %r = stablehlo.constant dense_resource<board> : tensor<2xi16>
    %z = stablehlo.constant dense<0> : tensor<ui8>
    %0 = stablehlo.add %arg0, %c : tensor<3xui8>
    %1 = stablehlo.convert %0 : (tensor<3xui8>) -> tensor<3xi32>
    %2 = stablehlo.convert %h8 : (tensor<2xi8>) -> tensor<2xi32>
    %3 = stablehlo.convert %h16 : (tensor<2xui16>) -> tensor<2xi32>
    %4 = stablehlo.convert %h32 : (tensor<2xui32>) -> tensor<2xi64>
    %5 = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<ui8>) -> tensor<33x1xui8>
    %6 = stablehlo.convert %5 : (tensor<33x1xui8>) -> tensor<33x1xi32>
    %7 = stablehlo.convert %s : (tensor<2xui8>) -> tensor<2xi32>
    %8 = stablehlo.compare  GT, %c, %arg0,  UNSIGNED : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xi1>
    %9 = stablehlo.convert %r : (tensor<2xi16>) -> tensor<2xi32>
    %10 = stablehlo.add %7, %9 : tensor<2xi32>
    return %1, %2, %3, %4, %6, %10, %8 : tensor<3xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi64>, tensor<33x1xi32>, tensor<2xi32>, tensor<3xi1>
  }
}
{-#
  dialect_resources: {
    builtin: {
      board: "0x0200000001800300"
    }
  }
#-}
)",
                                         "narrow.mlir");
  ASSERT_TRUE(m.ok()) << m.status();
  const Function& f = m->functions.at(0);
  EXPECT_EQ(f.type(f.params[0]).dtype, DType::kI32);
  Tensor arg(DType::kI32, {3});
  for (int i = 0; i < 3; ++i) arg.data<int32_t>()[i] = i;
  absl::StatusOr<std::vector<Tensor>> out = Interpret(f, {arg});
  ASSERT_TRUE(out.ok()) << out.status();
  auto ints = [](const Tensor& t) {
    std::vector<int64_t> v;
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      v.push_back(t.dtype() == DType::kI64 ? t.data<int64_t>()[i] : t.data<int32_t>()[i]);
    }
    return v;
  };
  EXPECT_EQ(ints((*out)[0]), (std::vector<int64_t>{0, 201, 257}));  // widened: 255 + 2 does not wrap
  EXPECT_EQ(ints((*out)[1]), (std::vector<int64_t>{-1, -128}));
  EXPECT_EQ(ints((*out)[2]), (std::vector<int64_t>{65535, 0x1234}));
  EXPECT_EQ((*out)[3].dtype(), DType::kI64);
  EXPECT_EQ(ints((*out)[3]), (std::vector<int64_t>{4294967295LL, 7}));
  EXPECT_EQ(ints((*out)[4]), std::vector<int64_t>(33, 0));
  EXPECT_EQ(ints((*out)[5]), (std::vector<int64_t>{254 - 32767, 254 + 3}));  // 0x8001 = -32767, 0x0003
  const Tensor& gt = (*out)[6];
  EXPECT_EQ(std::vector<uint8_t>(gt.data<uint8_t>(), gt.data<uint8_t>() + 3), (std::vector<uint8_t>{0, 1, 1}));
  // A blob of the wrong size is measured in the stored width.
  absl::StatusOr<Module> short_blob = ParseModule(R"(module {
  func.func @main() -> tensor<2xi32> {
    %r = stablehlo.constant dense_resource<b> : tensor<2xui16>
    %0 = stablehlo.convert %r : (tensor<2xui16>) -> tensor<2xi32>
    return %0 : tensor<2xi32>
  }
}
{-#
  dialect_resources: { builtin: { b: "0x02000000010203" } }
#-}
)",
                                                  "short.mlir");
  ASSERT_FALSE(short_blob.ok());
  EXPECT_TRUE(absl::StrContains(short_blob.status().message(), "holds 3 bytes after its header but tensor<2xi32>"))
      << short_blob.status();
  EXPECT_TRUE(absl::StrContains(short_blob.status().message(), "needs 4 (2 bytes per stored element)"))
      << short_blob.status();
}

// ---- Errors ------------------------------------------------------------------------------

struct ErrorCase {
  const char* name;
  std::string text;
  std::string message;  // the whole message, or its start if it ends in "..."
};

// A pretty-form function with parameters %x: tensor<2xf32>, %i: tensor<3xi32>,
// %t: tensor<4x5xf32> whose line 3 is `op_line`; it returns %0 of type `result`.
std::string PrettyErrorText(absl::string_view op_line, absl::string_view result = "tensor<2xf32>") {
  return absl::StrCat("module {\n  func.func @f(%x: tensor<2xf32>, %i: tensor<3xi32>, %t: tensor<4x5xf32>) -> ", result,
                      " {\n", op_line, "\n    return %0 : ", result, "\n  }\n}\n");
}

TEST(TextPrettyTest, ErrorsNameLineColumnAndWhatIsUnsupported) {
  ASSERT_TRUE(ParseModule(PrettyErrorText("    %0 = stablehlo.add %x, %x : tensor<2xf32>"), "t.mlir").ok());
  const std::string valid = PrettyErrorText("    %0 = stablehlo.add %x, %x : tensor<2xf32>");
  std::vector<ErrorCase> cases = {
      {"unsupported op", PrettyErrorText("    %0 = stablehlo.cosine %x : tensor<2xf32>"),
       "t.mlir:3:10: unsupported operation 'stablehlo.cosine' (PCP supports stablehlo.constant, stablehlo.iota, "
       "stablehlo.add, ..."},
      {"unsupported attribute", PrettyErrorText("    %0 = stablehlo.add %x, %x {foo.bar = 1 : i32} : tensor<2xf32>"),
       "t.mlir:3:32: unsupported attribute 'foo.bar' on stablehlo.add (PCP reads past only mhlo.sharding, "
       "sdy.sharding, ..."},
      {"ui64", PrettyErrorText("    %0 = stablehlo.convert %x : (tensor<2xf32>) -> tensor<2xui64>", "tensor<2xui64>"),
       "t.mlir:2:87: unsupported element type 'ui64' (PCP has f32, f64, f16, bf16, i32, i64 and i1, and reads i8, "
       "i16, ui8 and ui16 as i32 and ui32 as i64)"},
      {"scalar type", PrettyErrorText("    %0 = arith.constant 1.0 : f32"),
       "t.mlir:3:25: scalar constants are not supported: PCP values are tensors (arith.constant dense<...> : "
       "tensor<...>)"},
      {"reduce body",
       PrettyErrorText("    %z = stablehlo.constant dense<1.0> : tensor<f32>\n"
                       "    %0 = stablehlo.reduce(%t init: %z) applies stablehlo.multiply across "
                       "dimensions = [0] : (tensor<4x5xf32>, tensor<f32>) -> tensor<5xf32>",
                       "tensor<5xf32>"),
       "t.mlir:4:48: unsupported body of stablehlo.reduce: expected stablehlo.add, stablehlo.maximum, or "
       "stablehlo.or / stablehlo.and over i1, got "
       "'stablehlo.multiply'"},
      {"variadic reduce",
       PrettyErrorText("    %z = stablehlo.constant dense<1.0> : tensor<f32>\n"
                       "    %0 = stablehlo.reduce(%t init: %z), (%t init: %z) across dimensions = "
                       "[0] : (tensor<4x5xf32>, tensor<f32>) -> tensor<5xf32>",
                       "tensor<5xf32>"),
       "t.mlir:4:39: stablehlo.reduce with several inputs is not supported"},
      {"dot algorithm",
       PrettyErrorText("    %0 = stablehlo.dot_general %x, %x, contracting_dims = [0] x [0], "
                       "algorithm = <lhs_precision_type = f32> : (tensor<2xf32>, tensor<2xf32>) -> "
                       "tensor<f32>",
                       "tensor<f32>"),
       "t.mlir:3:70: unsupported stablehlo.dot_general attribute 'algorithm' (PCP takes batching_dims, "
       "contracting_dims and precision)"},
      {"total order",
       PrettyErrorText("    %c = stablehlo.compare LT, %x, %x, TOTALORDER : (tensor<2xf32>, "
                       "tensor<2xf32>) -> tensor<2xi1>\n"
                       "    %0 = stablehlo.select %c, %x, %x : tensor<2xi1>, tensor<2xf32>"),
       "t.mlir:3:40: comparison type TOTALORDER is not supported (PCP compares floats in IEEE partial order, FLOAT)"},
      {"unsigned ints",
       PrettyErrorText("    %c = stablehlo.compare LT, %i, %i, UNSIGNED : (tensor<3xi32>, "
                       "tensor<3xi32>) -> tensor<3xi1>\n    %0 = stablehlo.add %x, %x : tensor<2xf32>"),
       "t.mlir:3:40: comparison type UNSIGNED is not supported for i32 operands (PCP compares them as SIGNED)"},
      {"gather pretty", PrettyErrorText("    %0 = stablehlo.gather %t, %i : tensor<2xf32>"),
       "t.mlir:3:10: stablehlo.gather has no pretty form; write it in the generic form (\"stablehlo.gather\"(...) "
       "<{...}> : (...) -> ...)"},
      {"elided blob", PrettyErrorText("    %0 = stablehlo.constant dense_resource<__elided__> : tensor<2xf32>"),
       "t.mlir:3:44: dense_resource<__elided__>: the exporter left this constant's data out; export again with "
       "large elements kept (e.g. without --mlir-elide-elementsattrs-if-larger)"},
      {"missing blob", PrettyErrorText("    %0 = stablehlo.constant dense_resource<w0> : tensor<2xf32>"),
       "t.mlir:3:44: dense_resource<w0> has no blob in the file's {-# dialect_resources: { builtin: ... } #-}"},
      {"short blob",
       absl::StrCat(PrettyErrorText("    %0 = stablehlo.constant dense_resource<w0> : tensor<2xf32>"),
                    "{-# dialect_resources: { builtin: { w0: \"0x040000000000803F\" } } #-}\n"),
       "t.mlir:7:41: resource 'w0' holds 4 bytes after its header but tensor<2xf32> at t.mlir:3:44 needs 8"},
      {"several partitions", absl::StrCat("module attributes {mhlo.num_partitions = 2 : i32} {\n}\n"),
       "t.mlir:1:42: mhlo.num_partitions = 2 is not supported (PCP runs one replica of one partition per program)"},
      {"attribute alias", absl::StrCat("#map = affine_map<(d0) -> (d0)>\n", valid),
       "t.mlir:1:1: attribute alias #map is not supported (only location aliases, #loc = loc(...))"},
      {"return types",
       PrettyErrorText("    %0 = stablehlo.add %x, %x : tensor<2xf32>", "tensor<2xf32>")
           .replace(valid.find("return %0 : tensor<2xf32>") + 12, 13, "tensor<3xf32>"),
       "t.mlir:4:17: the return's types (tensor<3xf32>) do not match its operands (tensor<2xf32>)"},
      {"result types", std::string(valid).replace(valid.find("-> tensor<2xf32>"), 16, "-> tensor<3xf32>"),
       "t.mlir:2:78: the result types (tensor<3xf32>) of func.func @f do not match its return, which has "
       "(tensor<2xf32>)"},
      {"declared type",
       PrettyErrorText("    %0 = stablehlo.transpose %t, dims = [1, 0] : (tensor<4x5xf32>) -> "
                       "tensor<4x5xf32>",
                       "tensor<4x5xf32>"),
       "t.mlir:3:5: stablehlo.transpose: declared result type tensor<4x5xf32> but the operands give tensor<5x4xf32>"},
      {"undefined value", PrettyErrorText("    %0 = stablehlo.add %x, %y : tensor<2xf32>"),
       "t.mlir:3:28: use of undefined value %y"},
      {"truncated", valid.substr(0, valid.find("%x, %x") + 4),
       "t.mlir:3:28: expected an operand (%name), got end of input"},
      {"unterminated location", PrettyErrorText("    %0 = stablehlo.add %x, %x : tensor<2xf32> loc(\"a\""),
       "t.mlir:3:47: expected an operation name, got unterminated location 'loc(\"a\"\\x0A    return %0 : tensor<2xf32>\\x0A  ...'"},
      {"declaration", "module {\n  func.func private @f(%x: tensor<2xf32>) -> tensor<2xf32>\n}\n",
       "t.mlir:3:1: expected '{' to start the function body (declarations without a body are not supported), got '}'"},
  };
  for (const ErrorCase& c : cases) {
    absl::StatusOr<Module> m = ParseModule(c.text, "t.mlir");
    ASSERT_FALSE(m.ok()) << c.name << "\n" << c.text;
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    std::string message(m.status().message());
    absl::string_view want = c.message;
    if (absl::EndsWith(want, "...")) {
      want.remove_suffix(3);
      size_t ellipsis = want.find("...");
      if (ellipsis != absl::string_view::npos) {  // "start ... middle"
        EXPECT_TRUE(absl::StartsWith(message, want.substr(0, ellipsis))) << c.name << ": " << message;
        EXPECT_TRUE(absl::StrContains(message, want.substr(ellipsis + 3))) << c.name << ": " << message;
      } else {
        EXPECT_TRUE(absl::StartsWith(message, want)) << c.name << ": " << message;
      }
    } else {
      EXPECT_EQ(message, c.message) << c.name << "\n" << c.text;
    }
  }
}

// Truncations and random byte mutations of pretty text: an error or a module that verifies
// and round-trips, never a crash.
TEST(TextPrettyTest, GarbageNeverCrashesTheParser) {
  absl::StatusOr<Module> all = text_testing::AllOpsModule();
  ASSERT_TRUE(all.ok()) << all.status();
  int accepted = 0;
  auto check = [&accepted](const std::string& input) {
    absl::StatusOr<Module> m = ParseModule(input, "fuzz.mlir");
    if (!m.ok()) {
      EXPECT_TRUE(absl::StartsWith(m.status().message(), "fuzz.mlir:")) << m.status().message();
      return;
    }
    ++accepted;
    EXPECT_TRUE(Verify(*m).ok());
    EXPECT_TRUE(RoundTripsPretty(*m));
  };
  std::mt19937 rng(43);
  const std::string kInteresting = "%\"(){}[]<>,:=-x0123456789.^#@e+ \n\\";
  const char* iterations = std::getenv("PCP_FUZZ_ITERATIONS");
  const int n_iterations = iterations != nullptr ? std::atoi(iterations) : 1500;
  for (const std::string& text : {PrintModule(*all, TextForm::kPretty), WithWeight(kExportStyle)}) {
    for (size_t n = 0; n < text.size(); n += 11) check(text.substr(0, n));
    for (int iter = 0; iter < n_iterations; ++iter) check(text_testing::MutateText(text, rng, kInteresting));
  }
  EXPECT_GT(accepted, 0);
}

// ---- Examples ----------------------------------------------------------------------------

const char kPrettyExampleHeader[] =
    "// Generated by tests/libs/autodiff/text_pretty_test.cc from text_test_util.cc; regenerate with\n"
    "// PCP_UPDATE_EXAMPLES=1 build/tests/libs/autodiff/text_pretty_test --gtest_filter='*Example*'\n";

TEST(TextPrettyTest, PrettyExampleFilesAreCurrentAndParse) {
  absl::StatusOr<std::vector<std::pair<std::string, Module>>> examples = text_testing::ExampleModules();
  ASSERT_TRUE(examples.ok()) << examples.status();
  const bool update = std::getenv("PCP_UPDATE_EXAMPLES") != nullptr;
  for (const auto& [name, module] : *examples) {
    std::string path = absl::StrCat(PCP_SOURCE_DIR, "/libs/autodiff/examples/pretty/", name, ".mlir");
    std::string expected = absl::StrCat(kPrettyExampleHeader, PrintModule(module, TextForm::kPretty));
    if (update) std::ofstream(path, std::ios::binary) << expected;
    const std::string actual = ReadFile(path).value_or("");  // (missing: differs from `expected`)
    EXPECT_EQ(actual, expected) << path << " is out of date; regenerate it with PCP_UPDATE_EXAMPLES=1";
    absl::StatusOr<Module> parsed = ParseModule(actual, path);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_TRUE(ModulesEqual(module, *parsed)) << path;
  }
}

}  // namespace
}  // namespace pcp
