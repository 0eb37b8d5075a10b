// The model of a job, whichever kind it is: the built-in GPT (model.n_layer, ...) or an
// imported StableHLO loss function (model.stablehlo; pcp/models/stablehlo_model.h). This
// reads an imported model's files through the job's data roots and imports it; ParseJobConfig
// calls it to check the job (placing its errors in the job file), BuildJobProgram
// (model_program.h) to build the program.
//
//   PCP_ASSIGN_OR_RETURN(JobModelImport import, ImportJobModel(job.model, job.training.seed, roots));
//   import.model.forward;          // (params..., tokens, targets) -> loss
//   std::string about = ModelSummary(job.model);   // "stablehlo:nanogpt_2l.mlir, 0.21M params"
#ifndef PCP_TRAINING_JOB_MODEL_H_
#define PCP_TRAINING_JOB_MODEL_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "pcp/models/stablehlo_model.h"
#include "pcp/training/data_roots.h"
#include "pcp/training/job_config.h"

namespace pcp {

struct JobModelImport {
  ImportedModel model;
  std::string sha256;  // Sha256ContentHash of the module text
};

// Requires model.imported(). Errors are InvalidArgument (PermissionDenied for a path the
// roots refuse) whose message starts with the job-file key concerned: "model.stablehlo: ...",
// "model.params: ...", "model.frozen: ...".
absl::StatusOr<JobModelImport> ImportJobModel(const ModelConfig& model, int64_t seed, const DataRoots& roots);

// One line about the model for people: "gpt: 4 layers x 4 heads x 128 wide, 0.80M params" or
// "stablehlo:nanogpt_2l.mlir, 0.21M params" (vocab_size 0 counts as 1 for a GPT's count).
std::string ModelSummary(const ModelConfig& model);

}  // namespace pcp

#endif  // PCP_TRAINING_JOB_MODEL_H_
