// A job as admission accepted it: its YAML parsed once, its data read and its memory estimated
// against the shepherd's budgets. SubmitJob makes one; the JobManager keeps it with the queued
// job and hands it to the coordinator, so a job submitted to this process is not parsed or
// checked again when it starts (a job stored by an earlier process, whose budgets may have
// been others, is validated once more when it starts).
//
//   PCP_ASSIGN_OR_RETURN(ValidatedJob v, ValidateJob(yaml, "job.yaml", base_dir, roots, budgets));
//   v.config.model.vocab_size;   // resolved from the data
//   v.memory.worker_bytes;       // within budgets.worker_bytes
#ifndef PCP_SHEPHERD_VALIDATED_JOB_H_
#define PCP_SHEPHERD_VALIDATED_JOB_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pcp/training/data_roots.h"
#include "pcp/training/dataset.h"
#include "pcp/training/job_config.h"
#include "pcp/training/job_memory.h"

namespace pcp::shepherd {

struct ValidatedJob {
  JobConfig config;          // model.vocab_size resolved from the data
  JobMemoryEstimate memory;  // of `config`; within the budgets it was validated against
};

// Parses and fully validates a job: the YAML (errors "FILE:LINE:COL: ..."), its data (inside
// the data roots, readable, long enough for the model's block size) and its memory estimate
// against the budgets (job_memory.h): checked before the data is read, so that a model too
// large for any budget is refused at once, and again only if the data brought the vocabulary.
// `data`, when not null, receives the data it read (the coordinator keeps it; admission drops it).
absl::StatusOr<ValidatedJob> ValidateJob(absl::string_view yaml, absl::string_view file_name,
                                         const std::string& base_dir, const DataRoots& data_roots,
                                         const MemoryBudgets& budgets, std::optional<Dataset>* data = nullptr);

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_VALIDATED_JOB_H_
