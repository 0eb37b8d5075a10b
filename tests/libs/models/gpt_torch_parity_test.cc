// The key acceptance test of the model stack: PCP's GPT (IR builder + autodiff + train step,
// run by the reference interpreter and by the CPU backend) against an independent PyTorch
// model of the nanoGPT architecture (gpt_reference.py), which loads PCP's parameters with
// load_state_dict(strict=True), so the names and layouts are checked too. The reference computes in float64 (a tight oracle); PCP
// runs in f32. Loss, every gradient and every parameter after 3 clipped AdamW steps must agree
// to a relative error of 1e-4 per tensor (max |a - b| / max |b|).
#include <cmath>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "function_runners.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/train_step.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/autodiff/vjp.h"
#include "pcp/models/gpt.h"
#include "pcp/testing/tensor_testing.h"
#include "torch_oracle.h"

namespace pcp {
namespace {

using ::pcp::testing::ErrorLog;
using ::pcp::testing::kPython;
using ::pcp::testing::PythonCanImport;
using ::pcp::testing::RandomTensor;
using ::pcp::testing::Runners;
using ::pcp::testing::RunPythonOracle;

constexpr double kUpdateTolerance = 1e-3;
constexpr int64_t kBatch = 3;
constexpr int64_t kLen = 16;

GPTConfig TestConfig(bool bias) {
  return GPTConfig{.vocab_size = 65, .block_size = 16, .n_layer = 2, .n_head = 4, .n_embd = 32, .bias = bias};
}

// Parameters far from nanoGPT's near-zero init, so attention is not uniform, LayerNorm gains
// and biases matter, and every gradient is non-trivial.
std::vector<NamedTensor> TestParams(const GPTConfig& config, uint64_t seed) {
  absl::StatusOr<std::vector<GptParamSpec>> specs = GptParamSpecs(config);
  EXPECT_TRUE(specs.ok()) << specs.status();
  std::vector<NamedTensor> params;
  for (const GptParamSpec& s : *specs) {
    Tensor t;
    const uint64_t s_seed = seed * 1000 + params.size();
    if (s.type.rank() == 2) {
      t = RandomTensor(s.type, s_seed, -0.3, 0.3);
    } else if (s.name.ends_with(".weight")) {
      t = RandomTensor(s.type, s_seed, 0.8, 1.2);  // LayerNorm gain
    } else {
      t = RandomTensor(s.type, s_seed, -0.1, 0.1);
    }
    params.push_back({s.name, t});
  }
  return params;
}

Tensor Tokens(uint64_t seed) { return RandomTensor({DType::kI32, {kBatch, kLen}}, seed, 0, 65); }

std::string ConfigJson(const GPTConfig& c, const std::string& extra = "") {
  return absl::StrCat("{\"vocab_size\": ", c.vocab_size, ", \"block_size\": ", c.block_size,
                      ", \"n_layer\": ", c.n_layer, ", \"n_head\": ", c.n_head, ", \"n_embd\": ", c.n_embd,
                      ", \"bias\": ", c.bias ? "true" : "false", ", \"dtype\": \"float64\"", extra, "}");
}

// Runs gpt_reference.py in `mode` on `inputs`; returns its outputs.
absl::StatusOr<SafetensorsContents> RunReference(const std::string& mode, const std::vector<NamedTensor>& inputs,
                                                 const std::string& config_json) {
  const std::string script = std::string(PCP_SOURCE_DIR) + "/tests/libs/models/gpt_reference.py";
  return RunPythonOracle(script, mode, inputs, absl::StrCat("'", config_json, "'"));
}

class GptTorchParityTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (!PythonCanImport("torch")) GTEST_SKIP() << kPython << " cannot import torch (install python3-torch)";
  }
};

TEST_P(GptTorchParityTest, LossAndEveryGradient) {
  const GPTConfig config = TestConfig(GetParam());
  absl::StatusOr<Function> forward = BuildGptForwardLoss(config, kBatch, kLen);
  ASSERT_TRUE(forward.ok()) << forward.status();
  const int n = NumModelParams(static_cast<int>(forward->params.size()));
  std::vector<int> wrt(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) wrt[static_cast<size_t>(i)] = i;
  absl::StatusOr<Function> grad_fn = BuildGradientFunction(*forward, wrt);
  ASSERT_TRUE(grad_fn.ok()) << grad_fn.status();
  ASSERT_TRUE(Verify(*grad_fn).ok()) << Verify(*grad_fn);

  std::vector<NamedTensor> inputs = TestParams(config, 7);
  std::vector<Tensor> args;
  for (const NamedTensor& p : inputs) args.push_back(p.tensor);
  const Tensor tokens = Tokens(101), targets = Tokens(102);
  args.push_back(tokens);
  args.push_back(targets);
  inputs.push_back({"tokens", tokens});
  inputs.push_back({"targets", targets});

  absl::StatusOr<SafetensorsContents> ref = RunReference("grad", inputs, ConfigJson(config));
  ASSERT_TRUE(ref.ok()) << ref.status();

  for (const auto& [runner_name, run] : Runners()) {
    SCOPED_TRACE(runner_name);
    absl::StatusOr<std::vector<Tensor>> ours = run(*grad_fn, args);
    ASSERT_TRUE(ours.ok()) << ours.status();
    ASSERT_EQ(ours->size(), static_cast<size_t>(n) + 1);
    ErrorLog log;
    log.Check("loss", (*ours)[0], ref->Find("loss"));
    for (int i = 0; i < n; ++i) {
      const std::string name = grad_fn->result_names[static_cast<size_t>(i) + 1];
      ASSERT_EQ(name, "grad." + forward->param_names[static_cast<size_t>(i)]);
      log.Check(name, (*ours)[static_cast<size_t>(i) + 1], ref->Find(name));
    }
    std::cout << "[parity] bias=" << config.bias << " " << runner_name << ": loss " << (*ours)[0].data<float>()[0]
              << " vs torch " << ref->Find("loss")->data<float>()[0] << "; max relative error over loss and " << n
              << " gradients " << log.max_error << " (" << log.worst << ")\n";
  }
}

TEST_P(GptTorchParityTest, ThreeClippedAdamWSteps) {
  const GPTConfig config = TestConfig(GetParam());
  // With biases, the key part of c_attn.bias has an exactly zero gradient (softmax is invariant
  // to adding q.b_k to every score of a row): float64 torch sees ~1e-17, f32 sees rounding
  // noise ~1e-10, and Adam's per-element normalisation turns noise into steps of
  // lr * |noise| / (|noise| + eps). eps = 1e-6 bounds those to ~1e-4 lr; without biases the
  // default eps = 1e-8 is used.
  const AdamWConfig opt{
      .beta1 = 0.9, .beta2 = 0.95, .eps = config.bias ? 1e-6 : 1e-8, .weight_decay = 0.1, .grad_clip = 0.5};
  const std::vector<double> lrs = {1e-3, 2e-3, 5e-4};  // a schedule: lr is fed per step
  constexpr int kSteps = 3;
  absl::StatusOr<Function> forward = BuildGptForwardLoss(config, kBatch, kLen);
  ASSERT_TRUE(forward.ok()) << forward.status();
  absl::StatusOr<Function> step_fn = BuildTrainStep(*forward, opt);
  ASSERT_TRUE(step_fn.ok()) << step_fn.status();
  ASSERT_TRUE(Verify(*step_fn).ok()) << Verify(*step_fn);
  const size_t n = static_cast<size_t>(NumModelParams(static_cast<int>(forward->params.size())));

  std::vector<NamedTensor> inputs = TestParams(config, 11);
  for (int k = 0; k < kSteps; ++k) {
    inputs.push_back({absl::StrCat("tokens.", k), Tokens(200 + k)});
    inputs.push_back({absl::StrCat("targets.", k), Tokens(300 + k)});
  }
  const std::string extra =
      absl::StrCat(", \"steps\": ", kSteps, ", \"lrs\": [", absl::StrJoin(lrs, ", "), "], \"beta1\": ", opt.beta1,
                   ", \"beta2\": ", opt.beta2, ", \"eps\": ", opt.eps, ", \"weight_decay\": ", opt.weight_decay,
                   ", \"grad_clip\": ", opt.grad_clip);
  absl::StatusOr<SafetensorsContents> ref = RunReference("train", inputs, ConfigJson(config, extra));
  ASSERT_TRUE(ref.ok()) << ref.status();
  for (int k = 0; k < kSteps; ++k) {
    const Tensor* norm = ref->Find(absl::StrCat("grad_norm.", k));
    ASSERT_NE(norm, nullptr);
    EXPECT_GT(norm->data<float>()[0], opt.grad_clip) << "clipping must be active at step " << k;
  }

  for (const auto& [runner_name, run] : Runners()) {
    SCOPED_TRACE(runner_name);
    std::vector<Tensor> params, m, v;
    for (size_t i = 0; i < n; ++i) {
      params.push_back(inputs[i].tensor);
      m.emplace_back(DType::kF32, inputs[i].tensor.shape());
      v.emplace_back(DType::kF32, inputs[i].tensor.shape());
    }
    ErrorLog log;
    for (int k = 0; k < kSteps; ++k) {
      std::vector<Tensor> args = params;
      args.insert(args.end(), m.begin(), m.end());
      args.insert(args.end(), v.begin(), v.end());
      args.push_back(Tensor::Scalar<float>(static_cast<float>(k + 1)));
      args.push_back(Tensor::Scalar<float>(static_cast<float>(lrs[static_cast<size_t>(k)])));
      args.push_back(inputs[n + 2 * static_cast<size_t>(k)].tensor);      // tokens.k
      args.push_back(inputs[n + 2 * static_cast<size_t>(k) + 1].tensor);  // targets.k
      absl::StatusOr<std::vector<Tensor>> out = run(*step_fn, args);
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ(out->size(), 3 * n + 1);
      for (size_t i = 0; i < n; ++i) {
        params[i] = (*out)[i];
        m[i] = (*out)[n + i];
        v[i] = (*out)[2 * n + i];
      }
      log.Check(absl::StrCat("loss.", k), (*out)[3 * n], ref->Find(absl::StrCat("loss.", k)));
    }
    for (size_t i = 0; i < n; ++i) log.Check(inputs[i].name, params[i], ref->Find(inputs[i].name));
    // The updates themselves (p_3 - p_0), relative to their own scale: the parameters move by
    // only ~1% of their scale in 3 steps, so this is the sharper check of the AdamW arithmetic
    // (a missing weight decay would be ~1% of the update). Looser than the default 1e-4 because Adam
    // divides each element by its own gradient scale, amplifying f32 rounding in elements whose
    // gradient is far below the tensor's largest. The key bias (see above), whose true update
    // is 0 and whose steps on both sides are rounding noise, is left out of this check only.
    ErrorLog delta_log{.tolerance = kUpdateTolerance};
    for (size_t i = 0; i < n; ++i) {
      const Tensor& before = inputs[i].tensor;
      const Tensor* after = ref->Find(inputs[i].name);
      ASSERT_NE(after, nullptr);
      const bool key_bias = inputs[i].name.ends_with("attn.c_attn.bias");
      Tensor ours(DType::kF32, before.shape()), theirs(DType::kF32, before.shape());
      for (int64_t j = 0; j < before.num_elements(); ++j) {
        if (key_bias && j >= config.n_embd && j < 2 * config.n_embd) continue;  // stays 0
        ours.data<float>()[j] = params[i].data<float>()[j] - before.data<float>()[j];
        theirs.data<float>()[j] = after->data<float>()[j] - before.data<float>()[j];
      }
      delta_log.Check("update of " + inputs[i].name, ours, &theirs);
    }
    std::cout << "[parity] bias=" << config.bias << " " << runner_name << ": after " << kSteps
              << " AdamW steps (grad norms " << ref->Find("grad_norm.0")->data<float>()[0] << ", "
              << ref->Find("grad_norm.1")->data<float>()[0] << ", " << ref->Find("grad_norm.2")->data<float>()[0]
              << " > clip " << opt.grad_clip << "): max relative error over losses and " << n << " parameters "
              << log.max_error << " (" << log.worst << "); of the updates p3 - p0: " << delta_log.max_error << " ("
              << delta_log.worst << ")\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Bias, GptTorchParityTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "WithBias" : "NoBias"; });

}  // namespace
}  // namespace pcp
