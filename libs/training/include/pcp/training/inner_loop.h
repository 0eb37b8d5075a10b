// The inner loop shared by the local trainer and the cluster worker: a compiled train_step
// (train_step.h) whose parameters and AdamW moments stay resident in backend buffers, updated
// in place step after step; only the batch, lr and the loss cross to and from the host.
//
//   PCP_ASSIGN_OR_RETURN(auto loop, InnerLoop::Create(backend, program.train_step));
//   PCP_RETURN_IF_ERROR(loop->SetParams(initial_params));       // also zeroes m and v
//   for (...) { PCP_ASSIGN_OR_RETURN(float loss, loop->Step(batch, lr)); }
//   PCP_ASSIGN_OR_RETURN(std::vector<Tensor> params, loop->GetParams());
//
// Other executables over the same parameters (evaluation, logits) run on param_buffers()
// without copies: see Evaluator below. The backend must outlive the loop.
#ifndef PCP_TRAINING_INNER_LOOP_H_
#define PCP_TRAINING_INNER_LOOP_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "pcp/autodiff/ir.h"
#include "pcp/kernels/backend.h"
#include "pcp/tensor/tensor.h"
#include "pcp/training/dataset.h"

namespace pcp {

class InnerLoop {
 public:
  // `train_step` has the signature of BuildTrainStep: (P params, P m, P v, step, lr, tokens,
  // targets) -> (P params, P m, P v, loss).
  static absl::StatusOr<std::unique_ptr<InnerLoop>> Create(Backend& backend, const Function& train_step);

  int num_params() const { return num_params_; }
  const std::vector<std::string>& param_names() const { return param_names_; }
  // The type of train_step's tokens (and targets) input, i32[batch_size, block_size]: the
  // only batch shape Step accepts.
  const TensorType& tokens_type() const { return args_[3 * static_cast<size_t>(num_params_) + 2]->type(); }
  // Number of optimizer steps taken since the moments were last reset (AdamW's t).
  int64_t step() const { return step_; }

  // Loads parameters (one per model parameter, in train_step order) and zeroes the moments
  // and the step count.
  absl::Status SetParams(const std::vector<Tensor>& params);
  // Loads parameters only, keeping the AdamW moments and step count (DiLoCo: a worker keeps
  // its inner optimizer state across rounds while the shepherd hands it new parameters).
  absl::Status LoadParamsKeepOptimizer(const std::vector<Tensor>& params);
  absl::StatusOr<std::vector<Tensor>> GetParams() const;
  // AdamW state: m then v, one per parameter each, and the step count.
  absl::StatusOr<std::vector<Tensor>> GetOptimizerState() const;
  absl::Status SetOptimizerState(const std::vector<Tensor>& m_then_v, int64_t step);

  // One AdamW step on (x, y) at learning rate `lr`; returns the batch loss (before the update).
  absl::StatusOr<float> Step(const Batch& batch, float lr);

  Backend& backend() { return backend_; }
  // The resident parameter buffers, in order (valid as long as the loop lives).
  std::vector<Buffer*> param_buffers() const;

 private:
  InnerLoop(Backend& backend) : backend_(backend) {}
  absl::Status CopyInAll(const std::vector<Tensor>& tensors, size_t first);

  Backend& backend_;
  std::unique_ptr<Executable> exe_;
  int num_params_ = 0;
  std::vector<std::string> param_names_;
  // args_ = params, m, v, step, lr, tokens, targets; results_ alias params, m, v then loss.
  std::vector<std::unique_ptr<Buffer>> buffers_;
  std::unique_ptr<Buffer> loss_;
  std::vector<Buffer*> args_, results_;
  int64_t step_ = 0;
};

// Runs a forward-loss function (params..., tokens, targets) -> (loss, ...) on an InnerLoop's
// resident parameters, e.g. for train/val loss estimates; or, made with a Backend, on
// parameters of its own (SetParams, ReleaseParams): at most 1 × the parameters' memory, not an
// inner loop's train step with its optimizer state (the shepherd's evaluations).
class Evaluator {
 public:
  static absl::StatusOr<std::unique_ptr<Evaluator>> Create(InnerLoop& loop, const Function& forward_loss);
  static absl::StatusOr<std::unique_ptr<Evaluator>> Create(Backend& backend, const Function& forward_loss);
  // Copies `params` into the evaluator's own parameters (made with a Backend only), allocating
  // them if needed; ReleaseParams frees them (an evaluator used now and then holds no copy of
  // the parameters in between).
  absl::Status SetParams(const std::vector<Tensor>& params);
  void ReleaseParams();
  // Loss of one batch.
  absl::StatusOr<float> Loss(const Batch& batch);
  // Mean loss over `iters` batches drawn from `data` with a sampler seeded by `seed`
  // (nanoGPT's estimate_loss).
  absl::StatusOr<float> MeanLoss(const TokenSequence& data, int64_t iters, uint64_t seed);

 private:
  explicit Evaluator(Backend& backend) : backend_(backend) {}
  absl::Status Compile(const Function& forward_loss);
  Backend& backend_;
  std::vector<Buffer*> params_;  // the loop's, or own_params_
  std::vector<std::unique_ptr<Buffer>> own_params_;
  std::vector<TensorType> own_types_;  // made with a Backend: its parameters' types
  std::unique_ptr<Executable> exe_;
  std::unique_ptr<Buffer> tokens_, targets_;
  std::vector<std::unique_ptr<Buffer>> outputs_;
  int64_t batch_ = 0, block_ = 0;
};

}  // namespace pcp

#endif  // PCP_TRAINING_INNER_LOOP_H_
