// GPT builder: parameter names, shapes and counts, argument errors, verified IR, forward
// properties that need no reference (initial loss ~ ln V, causality, logits function agrees
// with the forward) and nanoGPT's initialisation statistics. Numerical parity with PyTorch is
// gpt_torch_parity_test.cc.
#include "pcp/models/gpt.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/autodiff/vjp.h"
#include "pcp/testing/tensor_testing.h"

namespace pcp {
namespace {

using ::pcp::testing::RandomTensor;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

GPTConfig Small(bool bias = true) {
  return GPTConfig{.vocab_size = 11, .block_size = 8, .n_layer = 2, .n_head = 2, .n_embd = 8, .bias = bias};
}

std::vector<std::string> Names(const std::vector<GptParamSpec>& specs) {
  std::vector<std::string> names;
  for (const GptParamSpec& s : specs) names.push_back(s.name);
  return names;
}

TEST(GptParamSpecsTest, NanoGptNamesAndPyTorchLayouts) {
  GPTConfig c{.vocab_size = 65, .block_size = 16, .n_layer = 1, .n_head = 4, .n_embd = 32};
  absl::StatusOr<std::vector<GptParamSpec>> specs = GptParamSpecs(c);
  ASSERT_TRUE(specs.ok()) << specs.status();
  EXPECT_THAT(Names(*specs),
              ElementsAre("transformer.wte.weight", "transformer.wpe.weight", "transformer.h.0.ln_1.weight",
                          "transformer.h.0.ln_1.bias", "transformer.h.0.attn.c_attn.weight",
                          "transformer.h.0.attn.c_attn.bias", "transformer.h.0.attn.c_proj.weight",
                          "transformer.h.0.attn.c_proj.bias", "transformer.h.0.ln_2.weight",
                          "transformer.h.0.ln_2.bias", "transformer.h.0.mlp.c_fc.weight",
                          "transformer.h.0.mlp.c_fc.bias", "transformer.h.0.mlp.c_proj.weight",
                          "transformer.h.0.mlp.c_proj.bias", "transformer.ln_f.weight", "transformer.ln_f.bias"));
  std::vector<Shape> shapes;
  for (const GptParamSpec& s : *specs) {
    EXPECT_EQ(s.type.dtype, DType::kF32) << s.name;
    shapes.push_back(s.type.shape);
  }
  EXPECT_THAT(shapes, ElementsAre(Shape{65, 32}, Shape{16, 32}, Shape{32}, Shape{32}, Shape{96, 32}, Shape{96},
                                  Shape{32, 32}, Shape{32}, Shape{32}, Shape{32}, Shape{128, 32}, Shape{128},
                                  Shape{32, 128}, Shape{32}, Shape{32}, Shape{32}));
}

TEST(GptParamSpecsTest, NoBiasDropsEveryBias) {
  GPTConfig c = Small(/*bias=*/false);
  absl::StatusOr<std::vector<GptParamSpec>> specs = GptParamSpecs(c);
  ASSERT_TRUE(specs.ok()) << specs.status();
  EXPECT_EQ(specs->size(), 2u + 6u * 2u + 1u);
  for (const GptParamSpec& s : *specs) EXPECT_THAT(s.name, ::testing::EndsWith(".weight"));
  c.bias = true;
  EXPECT_EQ(GptParamSpecs(c)->size(), 2u + 12u * 2u + 2u);
}

TEST(GptNumParamsTest, MatchesNanoGptReport) {
  // nanoGPT's "CPU" config: "number of parameters: 0.80M" (position embeddings excluded).
  // Per layer 12 C^2 + 13 C = 198272 with C = 128; 4 layers + wte 65x128 + ln_f 2x128.
  GPTConfig c{.vocab_size = 65, .block_size = 64, .n_layer = 4, .n_head = 4, .n_embd = 128};
  EXPECT_EQ(*GptNumParams(c), 801664);
  EXPECT_EQ(*GptNumParams(c, /*non_embedding=*/false), 801664 + 64 * 128);
  c.bias = false;  // per layer 12 C^2 + 2 C; ln_f weight only
  EXPECT_EQ(*GptNumParams(c), 4 * (12 * 128 * 128 + 2 * 128) + 65 * 128 + 128);
  // GPT-2 small (124M with the 50304-padded vocabulary nanoGPT trains it with).
  GPTConfig gpt2{.vocab_size = 50304, .block_size = 1024, .n_layer = 12, .n_head = 12, .n_embd = 768};
  EXPECT_EQ(*GptNumParams(gpt2, /*non_embedding=*/false), 124475904);
}

TEST(GptBuildTest, RejectsBadConfigAndSizes) {
  GPTConfig bad = Small();
  bad.n_head = 3;  // 8 % 3 != 0
  for (const absl::Status& s : {BuildGptForwardLoss(bad, 1, 4).status(), BuildGptLogits(bad, 1, 4).status(),
                                InitGptParams(bad, 1).status(), GptNumParams(bad).status()}) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("divisible by n_head"));
  }
  absl::Status too_long = BuildGptForwardLoss(Small(), 2, 9).status();  // block_size 8
  EXPECT_EQ(too_long.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(too_long.message(), HasSubstr("block_len"));
  EXPECT_EQ(BuildGptLogits(Small(), 2, 9).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildGptForwardLoss(Small(), 0, 4).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildGptForwardLoss(Small(), 2, 0).status().code(), absl::StatusCode::kInvalidArgument);
  GPTConfig zero = Small();
  zero.vocab_size = 0;
  EXPECT_EQ(BuildGptForwardLoss(zero, 2, 4).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GptBuildTest, ForwardLossSignatureAndVerify) {
  for (bool bias : {true, false}) {
    for (bool logits : {false, true}) {
      const GPTConfig c = Small(bias);
      absl::StatusOr<Function> f = BuildGptForwardLoss(c, 3, 5, {.return_logits = logits});
      ASSERT_TRUE(f.ok()) << f.status();
      EXPECT_TRUE(Verify(*f).ok()) << Verify(*f);
      EXPECT_EQ(f->name, "forward_loss");
      std::vector<GptParamSpec> specs = *GptParamSpecs(c);
      ASSERT_EQ(f->params.size(), specs.size() + 2);
      for (size_t i = 0; i < specs.size(); ++i) {
        EXPECT_EQ(f->param_names[i], specs[i].name);
        EXPECT_EQ(f->type(f->params[i]), specs[i].type);
      }
      EXPECT_EQ(f->param_names[specs.size()], "tokens");
      EXPECT_EQ(f->param_names[specs.size() + 1], "targets");
      EXPECT_EQ(f->type(f->params[specs.size()]), (TensorType{DType::kI32, {3, 5}}));
      EXPECT_EQ(f->type(f->params[specs.size() + 1]), (TensorType{DType::kI32, {3, 5}}));
      ASSERT_EQ(f->results.size(), logits ? 2u : 1u);
      EXPECT_EQ(f->result_names[0], "loss");
      EXPECT_EQ(f->type(f->results[0]), (TensorType{DType::kF32, {}}));
      if (logits) {
        EXPECT_EQ(f->result_names[1], "logits");
        EXPECT_EQ(f->type(f->results[1]), (TensorType{DType::kF32, {3, 5, 11}}));
      }
    }
  }
  absl::StatusOr<Function> g = BuildGptLogits(Small(), 2, 8);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(Verify(*g).ok()) << Verify(*g);
  EXPECT_EQ(g->name, "logits");
  EXPECT_EQ(g->param_names.back(), "tokens");
  ASSERT_EQ(g->results.size(), 1u);
  EXPECT_EQ(g->type(g->results[0]), (TensorType{DType::kF32, {2, 8, 11}}));
}

// The attention softmax and the cross-entropy's log-softmax are differentiated without
// their max (autodiff's shift_invariance.h): the gradient function adds no compare (reduce
// max's VJP is what would).
TEST(GptBuildTest, GradientSkipsTheSoftmaxMaxima) {
  absl::StatusOr<Function> f = BuildGptForwardLoss(Small(), 2, 8);
  ASSERT_TRUE(f.ok()) << f.status();
  std::vector<int> wrt(f->params.size() - 2);
  for (size_t i = 0; i < wrt.size(); ++i) wrt[i] = static_cast<int>(i);
  absl::StatusOr<Function> g = BuildGradientFunction(*f, wrt);
  ASSERT_TRUE(g.ok()) << g.status();
  auto count = [](const Function& fn, Op op) {
    return std::count_if(fn.instructions.begin(), fn.instructions.end(),
                         [op](const Instruction& i) { return i.op == op; });
  };
  EXPECT_EQ(count(*g, Op::kCompare), count(*f, Op::kCompare));
}

std::vector<Tensor> Args(const std::vector<NamedTensor>& params, std::vector<Tensor> data) {
  std::vector<Tensor> args;
  for (const NamedTensor& p : params) args.push_back(p.tensor);
  for (Tensor& t : data) args.push_back(std::move(t));
  return args;
}

TEST(GptForwardTest, InitialLossIsNearLogVocab) {
  // nanoGPT's tiny init makes the logits nearly uniform: loss ~ ln(V).
  const GPTConfig c{.vocab_size = 65, .block_size = 16, .n_layer = 2, .n_head = 4, .n_embd = 32};
  absl::StatusOr<Function> f = BuildGptForwardLoss(c, 2, 16);
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<std::vector<NamedTensor>> params = InitGptParams(c, 1);
  ASSERT_TRUE(params.ok()) << params.status();
  const TensorType ids{DType::kI32, {2, 16}};
  absl::StatusOr<std::vector<Tensor>> out =
      Interpret(*f, Args(*params, {RandomTensor(ids, 1, 0, 65), RandomTensor(ids, 2, 0, 65)}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NEAR(out->at(0).data<float>()[0], std::log(65.0), 0.05);
}

TEST(GptForwardTest, LogitsAgreeWithForwardAndAreCausal) {
  const GPTConfig c = Small();
  const int64_t B = 2, T = 8, V = c.vocab_size;
  absl::StatusOr<Function> fwd = BuildGptForwardLoss(c, B, T, {.return_logits = true});
  absl::StatusOr<Function> logits_fn = BuildGptLogits(c, B, T);
  ASSERT_TRUE(fwd.ok() && logits_fn.ok());
  // Larger weights than nanoGPT's init so every position attends non-uniformly.
  std::vector<NamedTensor> params = *InitGptParams(c, 3);
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].tensor.rank() == 2)
      params[i].tensor = RandomTensor({DType::kF32, params[i].tensor.shape()}, i, -0.5, 0.5);
  }
  const TensorType ids{DType::kI32, {B, T}};
  Tensor tokens = RandomTensor(ids, 5, 0, V), targets = RandomTensor(ids, 6, 0, V);
  absl::StatusOr<std::vector<Tensor>> a = Interpret(*fwd, Args(params, {tokens, targets}));
  absl::StatusOr<std::vector<Tensor>> b = Interpret(*logits_fn, Args(params, {tokens}));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(BitwiseEqual(a->at(1), b->at(0)));

  // The loss is the mean of -log softmax(logits)[target], recomputed here in double.
  const float* lg = b->at(0).data<float>();
  double sum = 0.0;
  for (int64_t p = 0; p < B * T; ++p) {
    double mx = -1e30, z = 0.0;
    for (int64_t v = 0; v < V; ++v) mx = std::max(mx, static_cast<double>(lg[p * V + v]));
    for (int64_t v = 0; v < V; ++v) z += std::exp(lg[p * V + v] - mx);
    sum -= lg[p * V + targets.data<int32_t>()[p]] - mx - std::log(z);
  }
  EXPECT_NEAR(a->at(0).data<float>()[0], sum / static_cast<double>(B * T), 1e-5);

  // Changing the token at position 5 leaves the logits of positions 0..4 exactly unchanged
  // and changes those of 5..7.
  Tensor changed = tokens.Clone();
  for (int64_t bi = 0; bi < B; ++bi) {
    int32_t& t = changed.data<int32_t>()[bi * T + 5];
    t = (t + 1) % static_cast<int32_t>(V);
  }
  absl::StatusOr<std::vector<Tensor>> c2 = Interpret(*logits_fn, Args(params, {changed}));
  ASSERT_TRUE(c2.ok()) << c2.status();
  const float* lc = c2->at(0).data<float>();
  for (int64_t bi = 0; bi < B; ++bi) {
    for (int64_t t = 0; t < T; ++t) {
      bool same = true;
      for (int64_t v = 0; v < V; ++v) same &= lg[(bi * T + t) * V + v] == lc[(bi * T + t) * V + v];
      EXPECT_EQ(same, t < 5) << "batch " << bi << " position " << t;
    }
  }
}

double Stddev(const Tensor& t) {
  const float* p = t.data<float>();
  double s = 0.0, s2 = 0.0;
  const double n = static_cast<double>(t.num_elements());
  for (int64_t i = 0; i < t.num_elements(); ++i) s += p[i], s2 += static_cast<double>(p[i]) * p[i];
  return std::sqrt(s2 / n - (s / n) * (s / n));
}

TEST(InitGptParamsTest, NanoGptStatistics) {
  const GPTConfig c{.vocab_size = 65, .block_size = 64, .n_layer = 4, .n_head = 4, .n_embd = 128};
  absl::StatusOr<std::vector<NamedTensor>> params = InitGptParams(c, 1337);
  ASSERT_TRUE(params.ok()) << params.status();
  std::vector<GptParamSpec> specs = *GptParamSpecs(c);
  ASSERT_EQ(params->size(), specs.size());
  const double proj_std = 0.02 / std::sqrt(8.0);
  for (size_t i = 0; i < specs.size(); ++i) {
    const NamedTensor& p = (*params)[i];
    ASSERT_EQ(p.name, specs[i].name);
    ASSERT_EQ(p.tensor.dtype(), DType::kF32);
    ASSERT_EQ(p.tensor.shape(), specs[i].type.shape);
    std::vector<float> v = p.tensor.ToVector<float>();
    if (p.name.ends_with("c_proj.weight")) {
      EXPECT_NEAR(Stddev(p.tensor), proj_std, 0.05 * proj_std) << p.name;
    } else if (p.tensor.rank() == 2) {
      EXPECT_NEAR(Stddev(p.tensor), 0.02, 0.05 * 0.02) << p.name;
    } else if (p.name.ends_with(".weight")) {
      EXPECT_THAT(v, ::testing::Each(1.0f)) << p.name;
    } else {
      EXPECT_THAT(v, ::testing::Each(0.0f)) << p.name;
    }
  }
  // The whole draw is close to N(0, sigma): mean ~0 and ~68% within one sigma (wte: 8320 values).
  const Tensor& wte = (*params)[0].tensor;
  double mean = 0.0;
  int within = 0;
  for (float x : wte.ToVector<float>()) mean += x, within += std::abs(x) < 0.02f;
  EXPECT_NEAR(mean / 8320.0, 0.0, 0.001);
  EXPECT_NEAR(within / 8320.0, 0.6827, 0.02);
}

TEST(InitGptParamsTest, SeededAndBitReproducible) {
  const GPTConfig c = Small();
  std::vector<NamedTensor> a = *InitGptParams(c, 1337), b = *InitGptParams(c, 1337), d = *InitGptParams(c, 1338);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(BitwiseEqual(a[i].tensor, b[i].tensor)) << a[i].name;
  EXPECT_FALSE(BitwiseEqual(a[0].tensor, d[0].tensor));
  // The documented generator (SplitMix64 + Box-Muller), evaluated independently in Python:
  // the first pair of normals for seed 1337, times 0.02, rounded to f32.
  EXPECT_EQ(a[0].tensor.data<float>()[0], 0.004575659055262804f);
  EXPECT_EQ(a[0].tensor.data<float>()[1], -0.015783192589879036f);
}

// The recipe a worker draws θ₀ from (pcp/tensor/init_recipe.h) says what InitGptParams draws.
TEST(InitGptParamsTest, RecipeDrawsTheSameBits) {
  const GPTConfig c = Small();
  absl::StatusOr<InitRecipe> recipe = GptInitRecipe(c, 1337);
  ASSERT_TRUE(recipe.ok()) << recipe.status();
  std::vector<NamedTensor> params = *InitGptParams(c, 1337);
  ASSERT_EQ(recipe->params.size(), params.size());
  std::vector<Shape> shapes;
  for (size_t i = 0; i < params.size(); ++i) {
    shapes.push_back(params[i].tensor.shape());
    const std::string& name = params[i].name;
    const ParamInit& rule = recipe->params[i];
    if (name.ends_with("c_proj.weight")) {
      EXPECT_EQ(rule, ParamInit::Normal(0.02 / std::sqrt(2.0 * static_cast<double>(c.n_layer)))) << name;
    } else if (params[i].tensor.rank() == 2) {
      EXPECT_EQ(rule, ParamInit::Normal(0.02)) << name;
    } else {
      EXPECT_EQ(rule, name.ends_with(".weight") ? ParamInit::Ones() : ParamInit::Zeros()) << name;
    }
  }
  absl::StatusOr<std::vector<Tensor>> drawn = DrawInit(*recipe, shapes);
  ASSERT_TRUE(drawn.ok()) << drawn.status();
  for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(BitwiseEqual((*drawn)[i], params[i].tensor)) << params[i].name;
}

}  // namespace
}  // namespace pcp
