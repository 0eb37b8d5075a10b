// ImportStableHloModel on small modules built here and printed in StableHLO's pretty form:
// the rewrite into PCP's convention (data last as i32, frozen arguments as constants, extra
// results dropped), values, names, the init rule, and every option error.
#include "pcp/models/stablehlo_model.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/text.h"
#include "pcp/tensor/convert.h"

namespace pcp {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Message(const absl::Status& s) { return std::string(s.message()); }

constexpr int64_t kV = 5, kC = 3, kB = 2, kT = 4;

// main(w: f32[V, C] "w", rope: f32[C] "rope", tokens: i64[B, T], targets: i64[B, T])
//   -> (loss = sum(w[tokens] * rope) + 0.5 * sum(w[targets] * w[targets]), rowsum(w): f32[V])
// `loss_first` false returns the [V] result first (not a loss).
std::string ToyModule(DType data = DType::kI64, bool loss_first = true) {
  FunctionBuilder b("main");
  ValueId w = b.Parameter(TensorType{DType::kF32, {kV, kC}}, "w");
  ValueId rope = b.Parameter(TensorType{DType::kF32, {kC}}, "rope");
  ValueId tokens = b.Parameter(TensorType{data, {kB, kT}}, "tokens");
  ValueId targets = b.Parameter(TensorType{data, {kB, kT}}, "targets");
  ValueId e = b.Gather(w, tokens);
  ValueId r = b.BroadcastInDim(rope, {kB, kT, kC}, {2});
  ValueId a = b.ReduceSum(b.Mul(e, r), {0, 1, 2});
  ValueId g = b.Gather(w, targets);
  ValueId c = b.Mul(b.ReduceSum(b.Mul(g, g), {0, 1, 2}), b.ScalarConstant(0.5));
  ValueId loss = b.Add(a, c);
  ValueId rows = b.ReduceSum(w, {1});
  if (loss_first) {
    b.Return({loss, rows}, {"loss", "rows"});
  } else {
    b.Return({rows, loss}, {"rows", "loss"});
  }
  absl::StatusOr<Function> f = b.Build();
  EXPECT_TRUE(f.ok()) << f.status();
  return PrintFunction(*f, TextForm::kPretty);
}

Tensor Range(Shape shape, float scale) {
  std::vector<float> v(static_cast<size_t>(NumElements(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * static_cast<float>(i + 1);
  return Tensor::FromVector(std::move(shape), v);
}

Tensor Tokens(int offset) {
  std::vector<int32_t> v(kB * kT);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>((i + static_cast<size_t>(offset)) % kV);
  return Tensor::FromVector<int32_t>({kB, kT}, v);
}

// The loss computed by hand for w, rope and the batch.
double ExpectedLoss(const Tensor& w, const Tensor& rope, const Tensor& tokens, const Tensor& targets) {
  const float* W = w.data<float>();
  const float* R = rope.data<float>();
  double loss = 0;
  for (int64_t i = 0; i < kB * kT; ++i) {
    const int32_t t = tokens.data<int32_t>()[i], y = targets.data<int32_t>()[i];
    for (int64_t c = 0; c < kC; ++c) loss += double{W[t * kC + c]} * R[c] + 0.5 * W[y * kC + c] * W[y * kC + c];
  }
  return loss;
}

StableHloImportOptions WithParams(const Tensor& w, const Tensor& rope) {
  StableHloImportOptions o;
  o.params = std::vector<NamedTensor>{{"wte", w}, {"rope_cos", rope}};
  o.params_file = "toy.safetensors";
  o.frozen = {"rope_cos"};
  return o;
}

TEST(StableHloModelTest, RewritesIntoPcpConvention) {
  const Tensor w = Range({kV, kC}, 0.1f), rope = Range({kC}, -0.5f);
  absl::StatusOr<ImportedModel> m = ImportStableHloModel(ToyModule(), "toy.mlir", WithParams(w, rope));
  ASSERT_TRUE(m.ok()) << m.status();
  const Function& f = m->forward;
  ASSERT_EQ(f.params.size(), 3u);  // w, tokens, targets: rope became a constant
  EXPECT_EQ(f.param_names, (std::vector<std::string>{"wte", "tokens", "targets"}));
  EXPECT_EQ(f.type(f.params[1]), (TensorType{DType::kI32, {kB, kT}}));
  EXPECT_EQ(f.type(f.params[2]), (TensorType{DType::kI32, {kB, kT}}));
  ASSERT_EQ(f.results.size(), 1u);
  EXPECT_EQ(f.type(f.results[0]), (TensorType{DType::kF32, {}}));
  EXPECT_EQ(m->names, std::vector<std::string>{"wte"});
  EXPECT_EQ(m->frozen, std::vector<std::string>{"rope_cos"});
  EXPECT_EQ(m->batch_size, kB);
  EXPECT_EQ(m->block_size, kT);
  EXPECT_EQ(m->num_params, kV * kC);
  ASSERT_EQ(m->initial.size(), 1u);
  EXPECT_EQ(m->initial[0].data<float>()[4], w.data<float>()[4]);

  const Tensor x = Tokens(0), y = Tokens(3);
  absl::StatusOr<std::vector<Tensor>> out = Interpret(f, {w, x, y});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NEAR(out->at(0).data<float>()[0], ExpectedLoss(w, rope, x, y), 1e-4);
}

TEST(StableHloModelTest, ParamsFileMatchedByTheModuleNamesInAnyOrder) {
  // As Python's safetensors writes it: sorted by name, not in argument order.
  const Tensor w = Range({kV, kC}, 0.1f), rope = Range({kC}, 2.0f);
  StableHloImportOptions o;
  o.params = std::vector<NamedTensor>{{"rope", rope}, {"w", w}};
  o.params_file = "sorted.safetensors";
  o.frozen = {"rope"};
  absl::StatusOr<ImportedModel> m = ImportStableHloModel(ToyModule(), "toy.mlir", o);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->names, std::vector<std::string>{"w"});
  EXPECT_FALSE(m->init_recipe.has_value());  // θ₀ comes from the file, not a draw
  absl::StatusOr<std::vector<Tensor>> out = Interpret(m->forward, {w, Tokens(0), Tokens(2)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NEAR(out->at(0).data<float>()[0], ExpectedLoss(w, rope, Tokens(0), Tokens(2)), 1e-4);
  // bf16 values for the f32 argument are widened.
  absl::StatusOr<Tensor> w16 = ConvertTensor(w, DType::kBF16);
  ASSERT_TRUE(w16.ok());
  o.params = std::vector<NamedTensor>{{"rope", rope}, {"w", *w16}};
  absl::StatusOr<ImportedModel> widened = ImportStableHloModel(ToyModule(), "toy.mlir", o);
  ASSERT_TRUE(widened.ok()) << widened.status();
  EXPECT_EQ(widened->initial[0].dtype(), DType::kF32);
  EXPECT_NEAR(widened->initial[0].data<float>()[7], w.data<float>()[7], 0.01);
  // Other names in the file: by position, and a shape mismatch says how to match by name.
  o.params = std::vector<NamedTensor>{{"b", rope}, {"a", w}};
  o.frozen = {};
  absl::StatusOr<ImportedModel> swapped = ImportStableHloModel(ToyModule(), "toy.mlir", o);
  ASSERT_FALSE(swapped.ok());
  EXPECT_THAT(Message(swapped.status()), HasSubstr("give model.names to match by name"));
}

TEST(StableHloModelTest, FrozenValueIsUsed) {
  const Tensor w = Range({kV, kC}, 0.1f);
  const Tensor x = Tokens(1), y = Tokens(2);
  std::vector<float> losses;
  for (float scale : {1.0f, -2.0f}) {
    const Tensor rope = Range({kC}, scale);
    absl::StatusOr<ImportedModel> m = ImportStableHloModel(ToyModule(), "toy.mlir", WithParams(w, rope));
    ASSERT_TRUE(m.ok()) << m.status();
    absl::StatusOr<std::vector<Tensor>> out = Interpret(m->forward, {w, x, y});
    ASSERT_TRUE(out.ok()) << out.status();
    losses.push_back(out->at(0).data<float>()[0]);
    EXPECT_NEAR(losses.back(), ExpectedLoss(w, rope, x, y), 1e-4);
  }
  EXPECT_NE(losses[0], losses[1]);
}

TEST(StableHloModelTest, I32DataAndDataArgsByNameAndIndex) {
  const Tensor w = Range({kV, kC}, 0.1f), rope = Range({kC}, 1.0f);
  for (std::vector<std::string> data :
       {std::vector<std::string>{"tokens", "targets"}, std::vector<std::string>{"%arg2", "3"}}) {
    StableHloImportOptions o = WithParams(w, rope);
    o.data_args = data;
    absl::StatusOr<ImportedModel> m = ImportStableHloModel(ToyModule(DType::kI32), "toy.mlir", o);
    ASSERT_TRUE(m.ok()) << m.status();
    absl::StatusOr<std::vector<Tensor>> out = Interpret(m->forward, {w, Tokens(0), Tokens(1)});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_NEAR(out->at(0).data<float>()[0], ExpectedLoss(w, rope, Tokens(0), Tokens(1)), 1e-4);
  }
  // Swapped: targets first.
  StableHloImportOptions o = WithParams(w, rope);
  o.data_args = {"targets", "tokens"};
  absl::StatusOr<ImportedModel> m = ImportStableHloModel(ToyModule(), "toy.mlir", o);
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<std::vector<Tensor>> out = Interpret(m->forward, {w, Tokens(0), Tokens(1)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NEAR(out->at(0).data<float>()[0], ExpectedLoss(w, rope, Tokens(1), Tokens(0)), 1e-4);
}

TEST(StableHloModelTest, InitRuleWithoutParamsFile) {
  StableHloImportOptions o;
  o.names = {"big.weight", "ln_f.weight"};
  o.init = StableHloInit{.std = 0.02, .ones = {"*ln*weight"}, .seed = 7};
  absl::StatusOr<ImportedModel> m = ImportStableHloModel(ToyModule(), "toy.mlir", o);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->initial.size(), 2u);
  for (int64_t i = 0; i < kC; ++i) EXPECT_EQ(m->initial[1].data<float>()[i], 1.0f);
  double sum_sq = 0;
  for (int64_t i = 0; i < kV * kC; ++i) sum_sq += std::pow(m->initial[0].data<float>()[i], 2);
  EXPECT_GT(sum_sq, 0);
  EXPECT_LT(std::sqrt(sum_sq / (kV * kC)), 0.06);
  // Every value drawn: the recipe (a worker draws θ₀ from it) says how, bit for bit.
  ASSERT_TRUE(m->init_recipe.has_value());
  EXPECT_EQ(m->init_recipe->seed, 7u);
  EXPECT_EQ(m->init_recipe->params, (std::vector<ParamInit>{ParamInit::Normal(0.02), ParamInit::Ones()}));
  absl::StatusOr<std::vector<Tensor>> drawn = DrawInit(*m->init_recipe, {m->types[0].shape, m->types[1].shape});
  ASSERT_TRUE(drawn.ok()) << drawn.status();
  EXPECT_EQ(std::memcmp((*drawn)[0].data<float>(), m->initial[0].data<float>(), m->initial[0].byte_size()), 0);
  // The same seed draws the same values; 1-D params not matching `ones` are 0.
  o.init.ones = {};
  absl::StatusOr<ImportedModel> again = ImportStableHloModel(ToyModule(), "toy.mlir", o);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->initial[0].data<float>()[5], m->initial[0].data<float>()[5]);
  EXPECT_EQ(again->initial[1].data<float>()[0], 0.0f);
  // Without names or params, the module's own argument names.
  absl::StatusOr<ImportedModel> plain = ImportStableHloModel(ToyModule(), "toy.mlir", {});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->names, (std::vector<std::string>{"w", "rope"}));
}

// As JAX prints a jitted loss (jax.jit(f).lower(...).as_text()): a named module with
// attributes, public main, unnamed arguments with sharding attributes, results with
// jax.result_info, locations, i64 data and an extra result.
constexpr char kJaxStyle[] =
    R"(module @jit_loss attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5x3xf32> {mhlo.sharding = "{replicated}"}, %arg1: tensor<3xf32>, %arg2: tensor<2x4xi64>, %arg3: tensor<2x4xi64>) -> (tensor<f32> {jax.result_info = "[0]"}, tensor<5xf32> {jax.result_info = "[1]"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32> loc(#loc1)
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<5x3xf32> loc(#loc2)
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<5x3xf32>, tensor<f32>) -> tensor<f32>
    %2 = stablehlo.reduce(%arg1 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
    %3 = stablehlo.convert %arg2 : (tensor<2x4xi64>) -> tensor<2x4xf32>
    %4 = stablehlo.convert %arg3 : (tensor<2x4xi64>) -> tensor<2x4xf32>
    %5 = stablehlo.subtract %3, %4 : tensor<2x4xf32>
    %6 = stablehlo.multiply %5, %5 : tensor<2x4xf32>
    %7 = stablehlo.reduce(%6 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x4xf32>, tensor<f32>) -> tensor<f32>
    %8 = stablehlo.multiply %1, %2 : tensor<f32>
    %9 = stablehlo.add %8, %7 : tensor<f32>
    %10 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<5x3xf32>, tensor<f32>) -> tensor<5xf32>
    return %9, %10 : tensor<f32>, tensor<5xf32>
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc1 = loc("loss.py":3:0)
#loc2 = loc("loss.py":4:0)
)";

TEST(StableHloModelTest, JaxStyleModule) {
  // loss = sum(w^2) * sum(scale) + sum((tokens - targets)^2); scale frozen by index.
  const Tensor w = Range({kV, kC}, 0.1f), scale = Range({kC}, 1.0f);
  StableHloImportOptions o;
  o.params = std::vector<NamedTensor>{{"w", w}, {"scale", scale}};
  o.params_file = "jax.safetensors";
  o.frozen = {"%arg1"};
  absl::StatusOr<ImportedModel> m = ImportStableHloModel(kJaxStyle, "jax.mlir", o);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->names, std::vector<std::string>{"w"});
  EXPECT_EQ(m->frozen, std::vector<std::string>{"scale"});
  const Tensor x = Tokens(0), y = Tokens(2);
  double want = 0, w2 = 0;
  for (int64_t i = 0; i < kV * kC; ++i) w2 += double{w.data<float>()[i]} * w.data<float>()[i];
  want = w2 * (1 + 2 + 3);
  for (int64_t i = 0; i < kB * kT; ++i) want += std::pow(x.data<int32_t>()[i] - y.data<int32_t>()[i], 2);
  absl::StatusOr<std::vector<Tensor>> out = Interpret(m->forward, {w, x, y});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NEAR(out->at(0).data<float>()[0], want, 1e-3);
  // Without a params file the arguments are named argN, and the init rule fills them.
  absl::StatusOr<ImportedModel> plain = ImportStableHloModel(kJaxStyle, "jax.mlir", {});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->names, (std::vector<std::string>{"arg0", "arg1"}));
}

// f64 as exports write it: a scale computed in f64 from constants (folded exactly, then
// rounded to f32 once: no warning), and, with `f64_math`, arithmetic on a parameter in f64
// (computed in f32 with a warning, since no backend has f64).
std::string F64Module(bool f64_math) {
  return absl::StrCat(
      R"(func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<2x4xi64>, %arg2: tensor<2x4xi64>) -> tensor<f32> {
  %c = stablehlo.constant dense<3.000000e+00> : tensor<f64>
  %s = stablehlo.sqrt %c : tensor<f64>
  %sf = stablehlo.convert %s : (tensor<f64>) -> tensor<f32>
)",
      f64_math ? R"(  %x = stablehlo.convert %arg0 : (tensor<4xf32>) -> tensor<4xf64>
  %y = stablehlo.multiply %x, %x : tensor<4xf64>
  %yf = stablehlo.convert %y : (tensor<4xf64>) -> tensor<4xf32>
)"
               : R"(  %yf = stablehlo.multiply %arg0, %arg0 : tensor<4xf32>
)",
      R"(  %b = stablehlo.broadcast_in_dim %sf, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %z = stablehlo.multiply %yf, %b : tensor<4xf32>
  %init = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %r = stablehlo.reduce(%z init: %init) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  return %r : tensor<f32>
}
)");
}

TEST(StableHloModelTest, F64FoldsExactlyAndWhatIsLeftIsComputedInF32WithAWarning) {
  StableHloImportOptions o;
  o.names = {"w"};
  for (bool f64_math : {false, true}) {
    absl::StatusOr<ImportedModel> m = ImportStableHloModel(F64Module(f64_math), "f64.mlir", o);
    ASSERT_TRUE(m.ok()) << m.status();
    for (const Instruction& inst : m->forward.instructions) EXPECT_NE(m->forward.type(inst.result).dtype, DType::kF64);
    if (f64_math) {
      ASSERT_EQ(m->warnings.size(), 1u);
      EXPECT_THAT(m->warnings[0], HasSubstr("f64.mlir: "));
      EXPECT_THAT(m->warnings[0], HasSubstr("f64 values that do not fold to constants are computed in f32"));
    } else {
      EXPECT_TRUE(m->warnings.empty()) << m->warnings[0];
    }
    const Tensor w = Tensor::FromVector<float>({4}, {1, 2, 3, 4});
    absl::StatusOr<std::vector<Tensor>> out = Interpret(m->forward, {w, Tokens(0), Tokens(1)});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_FLOAT_EQ(out->at(0).data<float>()[0], 30.0f * static_cast<float>(std::sqrt(3.0)));
  }
}

// A bf16 export (weights, activations and the loss in bf16, as torch autocast or tt-xla
// print it; a bf16 dense_resource blob) imports with everything computed in f32 and a warning
// saying so; the loss is the f32 program's.
TEST(StableHloModelTest, Bf16IsComputedInF32WithAWarning) {
  // The constant as torch-mlir prints a bf16 weight: a dense_resource blob (3.0 = 0x4040).
  const std::string module = R"(module {
func.func @main(%arg0: tensor<4xbf16>, %arg1: tensor<2x4xi64>, %arg2: tensor<2x4xi64>) -> tensor<bf16> {
  %c = stablehlo.constant dense_resource<torch_tensor_4_torch.bfloat16> : tensor<4xbf16>
  %y = stablehlo.multiply %arg0, %arg0 : tensor<4xbf16>
  %z = stablehlo.multiply %y, %c : tensor<4xbf16>
  %init = stablehlo.constant dense<0.000000e+00> : tensor<bf16>
  %r = stablehlo.reduce(%z init: %init) applies stablehlo.add across dimensions = [0] : (tensor<4xbf16>, tensor<bf16>) -> tensor<bf16>
  return %r : tensor<bf16>
}
}
{-#
  dialect_resources: {
    builtin: {
      torch_tensor_4_torch.bfloat16: "0x020000004040404040404040"
    }
  }
#-}
)";
  StableHloImportOptions o;
  o.names = {"w"};
  absl::StatusOr<ImportedModel> m = ImportStableHloModel(module, "bf16.mlir", o);
  ASSERT_TRUE(m.ok()) << m.status();
  for (const TensorType& t : m->forward.value_types) EXPECT_NE(t.dtype, DType::kBF16);
  EXPECT_EQ(m->types.at(0).dtype, DType::kF32);
  ASSERT_EQ(m->warnings.size(), 1u);
  EXPECT_THAT(m->warnings[0], HasSubstr("bf16.mlir: "));
  EXPECT_THAT(m->warnings[0], HasSubstr("bf16 / f16 values are computed in f32 (first: argument 0"));
  // 1.1 squared times 3, summed with the rest: bf16 arithmetic would round every step.
  const Tensor w = Tensor::FromVector<float>({4}, {1.1f, 2, 3, 4});
  absl::StatusOr<std::vector<Tensor>> out = Interpret(m->forward, {w, Tokens(0), Tokens(1)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FLOAT_EQ(out->at(0).data<float>()[0], 3.0f * (1.1f * 1.1f + 4 + 9 + 16));
}

TEST(StableHloModelTest, OptionErrorsNameTheirKey) {
  const Tensor w = Range({kV, kC}, 0.1f), rope = Range({kC}, 1.0f);
  struct Case {
    std::string what;
    std::function<void(StableHloImportOptions&)> change;
    std::string starts, has;
  };
  const std::vector<Case> cases = {
      {"unknown frozen", [](auto& o) { o.frozen = {"nope"}; }, "model.frozen: 'nope' is not an argument", "wte"},
      {"frozen without value",
       [](auto& o) {
         o.params.reset();
         o.frozen = {"rope"};
       },
       "model.frozen: 'rope' (%arg1", "needs a value"},
      {"frozen data arg", [](auto& o) { o.frozen = {"tokens"}; }, "model.frozen: 'tokens' is a data argument", ""},
      {"names count", [](auto& o) { o.names = {"a"}; }, "model.names: 1 names for the 2 non-data", ""},
      {"names not in file",
       [](auto& o) {
         o.names = {"wte", "rope"};
         o.frozen = {};
       },
       "model.params: toy.safetensors has no tensor 'rope'", "%arg1 'rope'"},
      {"wrong shape",
       [&](auto& o) {
         (*o.params)[0].tensor = Range({kC, kV}, 1.0f);
       },
       "model.params: toy.safetensors: tensor 'wte' is tensor<3x5xf32>", "takes tensor<5x3xf32>"},
      {"file count", [&](auto& o) { o.params->pop_back(); }, "model.params: toy.safetensors has 1 tensors for the 2",
       ""},
      {"data arg dtype",
       [](auto& o) {
         o.data_args = {"w", "tokens"};
       },
       "model.data_args: tokens argument %arg0 'w' tensor<5x3xf32>", "i32 or i64 [B, T]"},
      {"data arg index",
       [](auto& o) {
         o.data_args = {"%arg9", "tokens"};
       },
       "model.data_args: '%arg9': main has 4", ""},
      {"data arg count", [](auto& o) { o.data_args = {"tokens"}; }, "model.data_args: expected two arguments", ""},
      {"function", [](auto& o) { o.function = "loss_fn"; }, "model.function: no function 'loss_fn' in toy.mlir",
       "main"},
  };
  for (const Case& c : cases) {
    StableHloImportOptions o = WithParams(w, rope);
    c.change(o);
    absl::StatusOr<ImportedModel> m = ImportStableHloModel(ToyModule(), "toy.mlir", o);
    ASSERT_FALSE(m.ok()) << c.what;
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << c.what;
    EXPECT_THAT(Message(m.status()), StartsWith(c.starts)) << c.what;
    EXPECT_THAT(Message(m.status()), HasSubstr(c.has)) << c.what;
  }
}

TEST(StableHloModelTest, ModuleErrorsGiveLineAndColumn) {
  // The loss must be the first result: the error points at @main in the text.
  const std::string text = ToyModule(DType::kI64, /*loss_first=*/false);
  absl::StatusOr<ImportedModel> m = ImportStableHloModel(text, "toy.mlir", {});
  ASSERT_FALSE(m.ok());
  const size_t at = text.find("@main(");
  ASSERT_NE(at, std::string::npos);
  int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
  const size_t line_start = text.rfind('\n', at);
  const int col = static_cast<int>(at - (line_start == std::string::npos ? 0 : line_start + 1)) + 1;
  EXPECT_THAT(Message(m.status()), StartsWith(absl::StrCat("toy.mlir:", line, ":", col,
                                                           ": function 'main' returns "
                                                           "tensor<5xf32> first")));
  // Text the parser refuses keeps ParseModule's position.
  absl::StatusOr<ImportedModel> bad = ImportStableHloModel(
      "func.func @main(%arg0: tensor<2xf32>) -> tensor<f32> {\n"
      "  %0 = stablehlo.frobnicate %arg0 : tensor<2xf32>\n}\n",
      "bad.mlir", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(Message(bad.status()), StartsWith("bad.mlir:2:"));
  // A trainable argument that is not f32.
  FunctionBuilder b("main");
  ValueId k = b.Parameter(TensorType{DType::kI32, {3}}, "k");
  ValueId x = b.Parameter(TensorType{DType::kI32, {1, 2}}, "x");
  ValueId y = b.Parameter(TensorType{DType::kI32, {1, 2}}, "y");
  ValueId s = b.Convert(b.Add(b.ReduceSum(k, {0}), b.ReduceSum(b.Add(x, y), {0, 1})), DType::kF32);
  b.Return({s}, {"loss"});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<ImportedModel> ints = ImportStableHloModel(PrintFunction(*f, TextForm::kPretty), "int.mlir", {});
  ASSERT_FALSE(ints.ok());
  EXPECT_THAT(Message(ints.status()), HasSubstr("argument %arg0 'k' tensor<3xi32> is not f32"));
}

}  // namespace
}  // namespace pcp
