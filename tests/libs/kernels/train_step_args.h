// The arguments of a GPT train_step (libs/autodiff/train_step.h) for kernel tests, in the
// function's order: params (from `init`), m and v (zeros), step = 1, lr, then random tokens
// and targets in [0, vocab) of shape [batch, block] (seeds `seed` and `seed + 1`).
//
//   std::vector<Tensor> args = TrainStepArgs(*init, 1e-3f, batch, config.block_size, 65, 3);
//
// And a whole small one, function and arguments (2 layers, 2 heads, 32 wide, block 16,
// vocab 11, batch 3, bias; AdamW with weight decay and clipping), for tests that compare
// backends or backend options on it:
//
//   absl::StatusOr<GptTrainStep> s = SmallGptTrainStep();
//   absl::StatusOr<GptTrainStep> t = GptTrainStepFor(config, batch, init_seed, data_seed);
//   absl::StatusOr<GptComparisonCase> c = GptBackendComparisonCase();  // Vulkan vs CPU
//   for (const GpuRunModel& m : GpuRunModels()) ...                     // the GPU run's models
#ifndef PCP_TESTS_LIBS_KERNELS_TRAIN_STEP_ARGS_H_
#define PCP_TESTS_LIBS_KERNELS_TRAIN_STEP_ARGS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "pcp/autodiff/train_step.h"
#include "pcp/models/gpt.h"
#include "pcp/tensor/safetensors.h"
#include "pcp/tensor/tensor.h"
#include "pcp/testing/tensor_testing.h"

namespace pcp::testing {

inline std::vector<Tensor> TrainStepArgs(const std::vector<NamedTensor>& init, float lr, int64_t batch, int64_t block,
                                         int64_t vocab, uint64_t seed) {
  std::vector<Tensor> args;
  for (const NamedTensor& p : init) args.push_back(p.tensor);
  for (int k = 0; k < 2; ++k) {
    for (const NamedTensor& p : init) args.push_back(Tensor(DType::kF32, p.tensor.shape()));
  }
  args.push_back(Tensor::Scalar<float>(1.0f));
  args.push_back(Tensor::Scalar<float>(lr));
  const TensorType ids{DType::kI32, {batch, block}};
  args.push_back(RandomTensor(ids, seed, 0, vocab));
  args.push_back(RandomTensor(ids, seed + 1, 0, vocab));
  return args;
}

struct GptTrainStep {
  Function step;
  std::vector<Tensor> args;
};

// The train step of `config` at `batch` (AdamW with weight decay and clipping), parameters
// initialised with `init_seed`, its arguments as TrainStepArgs gives them (lr 3e-3, data seed
// `data_seed`).
inline absl::StatusOr<GptTrainStep> GptTrainStepFor(const GPTConfig& config, int64_t batch, uint64_t init_seed,
                                                    uint64_t data_seed) {
  absl::StatusOr<Function> forward = BuildGptForwardLoss(config, batch, config.block_size);
  if (!forward.ok()) return forward.status();
  absl::StatusOr<Function> step =
      BuildTrainStep(*forward,
                     AdamWConfig{.beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8, .weight_decay = 0.1, .grad_clip = 1.0});
  if (!step.ok()) return step.status();
  absl::StatusOr<std::vector<NamedTensor>> init = InitGptParams(config, init_seed);
  if (!init.ok()) return init.status();
  return GptTrainStep{*std::move(step),
                      TrainStepArgs(*init, 3e-3f, batch, config.block_size, config.vocab_size, data_seed)};
}

// The 2-layer, 32-wide GPT (vocab 65, block 16, batch 4) on which the Vulkan tests compare
// backends: its forward (the loss), its train step, the initial parameters (seed 11) and the
// step's arguments (lr 1e-3, data seed 3). AdamW's eps is 1e-6, not 1e-8: the key biases'
// gradient is exactly 0 in exact arithmetic (softmax ignores them), so backends compute rounding
// noise (~1e-13) there, which Adam with eps 1e-8 turns into steps of up to lr in either
// direction (the CPU backend differs from the reference interpreter by as much there: 1e-4..3e-3
// of the tensor's scale).
struct GptComparisonCase {
  Function forward, step;
  std::vector<NamedTensor> init;
  std::vector<Tensor> args;
};

inline absl::StatusOr<GptComparisonCase> GptBackendComparisonCase() {
  const GPTConfig config{.vocab_size = 65, .block_size = 16, .n_layer = 2, .n_head = 2, .n_embd = 32, .bias = true};
  const int64_t batch = 4;
  absl::StatusOr<Function> forward = BuildGptForwardLoss(config, batch, config.block_size);
  if (!forward.ok()) return forward.status();
  absl::StatusOr<Function> step =
      BuildTrainStep(*forward,
                     AdamWConfig{.beta1 = 0.9, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.1, .grad_clip = 1.0});
  if (!step.ok()) return step.status();
  absl::StatusOr<std::vector<NamedTensor>> init = InitGptParams(config, 11);
  if (!init.ok()) return init.status();
  std::vector<Tensor> args = TrainStepArgs(*init, 1e-3f, batch, config.block_size, config.vocab_size, 3);
  return GptComparisonCase{*std::move(forward), *std::move(step), *std::move(init), std::move(args)};
}

// The GPU run's two models (bench/gpu/run.sh), without biases, at its batch sizes.
struct GpuRunModel {
  const char* name;
  GPTConfig config;
  int64_t batch;
};
inline std::vector<GpuRunModel> GpuRunModels() {
  return {{"nanoGPT GPU config (6 x 6 x 384, block 256, batch 64)",
           {.vocab_size = 65, .block_size = 256, .n_layer = 6, .n_head = 6, .n_embd = 384, .bias = false},
           64},
          {"GPT-2 small (12 x 12 x 768, block 1024, batch 12)",
           {.vocab_size = 50304, .block_size = 1024, .n_layer = 12, .n_head = 12, .n_embd = 768, .bias = false},
           12}};
}

inline absl::StatusOr<GptTrainStep> SmallGptTrainStep() {
  return GptTrainStepFor({.vocab_size = 11, .block_size = 16, .n_layer = 2, .n_head = 2, .n_embd = 32, .bias = true},
                         /*batch=*/3, /*init_seed=*/5, /*data_seed=*/9);
}

}  // namespace pcp::testing

#endif  // PCP_TESTS_LIBS_KERNELS_TRAIN_STEP_ARGS_H_
