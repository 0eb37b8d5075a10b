#include "pcp/training/gpt_program.h"

#include "pcp/autodiff/attention.h"
#include "pcp/autodiff/passes.h"
#include "pcp/base/status_macros.h"
#include "pcp/models/gpt.h"

namespace pcp {

TrainStepOptions TrainStepOptionsOf(const GptProgramOptions& options) {
  TrainStepOptions o;
  o.loss_scale = options.loss_scale > 0                 ? options.loss_scale
                 : options.precision == Precision::kF16 ? kF16LossScale
                                                        : 1.0;
  return o;
}

absl::StatusOr<int> ApplyProgramAttention(Function& function, AttentionMode mode) {
  if (mode == AttentionMode::kDecomposed) return 0;
  PCP_ASSIGN_OR_RETURN(int raised, RaiseAttention(function), _ << "fusing the attention of " << function.name);
  return raised;
}

absl::Status ApplyProgramPrecision(Function& function, Precision precision) {
  PCP_RETURN_IF_ERROR(ApplyMixedPrecision(function, precision).status(),
                      _ << "rounding the products of " << function.name << " to " << PrecisionName(precision));
  return absl::OkStatus();
}

absl::StatusOr<GptProgram> BuildGptProgram(const GPTConfig& model, int64_t batch_size, const AdamWConfig& adamw,
                                           const GptProgramOptions& options) {
  PCP_RETURN_IF_ERROR(model.Validate());
  if (batch_size <= 0) return absl::InvalidArgumentError("batch_size must be positive");
  GptProgram p;
  p.model = model;
  p.batch_size = batch_size;
  PCP_ASSIGN_OR_RETURN(Function forward, BuildGptForwardLoss(model, batch_size, model.block_size));
  PCP_RETURN_IF_ERROR(ApplyProgramAttention(forward, options.attention).status());
  PCP_ASSIGN_OR_RETURN(p.train_step, BuildTrainStep(forward, adamw, TrainStepOptionsOf(options)));
  p.train_step.name = "train_step";
  PCP_RETURN_IF_ERROR(ApplyProgramPrecision(p.train_step, options.precision));
  PCP_RETURN_IF_ERROR(RunStandardPasses(p.train_step), _ << "optimizing train_step");
  if (options.rematerialize) {
    PCP_ASSIGN_OR_RETURN(p.remat, Rematerialize(p.train_step), _ << "rematerialising in train_step");
  }
  p.eval_loss = std::move(forward);
  p.eval_loss.name = "eval_loss";
  PCP_RETURN_IF_ERROR(ApplyProgramPrecision(p.eval_loss, options.precision));
  PCP_RETURN_IF_ERROR(RunStandardPasses(p.eval_loss), _ << "optimizing eval_loss");
  PCP_ASSIGN_OR_RETURN(p.logits, BuildGptLogits(model, 1, model.block_size));
  p.logits.name = "logits";
  PCP_RETURN_IF_ERROR(ApplyProgramAttention(p.logits, options.attention).status());
  PCP_RETURN_IF_ERROR(ApplyProgramPrecision(p.logits, options.precision));
  PCP_RETURN_IF_ERROR(RunStandardPasses(p.logits), _ << "optimizing logits");
  return p;
}

}  // namespace pcp
