// The functions a training job compiles, whatever its model: the built-in GPT
// (gpt_program.h) or an imported StableHLO loss function (job_model.h, stablehlo_model.h).
//   train_step  (params, m, v, step, lr, tokens[B,T], targets[B,T]) -> (params', m', v', loss)
//   eval_loss   (params, tokens[B,T], targets[B,T]) -> (loss)          (the forward)
//   logits      (params, tokens[1,T]) -> (logits[1,T,V])   the GPT's, or an imported model's
//                                                          model.logits (without it the
//                                                          model cannot be sampled)
// with the parameter names, types and initial values (the job's seed), in train_step order.
//
//   PCP_ASSIGN_OR_RETURN(Dataset data, LoadJobDataset(&job, roots));   // a GPT's vocab_size
//   PCP_ASSIGN_OR_RETURN(ModelProgram program, BuildJobProgram(job, roots));
//   PCP_ASSIGN_OR_RETURN(auto loop, InnerLoop::Create(backend, program.train_step));
//   PCP_RETURN_IF_ERROR(loop->SetParams(program.initial_params));
#ifndef PCP_TRAINING_MODEL_PROGRAM_H_
#define PCP_TRAINING_MODEL_PROGRAM_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pcp/autodiff/ir.h"
#include "pcp/autodiff/train_step.h"
#include "pcp/tensor/init_recipe.h"
#include "pcp/tensor/tensor.h"
#include "pcp/training/data_roots.h"
#include "pcp/training/gpt_program.h"
#include "pcp/training/job_config.h"

namespace pcp {

struct ModelProgram {
  std::string summary;  // ModelSummary (job_model.h)
  int64_t batch_size = 0;
  int64_t block_size = 0;
  Function train_step;
  Function eval_loss;
  std::optional<Function> logits;  // nullopt: an imported model without model.logits
  std::vector<std::string> param_names;
  std::vector<TensorType> param_types;
  std::vector<Tensor> initial_params;
  // How initial_params were drawn (GPT; an import without a params file), else nullopt.
  std::optional<InitRecipe> init_recipe;
  int64_t num_params = 0;             // elements of the parameters
  std::vector<std::string> warnings;  // for the caller's log (e.g. an import's f64 lowered to f32)
};

// The why of a refused sample, one line.
inline constexpr char kNoLogitsReason[] =
    "the model is an imported StableHLO loss function without logits; sampling needs logits "
    "(name a function of the module that returns them: model.logits)";

AdamWConfig AdamWOf(const OptimizerConfig& optimizer);

// `job` from ParseJobConfig; a GPT's model.vocab_size must have been resolved (LoadJobDataset).
// An imported model's files are read through `roots`. Slow (seconds for large models).
// `options.rematerialize` applies to either model's train_step (gpt_program.h).
absl::StatusOr<ModelProgram> BuildJobProgram(const JobConfig& job, const DataRoots& roots,
                                             const GptProgramOptions& options = {});

}  // namespace pcp

#endif  // PCP_TRAINING_MODEL_PROGRAM_H_
