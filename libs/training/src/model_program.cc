#include "pcp/training/model_program.h"

#include "absl/strings/str_cat.h"
#include "pcp/autodiff/passes.h"
#include "pcp/autodiff/remat.h"
#include "pcp/base/status_macros.h"
#include "pcp/models/gpt.h"
#include "pcp/training/gpt_program.h"
#include "pcp/training/job_model.h"

namespace pcp {
namespace {

absl::Status FillParams(ModelProgram& p) {
  const Function& step = p.train_step;
  const size_t n = (step.params.size() - 4) / 3;
  for (size_t i = 0; i < n; ++i) {
    p.param_names.push_back(step.param_names[i]);
    p.param_types.push_back(step.type(step.params[i]));
    p.num_params += step.type(step.params[i]).num_elements();
  }
  if (p.initial_params.size() != n) {
    return absl::InternalError(absl::StrCat(p.initial_params.size(), " initial values for ", n, " parameters"));
  }
  for (size_t i = 0; i < n; ++i) {
    if (p.initial_params[i].dtype() != p.param_types[i].dtype ||
        p.initial_params[i].shape() != p.param_types[i].shape) {
      return absl::InternalError(absl::StrCat("parameter '", p.param_names[i], "': initial value ",
                                              p.initial_params[i].TypeString(), ", train_step takes ",
                                              p.param_types[i].ToString()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

AdamWConfig AdamWOf(const OptimizerConfig& o) {
  return AdamWConfig{
      .beta1 = o.beta1, .beta2 = o.beta2, .eps = o.eps, .weight_decay = o.weight_decay, .grad_clip = o.grad_clip};
}

absl::StatusOr<ModelProgram> BuildJobProgram(const JobConfig& job, const DataRoots& roots,
                                             const GptProgramOptions& caller_options) {
  GptProgramOptions options = caller_options;
  options.precision = job.training.precision;  // the job file decides
  options.attention = job.training.attention;
  ModelProgram p;
  p.summary = ModelSummary(job.model);
  p.batch_size = job.training.batch_size;
  p.block_size = job.model.block_size;
  if (!job.model.imported()) {
    const GPTConfig model = job.model.ToGPTConfig();
    PCP_ASSIGN_OR_RETURN(GptProgram gpt,
                         BuildGptProgram(model, job.training.batch_size, AdamWOf(job.optimizer), options));
    p.train_step = std::move(gpt.train_step);
    p.eval_loss = std::move(gpt.eval_loss);
    p.logits = std::move(gpt.logits);
    PCP_ASSIGN_OR_RETURN(std::vector<NamedTensor> init, InitGptParams(model, static_cast<uint64_t>(job.training.seed)));
    for (NamedTensor& t : init) p.initial_params.push_back(std::move(t.tensor));
    PCP_ASSIGN_OR_RETURN(p.init_recipe, GptInitRecipe(model, static_cast<uint64_t>(job.training.seed)));
    PCP_RETURN_IF_ERROR(FillParams(p));
    return p;
  }
  PCP_ASSIGN_OR_RETURN(JobModelImport import, ImportJobModel(job.model, job.training.seed, roots));
  if (import.model.batch_size != p.batch_size || import.model.block_size != p.block_size) {
    return absl::FailedPreconditionError(absl::StrCat(job.model.stablehlo, " changed since the job was parsed: data [",
                                                      import.model.batch_size, ", ", import.model.block_size,
                                                      "], the job has [", p.batch_size, ", ", p.block_size, "]"));
  }
  if (!job.model.stablehlo_sha256.empty() && import.sha256 != job.model.stablehlo_sha256) {
    return absl::FailedPreconditionError(absl::StrCat(job.model.stablehlo, " changed since the job was parsed (",
                                                      import.sha256, ", was ", job.model.stablehlo_sha256, ")"));
  }
  PCP_ASSIGN_OR_RETURN(int raised, ApplyProgramAttention(import.model.forward, options.attention));
  if (import.model.logits.has_value()) {
    PCP_RETURN_IF_ERROR(ApplyProgramAttention(*import.model.logits, options.attention).status());
  }
  if (options.attention == AttentionMode::kFused && raised == 0) {
    import.model.warnings.push_back(absl::StrCat("training.attention: fused, but ", job.model.stablehlo,
                                                 " has no decomposed attention PCP recognises (attention.h); "
                                                 "its attention runs as written"));
  }
  PCP_ASSIGN_OR_RETURN(p.train_step,
                       BuildTrainStep(import.model.forward, AdamWOf(job.optimizer), TrainStepOptionsOf(options)),
                       _ << "building the train step of " << job.model.stablehlo);
  p.train_step.name = "train_step";
  PCP_RETURN_IF_ERROR(ApplyProgramPrecision(p.train_step, options.precision));
  PCP_RETURN_IF_ERROR(RunStandardPasses(p.train_step), _ << "optimizing train_step");
  if (options.rematerialize) {
    PCP_RETURN_IF_ERROR(Rematerialize(p.train_step).status(), _ << "rematerialising in train_step");
  }
  p.logits = std::move(import.model.logits);
  if (p.logits.has_value()) PCP_RETURN_IF_ERROR(ApplyProgramPrecision(*p.logits, options.precision));
  p.eval_loss = std::move(import.model.forward);
  p.eval_loss.name = "eval_loss";
  PCP_RETURN_IF_ERROR(ApplyProgramPrecision(p.eval_loss, options.precision));
  p.initial_params = std::move(import.model.initial);
  p.init_recipe = std::move(import.model.init_recipe);
  p.warnings = std::move(import.model.warnings);
  PCP_RETURN_IF_ERROR(FillParams(p));
  return p;
}

}  // namespace pcp
