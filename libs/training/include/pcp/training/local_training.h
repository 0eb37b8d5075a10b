// Training a job in one process, no cluster: the same InnerLoop the worker runs, driven by
// the job's schedule. Prints progress (step, loss, lr, ms/step, tokens/s, ETA) and the
// train/val loss estimates, then writes the checkpoint (checkpoint.h) into out_dir.
//
//   PCP_ASSIGN_OR_RETURN(JobConfig job, LoadJobConfig("config/jobs/shakespeare_char.yaml"));
//   PCP_ASSIGN_OR_RETURN(LocalTrainingResult r, RunLocalTraining(job, backend, stdout));
#ifndef PCP_TRAINING_LOCAL_TRAINING_H_
#define PCP_TRAINING_LOCAL_TRAINING_H_

#include <cstdio>
#include <string>

#include "absl/status/statusor.h"
#include "pcp/kernels/backend.h"
#include "pcp/training/job_config.h"

namespace pcp {

struct LocalTrainingResult {
  int64_t iters = 0;
  float final_train_loss = 0;  // estimate over eval_iters batches after the last step
  float final_val_loss = 0;
  double mean_step_ms = 0;     // excluding the first step (compilation warm-up) and evals
  std::string checkpoint_path;
};

// `job` must come from LoadJobConfig/ParseJobConfig (paths resolved). Progress goes to `out`.
// The data is read unconfined (DataRoots::Unconfined()): a local run reads the user's own files.
absl::StatusOr<LocalTrainingResult> RunLocalTraining(JobConfig job, Backend& backend, std::FILE* out);

}  // namespace pcp

#endif  // PCP_TRAINING_LOCAL_TRAINING_H_
