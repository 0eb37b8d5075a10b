// The programs a GPT job compiles: verified, round-tripping through PCP's text form (generic
// and pretty), and accepted by LLVM's mlir-opt (the whole train step included).
#include "pcp/training/gpt_program.h"

#include "gtest/gtest.h"
#include "pcp/autodiff/text.h"
#include "pcp/autodiff/verifier.h"
#include "text_test_util.h"

namespace pcp {
namespace {

using text_testing::FindMlirOpt;
using text_testing::ModulesEqual;
using text_testing::RunMlirOpt;

// Verified; the generic and the pretty text parse back into the same function; mlir-opt (where
// installed) accepts the generic text and what it prints back parses into it too.
void ExpectRoundTrips(const Function& f, const absl::StatusOr<std::string>& mlir_opt) {
  ASSERT_TRUE(Verify(f).ok());
  std::string text = PrintFunction(f);
  auto parsed = ParseModule(text, f.name);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  Module expected;
  expected.functions.push_back(f);
  EXPECT_TRUE(ModulesEqual(*parsed, expected));
  // The pretty form (what JAX and torch-mlir export) round-trips too.
  std::string pretty = PrintFunction(f, TextForm::kPretty);
  auto from_pretty = ParseModule(pretty, f.name);
  ASSERT_TRUE(from_pretty.ok()) << from_pretty.status();
  EXPECT_TRUE(ModulesEqual(*from_pretty, expected));
  EXPECT_EQ(PrintModule(*from_pretty, TextForm::kPretty), pretty);
  if (!mlir_opt.ok()) return;
  text_testing::MlirOptResult r = RunMlirOpt(*mlir_opt, text);
  ASSERT_TRUE(r.status.ok()) << r.stderr_text.substr(0, 2000);
  // What mlir-opt prints back parses into the same module.
  auto reparsed = ParseModule(r.output, "mlir-opt output");
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();
  EXPECT_TRUE(ModulesEqual(*reparsed, expected));
}

class GptProgramTest : public ::testing::TestWithParam<bool> {};

TEST_P(GptProgramTest, FunctionsVerifyRoundTripAndPassMlirOpt) {
  // nanoGPT's CPU configuration, bias on or off.
  GPTConfig model{.vocab_size = 65, .block_size = 64, .n_layer = 4, .n_head = 4, .n_embd = 128, .bias = GetParam()};
  auto program = BuildGptProgram(model, 12, AdamWConfig{.beta2 = 0.99, .weight_decay = 0.1, .grad_clip = 1.0});
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(program->train_step.results.size(), 3 * (program->train_step.params.size() - 4) / 3 + 1);
  EXPECT_EQ(program->train_step.result_names.back(), "loss");
  absl::StatusOr<std::string> mlir_opt = FindMlirOpt();
  for (const Function* f : {&program->train_step, &program->eval_loss, &program->logits}) {
    SCOPED_TRACE(f->name);
    ExpectRoundTrips(*f, mlir_opt);
  }
  if (!mlir_opt.ok()) GTEST_SKIP() << "mlir-opt not found (install mlir-15-tools): " << mlir_opt.status();
}

// With fused attention (pcp/autodiff/attention.h): every layer's attention is one op in each
// function, its backward the lse and three gradient ops, and the programs still verify and
// round-trip (mlir-opt reads PCP's own ops as unregistered ones).
TEST(GptProgramFusedAttentionTest, RaisesEveryLayerAndRoundTrips) {
  GPTConfig model{.vocab_size = 65, .block_size = 32, .n_layer = 2, .n_head = 2, .n_embd = 32, .bias = true};
  auto program = BuildGptProgram(model, 4, AdamWConfig{.beta2 = 0.99, .weight_decay = 0.1, .grad_clip = 1.0},
                                 GptProgramOptions{.precision = Precision::kBF16, .attention = AttentionMode::kFused});
  ASSERT_TRUE(program.ok()) << program.status();
  auto count = [](const Function& f, Op op) {
    int n = 0;
    for (const Instruction& inst : f.instructions) n += inst.op == op;
    return n;
  };
  for (Op op : {Op::kAttention, Op::kAttentionLse, Op::kAttentionGradQ, Op::kAttentionGradK, Op::kAttentionGradV}) {
    EXPECT_EQ(count(program->train_step, op), model.n_layer) << OpName(op);
  }
  EXPECT_EQ(count(program->eval_loss, Op::kAttention), model.n_layer);
  EXPECT_EQ(count(program->logits, Op::kAttention), model.n_layer);
  absl::StatusOr<std::string> mlir_opt = FindMlirOpt();
  for (const Function* f : {&program->train_step, &program->eval_loss, &program->logits}) {
    SCOPED_TRACE(f->name);
    ExpectRoundTrips(*f, mlir_opt);
  }
  if (!mlir_opt.ok()) GTEST_SKIP() << "mlir-opt not found (install mlir-15-tools): " << mlir_opt.status();
}

// With rematerialisation (off by default): the train step recomputes values in the backward,
// its modelled peak falls, and it still verifies and round-trips.
TEST(GptProgramRematTest, RecomputesInTheBackwardWhenAsked) {
  GPTConfig model{.vocab_size = 65, .block_size = 64, .n_layer = 4, .n_head = 4, .n_embd = 128, .bias = true};
  const AdamWConfig adamw{.beta2 = 0.99, .weight_decay = 0.1, .grad_clip = 1.0};
  auto plain = BuildGptProgram(model, 12, adamw);
  auto remat = BuildGptProgram(model, 12, adamw, GptProgramOptions{.rematerialize = true});
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(remat.ok()) << remat.status();
  EXPECT_EQ(plain->remat.values, 0);
  EXPECT_GE(remat->remat.values, 4 * 2);  // GELU's output and at least one LayerNorm's per layer
  EXPECT_LT(remat->remat.peak_after, remat->remat.peak_before);
  EXPECT_EQ(remat->train_step.instructions.size(),
            plain->train_step.instructions.size() + remat->remat.instructions_added);
  ASSERT_TRUE(Verify(remat->train_step).ok());
  auto parsed = ParseModule(PrintFunction(remat->train_step), "train_step");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  Module expected;
  expected.functions.push_back(remat->train_step);
  EXPECT_TRUE(ModulesEqual(*parsed, expected));
}

INSTANTIATE_TEST_SUITE_P(Bias, GptProgramTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "bias" : "no_bias"; });

}  // namespace
}  // namespace pcp
