// The functions a GPT training job compiles, derived from the model once:
//   train_step  (params, m, v, step, lr, tokens[B,T], targets[B,T]) -> (params', m', v', loss)
//   eval_loss   (params, tokens[B,T], targets[B,T]) -> (loss)
//   logits      (params, tokens[1,T]) -> (logits[1,T,V])    for sampling, T = block_size
// Each has been through the standard passes (fold, CSE, DCE) and verified; train_step then
// through rematerialisation (pcp/autodiff/remat.h) if options ask for it. A job's program,
// GPT or imported StableHLO model alike, is a ModelProgram (model_program.h: BuildJobProgram).
//
//   PCP_ASSIGN_OR_RETURN(GptProgram program, BuildGptProgram(model, /*batch_size=*/12, adamw));
#ifndef PCP_TRAINING_GPT_PROGRAM_H_
#define PCP_TRAINING_GPT_PROGRAM_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "pcp/autodiff/attention.h"
#include "pcp/autodiff/ir.h"
#include "pcp/autodiff/mixed_precision.h"
#include "pcp/autodiff/remat.h"
#include "pcp/autodiff/train_step.h"
#include "pcp/models/gpt_config.h"

namespace pcp {

struct GptProgram {
  GPTConfig model;
  int64_t batch_size = 0;
  Function train_step;
  Function eval_loss;
  Function logits;
  RematStats remat;  // what rematerialisation did to train_step (zeros if off)
};

struct GptProgramOptions {
  // Recompute cheap elementwise values (GELU's and LayerNorm's outputs) in the backward
  // instead of keeping them from the forward (remat.h). Off by default: on the CPU backend it
  // gives the same bits with a 6 MB smaller arena for the nanoGPT CPU step, but no speed-up
  // could be shown (bench/results/train_step.md, "remat").
  bool rematerialize = false;
  // Mixed precision (pcp/autodiff/mixed_precision.h): every product of train_step, eval_loss
  // and logits reads and writes values rounded to bf16 / f16; f32 leaves the programs as
  // they were. A job's training.precision sets it (BuildJobProgram).
  Precision precision = Precision::kF32;
  // train_step's static loss scale (TrainStepOptions::loss_scale, a power of two); 0: 1024
  // (kF16LossScale) for f16, 1 (none) otherwise.
  double loss_scale = 0;
  // Fused attention (pcp/autodiff/attention.h): every function's softmax(q kᵀ) v raised into
  // one pcp.attention op before differentiation. A job's training.attention sets it.
  AttentionMode attention = AttentionMode::kDecomposed;
};

// The train-step options `options` implies (the loss scale resolved).
TrainStepOptions TrainStepOptionsOf(const GptProgramOptions& options);

// RaiseAttention(function) where `mode` is kFused; returns how many attentions it raised
// (0 for kDecomposed), its error naming the function.
absl::StatusOr<int> ApplyProgramAttention(Function& function, AttentionMode mode);

// ApplyMixedPrecision(function, precision), its error naming the function.
absl::Status ApplyProgramPrecision(Function& function, Precision precision);

absl::StatusOr<GptProgram> BuildGptProgram(const GPTConfig& model, int64_t batch_size, const AdamWConfig& adamw,
                                           const GptProgramOptions& options = {});

}  // namespace pcp

#endif  // PCP_TRAINING_GPT_PROGRAM_H_
