// Private: a job's checkpoints on disk. Each is written on the checkpoint writer's thread
// (checkpoint_writer.h) while the next round runs, and reported once finished (the checkpoint
// metrics, JobManager::ReportCheckpoint, the log); it knows the latest round on disk.
//
//   JobCheckpoints checkpoints(job_id, job_dir, jobs);
//   checkpoints.NoteOnDisk(resumed_round);                         // a resumed job's
//   PCP_RETURN_IF_ERROR(checkpoints.Write(names, ckpt, meta, /*wait=*/false));
//   checkpoints.Collect();               // before modifying what the write reads (the momentum)
//   if (checkpoints.on_disk() < round) ...
//
// Coordinator thread only. Destroying it waits for a write in flight (a checkpoint is never
// cut off); the write reads only what it captured.
#ifndef PCP_SHEPHERD_SRC_JOB_CHECKPOINTS_H_
#define PCP_SHEPHERD_SRC_JOB_CHECKPOINTS_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "checkpoint_writer.h"
#include "pcp/shepherd/checkpoint_store.h"
#include "pcp/shepherd/job_manager.h"

namespace pcp::shepherd {

class JobCheckpoints {
 public:
  JobCheckpoints(std::string job_id, std::string job_dir, JobManager* jobs)
      : job_id_(std::move(job_id)), job_dir_(std::move(job_dir)), jobs_(jobs) {}

  // Starts writing `ckpt` (θ and momentum named `names`, round ckpt.state.round) with `meta`;
  // a write still in flight is finished and reported first. With `wait`, returns when it is
  // on disk (its error, if any); else at once (a failure is logged when it is collected).
  absl::Status Write(std::vector<std::string> names, DilocoCheckpoint ckpt, SafetensorsMetadata meta, bool wait);
  // Waits for a write in flight and reports it (a failure is logged: training goes on).
  void Collect();

  // The latest round whose checkpoint is known to be on disk (0: none).
  uint64_t on_disk() const { return on_disk_; }
  void NoteOnDisk(uint64_t round) { on_disk_ = std::max(on_disk_, round); }

 private:
  // Reports a finished write (metrics, job record, log) or returns its error.
  absl::Status Report(const CheckpointWriter::Written& w);
  void LogFailure(const absl::Status& s) const;

  const std::string job_id_;
  const std::string job_dir_;
  JobManager* const jobs_;
  uint64_t on_disk_ = 0;
  CheckpointWriter writer_;  // last: destroyed first, it finishes a write in flight
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_JOB_CHECKPOINTS_H_
