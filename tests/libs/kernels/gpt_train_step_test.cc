// The product workload end to end, shrunk: a tiny nanoGPT's train_step (forward, backward,
// clipping, AdamW as one function) on every test backend, state updated in place over
// several steps, against the reference interpreter, with decomposed and with fused attention.
#include <memory>
#include <string>
#include <vector>

#include "cpu_run.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/attention.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/train_step.h"
#include "pcp/kernels/cpu_backend.h"
#include "pcp/models/gpt.h"
#include "pcp/testing/tensor_testing.h"
#include "test_backends.h"
#include "train_step_args.h"

namespace pcp {
namespace {

using ::pcp::testing::MaxRelativeError;
using ::pcp::testing::TestBackends;
using ::pcp::testing::TrainStepArgs;

constexpr int kSteps = 3;

class GptTrainStepTest : public ::testing::TestWithParam<int> {};

// The step with its attention as the model writes it, or fused (pcp.attention ops: the
// interpreter computes their definitions, the CPU backend their expansion, the Vulkan backend
// its attention kernels).
void ExpectStepsMatchInterpreter(Backend* backend, AttentionMode attention) {
  const GPTConfig config{.vocab_size = 11, .block_size = 8, .n_layer = 2, .n_head = 2, .n_embd = 16, .bias = true};
  const int64_t batch = 3;
  absl::StatusOr<Function> forward = BuildGptForwardLoss(config, batch, config.block_size);
  ASSERT_TRUE(forward.ok()) << forward.status();
  if (attention == AttentionMode::kFused) {
    absl::StatusOr<int> raised = RaiseAttention(*forward);
    ASSERT_TRUE(raised.ok()) << raised.status();
    ASSERT_EQ(*raised, config.n_layer);
  }
  absl::StatusOr<Function> step =
      BuildTrainStep(*forward,
                     AdamWConfig{.beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8, .weight_decay = 0.1, .grad_clip = 1.0});
  ASSERT_TRUE(step.ok()) << step.status();
  absl::StatusOr<std::vector<NamedTensor>> init = InitGptParams(config, 7);
  ASSERT_TRUE(init.ok()) << init.status();

  // Arguments: params, m, v (zeros), step, lr, tokens, targets.
  const size_t n = init->size();
  std::vector<Tensor> args = TrainStepArgs(*init, 3e-3f, batch, config.block_size, config.vocab_size, 1);
  ASSERT_EQ(args.size(), step->params.size());

  absl::StatusOr<std::unique_ptr<Executable>> exe = backend->Compile(*step);
  ASSERT_TRUE(exe.ok()) << exe.status();
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<Buffer*> in;
  for (const Tensor& a : args) {
    auto buf = backend->Allocate({a.dtype(), a.shape()});
    ASSERT_TRUE(buf.ok());
    ASSERT_TRUE(backend->CopyIn(a, **buf).ok());
    in.push_back(buf->get());
    owned.push_back(*std::move(buf));
  }
  auto loss_buffer = backend->Allocate({DType::kF32, {}});
  ASSERT_TRUE(loss_buffer.ok());
  // params', m', v' over params, m, v; the loss in a buffer of its own.
  std::vector<Buffer*> out(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(3 * n));
  out.push_back(loss_buffer->get());

  std::vector<Tensor> expected = args;
  std::vector<float> losses;
  for (int s = 0; s < kSteps; ++s) {
    absl::StatusOr<std::vector<Tensor>> ref = Interpret(*step, expected);
    ASSERT_TRUE(ref.ok()) << ref.status();
    for (size_t i = 0; i < 3 * n; ++i) expected[i] = (*ref)[i];
    losses.push_back((*ref)[3 * n].data<float>()[0]);
    expected[3 * n] = Tensor::Scalar<float>(static_cast<float>(s + 2));  // step
    ASSERT_TRUE((*exe)->Run(in, out).ok());
    auto loss = backend->CopyOut(*out.back());
    ASSERT_TRUE(loss.ok());
    EXPECT_NEAR(loss->data<float>()[0], losses.back(), 1e-4 * std::abs(losses.back())) << "step " << s;
    ASSERT_TRUE(backend->CopyIn(expected[3 * n], *in[3 * n]).ok());
  }
  EXPECT_LT(losses.back(), losses.front());  // it learns
  for (size_t i = 0; i < 3 * n; ++i) {
    auto got = backend->CopyOut(*in[i]);
    ASSERT_TRUE(got.ok());
    EXPECT_LT(MaxRelativeError(*got, expected[i], 1e-6), 1e-3) << "result " << i;
  }
  if (auto* cpu = dynamic_cast<CpuExecutable*>(exe->get())) {
    EXPECT_EQ(cpu->stats().num_direct_results, static_cast<int>(3 * n + 1)) << cpu->DescribeSchedule();
    EXPECT_TRUE(cpu->CheckMemoryPlan().ok());
  }
}

TEST_P(GptTrainStepTest, MatchesInterpreterOverSeveralInPlaceSteps) {
  const auto& tb = TestBackends()[GetParam()];
  absl::StatusOr<std::unique_ptr<Backend>> backend = tb.create();
  if (!backend.ok()) GTEST_SKIP() << tb.name << " unavailable: " << backend.status();
  for (AttentionMode attention : {AttentionMode::kDecomposed, AttentionMode::kFused}) {
    SCOPED_TRACE(attention == AttentionMode::kFused ? "fused attention" : "decomposed attention");
    ExpectStepsMatchInterpreter(backend->get(), attention);
  }
}

// The CPU backend's epilogues (loops run over a product's blocks inside its kernel: GELU,
// softmax, residual and LayerNorm rows) leave every bit of the train step as it is with the
// loops as kernels of their own, for 1 and 2 threads, on OpenBLAS and on the own sgemm (whose
// shared packed operands and packing workspace sit beside the epilogues' scratch). 256 rows,
// so the products are split into row blocks. The two product paths round differently, so
// across them the losses are only close.
TEST(GptTrainStepCpuTest, EpiloguesGiveTheSameBits) {
  absl::StatusOr<::pcp::testing::GptTrainStep> step = ::pcp::testing::GptTrainStepFor(
      {.vocab_size = 65, .block_size = 32, .n_layer = 2, .n_head = 2, .n_embd = 64, .bias = true}, /*batch=*/8,
      /*init_seed=*/3, /*data_seed=*/5);
  ASSERT_TRUE(step.ok()) << step.status();
  std::vector<Tensor> openblas;
  for (CpuBackendOptions::Gemm gemm : {CpuBackendOptions::Gemm::kOpenBlas, CpuBackendOptions::Gemm::kOwn}) {
    SCOPED_TRACE(gemm == CpuBackendOptions::Gemm::kOwn ? "own sgemm (OpenBLAS without AVX2+FMA)" : "OpenBLAS");
    const ::pcp::testing::CpuRun alone =
        ::pcp::testing::RunOnCpu(step->step, step->args, {.threads = 1, .epilogues = false, .gemm = gemm});
    for (int threads : {1, 2}) {
      const ::pcp::testing::CpuRun run =
          ::pcp::testing::RunOnCpu(step->step, step->args, {.threads = threads, .gemm = gemm});
      EXPECT_TRUE(::pcp::testing::AllSameBitsOrBothNaN(run.results, alone.results)) << threads << " threads";
      const int epilogues = ::pcp::testing::CountOf(run.schedule, "+ epilogue");
      EXPECT_GT(epilogues, 0) << run.schedule;
      EXPECT_EQ(run.kernels + epilogues, alone.kernels) << run.schedule;
      EXPECT_TRUE(run.memory_plan.ok()) << run.memory_plan;
    }
    if (openblas.empty()) {
      openblas = alone.results;
      continue;
    }
    // The loss, computed before the update (AdamW's first step moves each weight by ±lr after
    // the sign of its gradient, which rounding flips where a gradient is ~0).
    EXPECT_LT(MaxRelativeError(alone.results.back(), openblas.back(), 1e-6), 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, GptTrainStepTest, ::testing::Range(0, static_cast<int>(TestBackends().size())),
                         [](const ::testing::TestParamInfo<int>& info) { return TestBackends()[info.param].name; });

}  // namespace
}  // namespace pcp
