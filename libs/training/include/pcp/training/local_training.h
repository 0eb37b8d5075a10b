// Training a job in one process, no cluster: the same InnerLoop the worker runs, driven by
// the job's schedule. Prints progress (step, loss, lr, ms/step, tokens/s, ETA) and the
// train/val loss estimates, then writes the checkpoint (checkpoint.h) into out_dir.
//
//   PCP_ASSIGN_OR_RETURN(JobConfig job, LoadJobConfig("config/jobs/shakespeare_char.yaml"));
//   PCP_ASSIGN_OR_RETURN(LocalTrainingResult r, RunLocalTraining(job, backend, stdout));
#ifndef PCP_TRAINING_LOCAL_TRAINING_H_
#define PCP_TRAINING_LOCAL_TRAINING_H_

#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "pcp/kernels/backend.h"
#include "pcp/training/job_config.h"

namespace pcp {

// One line of a local run's record (pcp-local writes them as history.csv, with the
// columns of the cluster's per-round record where they apply): one per log line (every
// log_interval steps and the last; train_loss = mean loss of those steps) and one per
// evaluation (val_loss of the parameters after `step` steps).
struct LocalRecord {
  int64_t step = 0;  // steps done (the record's "round")
  int64_t start_unix_ms = 0, end_unix_ms = 0;
  int64_t tokens = 0;        // tokens in the steps since the previous log line
  int64_t tokens_total = 0;  // step x batch_size x block_size
  std::optional<double> train_loss, val_loss;
  double seconds = 0;  // wall time of those steps (evaluations excluded)
  double lr = 0;       // the learning rate of the last of them
};

struct LocalTrainingResult {
  int64_t iters = 0;
  float final_train_loss = 0;  // estimate over eval_iters batches after the last step
  float final_val_loss = 0;
  double mean_step_ms = 0;  // excluding the first step (compilation warm-up) and evals
  std::string checkpoint_path;
  bool has_logits = true;  // false: an imported model, which cannot be sampled
};

// `job` must come from LoadJobConfig/ParseJobConfig (paths resolved). Progress goes to `out`.
// The data is read unconfined (DataRoots::Unconfined()): a local run reads the user's own files.
// `on_record` (optional) gets each LocalRecord as it happens.
absl::StatusOr<LocalTrainingResult> RunLocalTraining(JobConfig job, Backend& backend, std::FILE* out,
                                                     const std::function<void(const LocalRecord&)>& on_record = {});

}  // namespace pcp

#endif  // PCP_TRAINING_LOCAL_TRAINING_H_
