// The arguments of a GPT train_step (libs/autodiff/train_step.h) for kernel tests, in the
// function's order: params (from `init`), m and v (zeros), step = 1, lr, then random tokens
// and targets in [0, vocab) of shape [batch, block] (seeds `seed` and `seed + 1`).
//
//   std::vector<Tensor> args = TrainStepArgs(*init, 1e-3f, batch, config.block_size, 65, 3);
#ifndef PCP_TESTS_LIBS_KERNELS_TRAIN_STEP_ARGS_H_
#define PCP_TESTS_LIBS_KERNELS_TRAIN_STEP_ARGS_H_

#include <cstdint>
#include <vector>

#include "pcp/tensor/safetensors.h"
#include "pcp/tensor/tensor.h"
#include "pcp/testing/tensor_testing.h"

namespace pcp::testing {

inline std::vector<Tensor> TrainStepArgs(const std::vector<NamedTensor>& init, float lr, int64_t batch,
                                         int64_t block, int64_t vocab, uint64_t seed) {
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

}  // namespace pcp::testing

#endif  // PCP_TESTS_LIBS_KERNELS_TRAIN_STEP_ARGS_H_
