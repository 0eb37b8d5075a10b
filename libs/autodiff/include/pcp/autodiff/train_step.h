// Optimizer graphs: AdamW as IR, and the fused training step
//
//   train_step(params..., m..., v..., step, lr, tokens, targets)
//       -> (params'..., m'..., v'..., loss)
//
// = forward + backward + global-norm gradient clipping + AdamW with decoupled weight decay,
// one function so a backend keeps all state resident and runs a whole inner loop without
// host copies. Semantics match torch.optim.AdamW as nanoGPT configures it: weight decay only
// on parameters of rank >= 2, bias correction with the step count, lr fed per step (so any
// schedule works), clipping as torch.nn.utils.clip_grad_norm_ (scale = clip / (norm + 1e-6)
// when norm > clip).
//
//   AdamWConfig opt{.beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8, .weight_decay = 0.1, .grad_clip = 1.0};
//   absl::StatusOr<Function> step = BuildTrainStep(forward_loss, opt);
//
// `forward_loss` has parameters (params..., tokens, targets) — the last two are the data —
// and returns the scalar f32 loss as its first result. Parameter names carry over; the step
// names its parameters "<p>", "m.<p>", "v.<p>", "step", "lr", "tokens", "targets" and its
// results "<p>", "m.<p>", "v.<p>", "loss". `step` is the 1-based step number as an f32
// scalar; `lr` an f32 scalar.
#ifndef PCP_AUTODIFF_TRAIN_STEP_H_
#define PCP_AUTODIFF_TRAIN_STEP_H_

#include "absl/status/statusor.h"
#include "pcp/autodiff/ir.h"

namespace pcp {

struct AdamWConfig {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;  // decoupled: p -= lr * weight_decay * p (rank >= 2 params only)
  double grad_clip = 0.0;     // max global L2 norm; 0 disables clipping
};

// Number of model parameters in a train_step built from a forward with `num_forward_params`
// parameters (the two data parameters excluded).
inline int NumModelParams(int num_forward_params) { return num_forward_params - 2; }

struct TrainStepOptions {
  // Static loss scaling, for gradients computed through 16-bit products (f16: see
  // mixed_precision.h). With a scale other than 1 the backward starts from loss * loss_scale,
  // every gradient is multiplied by 1 / loss_scale (exact: it must be a power of two) before
  // clipping, and a step whose gradients are not all finite (an f16 overflow: the sum of their
  // squares is inf or NaN) is skipped: parameters and moments come out unchanged (the caller's
  // step count still advances, as torch.cuda.amp.GradScaler leaves the schedule running).
  // The returned loss is the unscaled one. 1 (the default) builds exactly the plain step.
  double loss_scale = 1.0;
};

absl::StatusOr<Function> BuildTrainStep(const Function& forward_loss, const AdamWConfig& config,
                                        const TrainStepOptions& options = {});

}  // namespace pcp

#endif  // PCP_AUTODIFF_TRAIN_STEP_H_
