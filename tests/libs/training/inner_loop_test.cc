// The inner loop on the CPU backend: resident state, in-place updates, evaluation on the
// same buffers, optimizer state kept across parameter reloads, and input checking.
#include "pcp/training/inner_loop.h"

#include "gtest/gtest.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/kernels/cpu_backend.h"
#include "pcp/models/gpt.h"
#include "pcp/testing/tensor_testing.h"
#include "pcp/training/gpt_program.h"

namespace pcp {
namespace {

constexpr GPTConfig kModel{.vocab_size = 17, .block_size = 8, .n_layer = 2, .n_head = 2, .n_embd = 16, .bias = true};
constexpr int64_t kBatch = 3;

class InnerLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto program = BuildGptProgram(kModel, kBatch, AdamWConfig{.beta2 = 0.99, .weight_decay = 0.1, .grad_clip = 1.0});
    ASSERT_TRUE(program.ok()) << program.status();
    program_ = *std::move(program);
    backend_ = CreateCpuBackend({.threads = 1});
    auto init = InitGptParams(kModel, 7);
    ASSERT_TRUE(init.ok()) << init.status();
    for (const NamedTensor& t : *init) params_.push_back(t.tensor);
    std::vector<uint16_t> ids(500);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<uint16_t>((i * 5 + i / 7) % kModel.vocab_size);
    data_ = TokenSequence(std::move(ids));
  }

  Batch NextBatch(BatchSampler& s) {
    auto b = s.Next(data_, kBatch, kModel.block_size);
    EXPECT_TRUE(b.ok()) << b.status();
    return *b;
  }

  GptProgram program_;
  std::unique_ptr<Backend> backend_;
  std::vector<Tensor> params_;
  TokenSequence data_;
};

TEST_F(InnerLoopTest, StepsUpdateResidentStateAndLossFalls) {
  auto loop = InnerLoop::Create(*backend_, program_.train_step);
  ASSERT_TRUE(loop.ok()) << loop.status();
  ASSERT_TRUE((*loop)->SetParams(params_).ok());
  EXPECT_EQ((*loop)->num_params(), static_cast<int>(params_.size()));
  EXPECT_EQ((*loop)->param_names()[0], "transformer.wte.weight");
  BatchSampler sampler(1);
  Batch batch = NextBatch(sampler);
  float first = 0, last = 0;
  for (int i = 0; i < 30; ++i) {  // the same batch: the loss must fall
    auto loss = (*loop)->Step(batch, 3e-3f);
    ASSERT_TRUE(loss.ok()) << loss.status();
    if (i == 0) first = *loss;
    last = *loss;
  }
  EXPECT_EQ((*loop)->step(), 30);
  EXPECT_LT(last, first - 0.5f);
  auto after = (*loop)->GetParams();
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(BitwiseEqual((*after)[0], params_[0]));
  auto moments = (*loop)->GetOptimizerState();
  ASSERT_TRUE(moments.ok());
  ASSERT_EQ(moments->size(), 2 * params_.size());
  double v_sum = 0;
  for (float v : (*moments)[params_.size()].ToVector<float>()) v_sum += v;
  EXPECT_GT(v_sum, 0.0);  // second moments accumulated
}

TEST_F(InnerLoopTest, EvaluatorMatchesInterpreterOnResidentParams) {
  auto loop = InnerLoop::Create(*backend_, program_.train_step);
  ASSERT_TRUE(loop.ok());
  ASSERT_TRUE((*loop)->SetParams(params_).ok());
  BatchSampler sampler(3);
  Batch batch = NextBatch(sampler);
  ASSERT_TRUE((*loop)->Step(batch, 1e-3f).ok());
  auto eval = Evaluator::Create(**loop, program_.eval_loss);
  ASSERT_TRUE(eval.ok()) << eval.status();
  auto loss = (*eval)->Loss(batch);
  ASSERT_TRUE(loss.ok());
  std::vector<Tensor> args = *(*loop)->GetParams();
  args.push_back(batch.x);
  args.push_back(batch.y);
  auto expected = Interpret(program_.eval_loss, args);
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_NEAR(*loss, (*expected)[0].data<float>()[0], 1e-5);
  auto mean = (*eval)->MeanLoss(data_, 4, 9);
  ASSERT_TRUE(mean.ok());
  EXPECT_GT(*mean, 0.0f);
  EXPECT_FALSE((*eval)->MeanLoss(data_, 0, 9).ok());
}

TEST_F(InnerLoopTest, StandaloneEvaluatorOnItsOwnParamsMatchesTheLoops) {
  auto loop = InnerLoop::Create(*backend_, program_.train_step);
  ASSERT_TRUE(loop.ok());
  ASSERT_TRUE((*loop)->SetParams(params_).ok());
  auto on_loop = Evaluator::Create(**loop, program_.eval_loss);
  auto own = Evaluator::Create(*backend_, program_.eval_loss);
  ASSERT_TRUE(on_loop.ok() && own.ok()) << own.status();
  EXPECT_EQ((*on_loop)->SetParams(params_).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE((*own)->SetParams({params_[0]}).ok());
  EXPECT_EQ((*own)->MeanLoss(data_, 3, 11).status().code(), absl::StatusCode::kFailedPrecondition);  // no params yet
  ASSERT_TRUE((*own)->SetParams(params_).ok());
  auto a = (*on_loop)->MeanLoss(data_, 3, 11);
  auto b = (*own)->MeanLoss(data_, 3, 11);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  (*own)->ReleaseParams();
  EXPECT_FALSE((*own)->MeanLoss(data_, 3, 11).ok());
  ASSERT_TRUE((*own)->SetParams(params_).ok());  // allocated again
  auto c = (*own)->MeanLoss(data_, 3, 11);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, *a);
}

TEST_F(InnerLoopTest, ReloadingParamsKeepsOptimizerStateButSetParamsResetsIt) {
  auto loop = InnerLoop::Create(*backend_, program_.train_step);
  ASSERT_TRUE(loop.ok());
  ASSERT_TRUE((*loop)->SetParams(params_).ok());
  BatchSampler sampler(5);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*loop)->Step(NextBatch(sampler), 1e-3f).ok());
  std::vector<Tensor> m_before = *(*loop)->GetOptimizerState();
  ASSERT_TRUE((*loop)->LoadParamsKeepOptimizer(params_).ok());
  EXPECT_EQ((*loop)->step(), 3);
  std::vector<Tensor> m_after = *(*loop)->GetOptimizerState();
  EXPECT_TRUE(BitwiseEqual(m_before[0], m_after[0]));
  EXPECT_TRUE(BitwiseEqual((*(*loop)->GetParams())[1], params_[1]));
  ASSERT_TRUE((*loop)->SetParams(params_).ok());
  EXPECT_EQ((*loop)->step(), 0);
  for (float v : (*(*loop)->GetOptimizerState())[0].ToVector<float>()) ASSERT_EQ(v, 0.0f);
  // Optimizer state round trip.
  ASSERT_TRUE((*loop)->SetOptimizerState(m_before, 3).ok());
  EXPECT_TRUE(BitwiseEqual((*(*loop)->GetOptimizerState())[0], m_before[0]));
}

TEST_F(InnerLoopTest, BadInputsAreErrors) {
  auto loop = InnerLoop::Create(*backend_, program_.train_step);
  ASSERT_TRUE(loop.ok());
  std::vector<Tensor> short_list(params_.begin(), params_.end() - 1);
  EXPECT_EQ((*loop)->SetParams(short_list).code(), absl::StatusCode::kInvalidArgument);
  std::vector<Tensor> wrong = params_;
  wrong[0] = Tensor(DType::kF32, {3, 3});
  absl::Status s = (*loop)->SetParams(wrong);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("transformer.wte.weight"), absl::string_view::npos) << s;
  ASSERT_TRUE((*loop)->SetParams(params_).ok());
  Batch bad{Tensor(DType::kI32, {1, 2}), Tensor(DType::kI32, {1, 2})};
  EXPECT_EQ((*loop)->Step(bad, 1e-3f).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE((*loop)->SetOptimizerState(params_, 1).ok());
  // Not a train_step at all.
  EXPECT_EQ(InnerLoop::Create(*backend_, program_.logits).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pcp
