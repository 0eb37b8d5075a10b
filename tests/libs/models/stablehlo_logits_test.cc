// model.logits (stablehlo_model.h): a forward-only export's loss formed from its logits, and the
// sampling function of an import, against values computed here by hand from a toy model
// logits[b, t, v] = sum_c w[tokens[b, t], c] * rope[c] * w[v, c]; plus the option's errors.
#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/text.h"
#include "pcp/models/stablehlo_model.h"

namespace pcp {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kV = 5, kC = 3, kB = 2, kT = 4;

// logits(w: f32[V, C], rope: f32[C] (frozen), tokens: i64[B, T]) -> f32[B, T, V] ([B*T, V] with
// `flat`), and main(w, rope, tokens, targets) -> a loss that is not the cross-entropy (sum of
// the logits), so a test can tell which loss it got.
std::string ToyModule(bool flat = false) {
  Module m;
  for (const char* name : {"logits", "main"}) {
    const bool loss = std::string(name) == "main";
    FunctionBuilder b(name);
    ValueId w = b.Parameter(TensorType{DType::kF32, {kV, kC}}, "w");
    ValueId rope = b.Parameter(TensorType{DType::kF32, {kC}}, "rope");
    ValueId tokens = b.Parameter(TensorType{DType::kI64, {kB, kT}}, "tokens");
    if (loss) b.Parameter(TensorType{DType::kI64, {kB, kT}}, "targets");
    ValueId x = b.Mul(b.Gather(w, tokens), b.BroadcastInDim(rope, {kB, kT, kC}, {2}));  // [B, T, C]
    DotDims d;
    d.lhs_contract = {2};
    d.rhs_contract = {1};
    ValueId logits = b.DotGeneral(x, w, d);  // [B, T, V]
    if (loss) {
      b.Return({b.ReduceSum(logits, {0, 1, 2})}, {"loss"});
    } else {
      b.Return({flat ? b.Reshape(logits, {kB * kT, kV}) : logits}, {"logits"});
    }
    absl::StatusOr<Function> f = b.Build();
    EXPECT_TRUE(f.ok()) << f.status();
    m.functions.push_back(*f);
  }
  return PrintModule(m, TextForm::kPretty);
}

Tensor W() {
  std::vector<float> v(kV * kC);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.3f * std::sin(static_cast<float>(i + 1));
  return Tensor::FromVector<float>({kV, kC}, v);
}
Tensor Rope() { return Tensor::FromVector<float>({kC}, {1.0f, -0.5f, 2.0f}); }

int32_t Token(int64_t b, int64_t t, int offset) { return static_cast<int32_t>((3 * (b * kT + t) + offset) % kV); }
Tensor Tokens(int offset) {
  std::vector<int32_t> v;
  for (int64_t b = 0; b < kB; ++b) {
    for (int64_t t = 0; t < kT; ++t) v.push_back(Token(b, t, offset));
  }
  return Tensor::FromVector<int32_t>({kB, kT}, v);
}

double Logit(const Tensor& w, const Tensor& rope, int32_t token, int64_t v) {
  double s = 0;
  for (int64_t c = 0; c < kC; ++c) {
    s += double{w.data<float>()[token * kC + c]} * rope.data<float>()[c] * w.data<float>()[v * kC + c];
  }
  return s;
}

StableHloImportOptions Options(const std::string& function, const std::string& logits) {
  StableHloImportOptions o;
  o.function = function;
  o.logits = logits;
  o.params = std::vector<NamedTensor>{{"w", W()}, {"rope", Rope()}};
  o.params_file = "toy.safetensors";
  o.frozen = {"rope"};
  return o;
}

TEST(StableHloLogitsTest, ForwardOnlyExportTrainsOnTheMeanCrossEntropyOfItsLogits) {
  for (bool flat : {false, true}) {
    absl::StatusOr<ImportedModel> m = ImportStableHloModel(ToyModule(flat), "toy.mlir", Options("", "logits"));
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(m->forward.param_names, (std::vector<std::string>{"w", "tokens", "targets"}));
    const Tensor x = Tokens(0), y = Tokens(2);
    absl::StatusOr<std::vector<Tensor>> out = Interpret(m->forward, {W(), x, y});
    ASSERT_TRUE(out.ok()) << out.status();
    double want = 0;
    for (int64_t b = 0; b < kB; ++b) {
      for (int64_t t = 0; t < kT; ++t) {
        double sum = 0;
        for (int64_t v = 0; v < kV; ++v) sum += std::exp(Logit(W(), Rope(), Token(b, t, 0), v));
        want += std::log(sum) - Logit(W(), Rope(), Token(b, t, 0), Token(b, t, 2));
      }
    }
    want /= kB * kT;
    EXPECT_NEAR(out->at(0).data<float>()[0], want, 1e-5) << (flat ? "[B*T, V] logits" : "[B, T, V] logits");
    ASSERT_TRUE(m->logits.has_value());
  }
}

TEST(StableHloLogitsTest, SampleLogitsAreTheExportsLogitsOfOneSequence) {
  absl::StatusOr<ImportedModel> m = ImportStableHloModel(ToyModule(), "toy.mlir", Options("main", "logits"));
  ASSERT_TRUE(m.ok()) << m.status();
  // The module's own loss stays the loss (the sum of the logits).
  absl::StatusOr<std::vector<Tensor>> loss = Interpret(m->forward, {W(), Tokens(0), Tokens(1)});
  ASSERT_TRUE(loss.ok()) << loss.status();
  double sum = 0;
  for (int64_t b = 0; b < kB; ++b) {
    for (int64_t t = 0; t < kT; ++t) {
      for (int64_t v = 0; v < kV; ++v) sum += Logit(W(), Rope(), Token(b, t, 0), v);
    }
  }
  EXPECT_NEAR(loss->at(0).data<float>()[0], sum, 1e-4);

  ASSERT_TRUE(m->logits.has_value());
  const Function& s = *m->logits;
  EXPECT_EQ(s.param_names, (std::vector<std::string>{"w", "tokens"}));
  EXPECT_EQ(s.type(s.params[1]), (TensorType{DType::kI32, {1, kT}}));
  ASSERT_EQ(s.results.size(), 1u);
  EXPECT_EQ(s.type(s.results[0]), (TensorType{DType::kF32, {1, kT, kV}}));
  const Tensor seq = Tensor::FromVector<int32_t>({1, kT}, {4, 0, 2, 1});
  absl::StatusOr<std::vector<Tensor>> out = Interpret(s, {W(), seq});
  ASSERT_TRUE(out.ok()) << out.status();
  for (int64_t t = 0; t < kT; ++t) {
    for (int64_t v = 0; v < kV; ++v) {
      EXPECT_NEAR(out->at(0).data<float>()[t * kV + v], Logit(W(), Rope(), seq.data<int32_t>()[t], v), 1e-5)
          << "t " << t << " v " << v;
    }
  }
}

TEST(StableHloLogitsTest, ErrorsNameTheKey) {
  struct Bad {
    std::string function, logits, message;
  };
  const std::vector<Bad> bad = {
      {"", "", "model.function: empty: name the loss function, or give model.logits"},
      {"main", "forward", "model.logits: no function 'forward' in toy.mlir; it has: logits, main"},
      // main returns a scalar, not logits.
      {"", "main", "function 'main' returns tensor<f32> first; logits must be f32 [B, T, V] or [B*T, V]"},
  };
  for (const Bad& c : bad) {
    absl::StatusOr<ImportedModel> m = ImportStableHloModel(ToyModule(), "toy.mlir", Options(c.function, c.logits));
    ASSERT_FALSE(m.ok()) << c.message;
    EXPECT_THAT(std::string(m.status().message()), HasSubstr(c.message));
  }
  // A logits function whose arguments are not the loss function's less the targets.
  absl::StatusOr<Module> module = ParseModule(ToyModule(), "toy.mlir");
  ASSERT_TRUE(module.ok()) << module.status();
  FunctionBuilder b("logits2");
  ValueId w = b.Parameter(TensorType{DType::kF32, {kV, kC}}, "w");
  ValueId tokens = b.Parameter(TensorType{DType::kI64, {kB, kT}}, "tokens");
  b.Return({b.Gather(w, tokens)});
  absl::StatusOr<Function> logits2 = b.Build();
  ASSERT_TRUE(logits2.ok()) << logits2.status();
  module->functions.push_back(*logits2);
  absl::StatusOr<ImportedModel> m =
      ImportStableHloModel(PrintModule(*module, TextForm::kPretty), "toy.mlir", Options("main", "logits2"));
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()),
              HasSubstr("model.logits: function 'logits2' takes 2 arguments; it must take the loss function's 4 "
                        "arguments without the targets, in order"));
}

}  // namespace
}  // namespace pcp
