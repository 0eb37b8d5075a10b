// Where the shepherd keeps its jobs on disk, so that nothing accepted is lost across
// restarts. One folder per job under <state_dir>/jobs/:
//
//   jobs/job-0007/job.yaml        the job file exactly as submitted (written once; removed
//                                 from a finished job beyond the newest ones, DropYaml)
//   jobs/job-0007/state.pb        pcp.v1.StoredJobState (shepherd_state.proto), binary
//   jobs/job-0007/history.pb      the per-round history, see job_history.h
//   jobs/job-0007/checkpoints/    see checkpoint_store.h
//
// Every file but history.pb (appended) is replaced atomically (WriteFileAtomic: temp file,
// fsync, rename). Folders written by older shepherds hold state.json instead of state.pb
// ({"file_name", "base_dir", "job": <pcp.v1.Job as proto JSON>}): they still load, and the
// first save replaces state.json with state.pb.
//
//   JobStore store("/var/lib/pcp/shepherd");
//   PCP_RETURN_IF_ERROR(store.Create(record));           // job.yaml + state.pb
//   PCP_RETURN_IF_ERROR(store.SaveState(record));        // after every change
//   PCP_ASSIGN_OR_RETURN(std::vector<StoredJob> all, store.LoadAll());
#ifndef PCP_SHEPHERD_JOB_STORE_H_
#define PCP_SHEPHERD_JOB_STORE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pcp/v1/admin.pb.h"

namespace pcp::shepherd {

// A job as the shepherd remembers it.
struct StoredJob {
  v1::Job job;                // effective_yaml left empty on disk
  std::string yaml;           // as submitted; empty once dropped
  bool yaml_dropped = false;  // a finished job whose job.yaml is no longer kept (DropYaml)
  std::string file_name;      // for messages ("tiny.yaml")
  std::string base_dir;       // relative data paths resolve against it
  int64_t seq = 0;            // 7 for "job-0007"
};

// "job-0007".
std::string JobIdForSeq(int64_t seq);

class JobStore {
 public:
  explicit JobStore(std::string state_dir) : state_dir_(std::move(state_dir)) {}

  const std::string& state_dir() const { return state_dir_; }
  // <state_dir>/jobs/<id>
  std::string JobDir(const std::string& job_id) const;

  // <state_dir>/jobs/<id>/history.pb
  std::string HistoryPath(const std::string& job_id) const;

  // Writes a new job's folder: job.yaml, then state.pb (the job exists once state.pb does).
  absl::Status Create(const StoredJob& job) const;
  // Deletes the job's folder (its state file first), e.g. a finished job pruned to make room.
  absl::Status Remove(const std::string& job_id) const;
  // Removes a finished job's job.yaml: the job's record (state.pb, history.pb) stays. Such
  // a folder loads with yaml_dropped set; a queued or running job without job.yaml does not.
  absl::Status DropYaml(const std::string& job_id) const;
  // Replaces state.pb (and removes a legacy state.json).
  absl::Status SaveState(const StoredJob& job) const;
  // Every job with a readable state.pb (or legacy state.json), in submission order. A folder that cannot be read
  // is skipped with a logged warning (one bad folder must not stop the shepherd).
  // `max_seq` (optional) gets the highest job number among all folders, readable or not, so
  // new ids never reuse one.
  absl::StatusOr<std::vector<StoredJob>> LoadAll(int64_t* max_seq = nullptr) const;

 private:
  std::string state_dir_;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_JOB_STORE_H_
