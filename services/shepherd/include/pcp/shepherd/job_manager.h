// The shepherd's jobs: a FIFO queue with one running job, their states and reasons, their
// progress, and the watchers that follow them. Every change is persisted (job_store.h)
// before it is announced, so a restarted shepherd knows every job it ever accepted; a job
// that was running when the shepherd stopped is running again (resumed) after a restart.
//
//   PCP_ASSIGN_OR_RETURN(std::unique_ptr<JobManager> jobs, JobManager::Open(state_dir, policy));
//   jobs->SetListener([&] { coordinator.Wake(); });          // queued / cancelled
//   PCP_ASSIGN_OR_RETURN(v1::SubmitJobResponse r, jobs->Submit(request));   // validates
//   ...
//   std::optional<RunnableJob> next = jobs->StartNext();      // coordinator: queued -> running
//   jobs->ReportProgress(next->id, progress);                   // after each round
//   jobs->RecordRound(next->id, record);                        // its history record
//   jobs->Finish(next->id, v1::JOB_STATE_COMPLETED, "");
//
// States: QUEUED -> RUNNING -> COMPLETED | FAILED | CANCELLED, or QUEUED -> CANCELLED.
// Thread-safe. Callbacks (the listener, watchers) are called without the manager's lock held
// and must not block.
#ifndef PCP_SHEPHERD_JOB_MANAGER_H_
#define PCP_SHEPHERD_JOB_MANAGER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pcp/shepherd/job_history.h"
#include "pcp/shepherd/job_store.h"
#include "pcp/shepherd/validated_job.h"
#include "pcp/training/data_roots.h"
#include "pcp/training/job_config.h"
#include "pcp/training/job_memory.h"
#include "pcp/v1/admin.pb.h"

namespace pcp::shepherd {

// The job file name used in messages when a submission names none.
inline constexpr char kDefaultSubmitFileName[] = "<submitted job>";

// Caller-chosen strings a job's record keeps: longer ones are refused at submit (file_name,
// base_dir, the job's name) or cut (a cancel reason, at a UTF-8 character boundary).
inline constexpr size_t kMaxJobPathBytes = 4096;
inline constexpr size_t kMaxJobNameBytes = 256;
inline constexpr size_t kMaxCancelReasonBytes = 1024;

// What the shepherd accepts: where job data may come from, the memory a job may need, how
// many jobs it keeps, how often a job may try to start, and how many bytes each keeps.
// The state is bounded in bytes: job files of queued and running jobs (at most
// max_queued_jobs x max_job_yaml_bytes), of the newest max_finished_job_yamls finished jobs,
// and a record of a few KiB per kept job (at most max_jobs); the same in memory and on disk.
struct AdmissionPolicy {
  DataRoots data_roots;  // default: confined to nothing
  MemoryBudgets budgets;
  int64_t max_jobs = 1000;         // stored; beyond it the oldest finished jobs are pruned
  int64_t max_queued_jobs = 100;   // queued; SubmitJob past it is RESOURCE_EXHAUSTED
  int64_t max_start_attempts = 3;  // starts without a completed round before the job fails
  // The largest job file SubmitJob takes (bytes); larger is INVALID_ARGUMENT naming it.
  int64_t max_job_yaml_bytes = int64_t{256} << 10;
  // Finished jobs (by finishing time, newest first) that keep their job file (GetJob's
  // effective_yaml); older ones keep only their record (id, name, state, reason, progress and
  // losses, checkpoint path, history): job.yaml is deleted and effective_yaml is empty.
  int64_t max_finished_job_yamls = 100;
};

// What the coordinator needs to run a job.
struct RunnableJob {
  std::string id;
  std::string yaml;
  std::string file_name;
  std::string base_dir;
  std::string dir;       // the job's folder (checkpoints go below it)
  bool resumed = false;  // it was running when the shepherd last stopped
  // Its last reported progress (a resumed job's screening counts and quarantines come back
  // from here).
  v1::JobProgress progress;
  // The job as this process's SubmitJob validated it (ValidateJob against this policy); null
  // for a job stored by an earlier process, which the coordinator validates when it starts.
  std::shared_ptr<const ValidatedJob> validated;
};

// Job counts for GetCluster.
struct JobCounts {
  uint32_t queued = 0, completed = 0, failed = 0, cancelled = 0;
  std::string running_id;
};

class JobManager {
 public:
  using Listener = std::function<void()>;
  using WatchFn = std::function<void(const v1::JobEvent&)>;

  // Loads every job under state_dir (creating the folder if needed).
  static absl::StatusOr<std::unique_ptr<JobManager>> Open(const std::string& state_dir, AdmissionPolicy policy);

  const AdmissionPolicy& policy() const { return policy_; }

  // Called (from the thread that made the change) after a job is queued or cancelled.
  void SetListener(Listener listener);

  // Validates (ValidateJob) and queues. InvalidArgument with the YAML, data or memory
  // problem, or a job file over max_job_yaml_bytes; ResourceExhausted when max_queued_jobs
  // are queued, or max_jobs are kept and none of them has finished (finished ones are pruned,
  // oldest first, to make room).
  absl::StatusOr<v1::SubmitJobResponse> Submit(const v1::SubmitJobRequest& request);
  // Newest first, without effective_yaml.
  std::vector<v1::Job> List(const v1::ListJobsRequest& request) const;
  // NotFound for an unknown id. With effective_yaml (empty once the job's file is dropped,
  // see max_finished_job_yamls).
  absl::StatusOr<v1::Job> Get(absl::string_view job_id) const;
  // Queued or running -> cancelled (the reason cut to kMaxCancelReasonBytes). NotFound /
  // FailedPrecondition (already finished).
  absl::StatusOr<v1::Job> Cancel(absl::string_view job_id, absl::string_view reason);

  // ---- for the coordinator
  // The job to run next, now marked running: a job that was running before a restart first
  // (resumed = true), else the oldest queued one. nullopt when none. Each start is counted
  // (Job.start_attempts, persisted before the job starts, reset by a completed round): a job
  // that already used max_start_attempts (it kept failing, or the process kept dying, while
  // it started) fails instead.
  std::optional<RunnableJob> StartNext();
  bool IsRunning(absl::string_view job_id) const;
  void ReportProgress(absl::string_view job_id, const v1::JobProgress& progress);
  void ReportCheckpoint(absl::string_view job_id, uint64_t round, const std::string& path);
  // A Δ refused, a worker quarantined or a round rolled back: an event for the job's watchers
  // (the counts reach GetJob through the next ReportProgress).
  void ReportScreening(absl::string_view job_id, const v1::ScreeningEvent& event);
  // Adds (or replaces, same round) a record of the job's history, persists it and sends it
  // to the job's watchers (JobEvent.round_record).
  void RecordRound(absl::string_view job_id, const v1::RoundRecord& record);
  // Adds the validation loss measured after `round` to that round's record (if the history
  // still holds it), as RecordRound does.
  void RecordValLoss(absl::string_view job_id, uint64_t round, double val_loss);
  // Forgets the job's records of rounds after `round` (resumed from that round's checkpoint:
  // the rounds after it run again).
  void DropHistoryAfter(absl::string_view job_id, uint64_t round);
  // GetJobHistory. NotFound for an unknown id, InvalidArgument for a limit over 10000.
  absl::StatusOr<v1::GetJobHistoryResponse> History(const v1::GetJobHistoryRequest& request) const;
  // Running -> a terminal state. False (and nothing changes) if the job is not running any
  // more (e.g. cancelled meanwhile).
  bool Finish(absl::string_view job_id, v1::JobState state, absl::string_view reason);

  // ---- watchers
  struct WatchStart {
    int64_t watch_id = 0;  // 0 when the job has already finished (nothing registered)
    v1::Job snapshot;
    std::optional<v1::JobResult> result;  // set when the job has already finished
  };
  // Registers `fn` for the job's events (progress, state changes, checkpoints, and last the
  // result, after which the watch is removed). NotFound for an unknown id.
  absl::StatusOr<WatchStart> Watch(absl::string_view job_id, WatchFn fn);
  void Unwatch(int64_t watch_id);

  JobCounts Counts() const;
  // The latest job that finished (completed, failed or cancelled), for Sample; "" if none.
  std::string LatestFinishedJob() const;

 private:
  struct Entry {
    StoredJob stored;
    // Set at submit; after a restart computed from the job file when first asked for.
    mutable std::optional<std::string> effective_yaml;
    // Set at submit, dropped when the job starts or ends (not stored: a restart has none).
    std::shared_ptr<const ValidatedJob> validated;
    std::optional<JobHistory> history;  // empty only if its file could not be opened
  };
  struct Watcher {
    std::string job_id;
    WatchFn fn;
  };
  using Emit = std::vector<std::pair<WatchFn, v1::JobEvent>>;

  JobManager(JobStore store, AdmissionPolicy policy) : store_(std::move(store)), policy_(std::move(policy)) {}
  // Makes room for one more job: RESOURCE_EXHAUSTED if max_queued_jobs are queued or
  // running, else prunes finished jobs (oldest first) while max_jobs are kept.
  absl::Status MakeRoomLocked();
  // Drops the job files of finished jobs beyond the newest max_finished_job_yamls.
  void CompactLocked();
  const std::string& EffectiveYamlLocked(const Entry& entry) const;
  Entry* FindLocked(absl::string_view job_id);
  const Entry* FindLocked(absl::string_view job_id) const;
  void PersistLocked(const Entry& entry);
  // Queues `event` for every watcher of the job (delivered after the lock is released).
  void EventLocked(const std::string& job_id, v1::JobEvent event, Emit* out);
  void TransitionLocked(Entry& entry, v1::JobState to, absl::string_view reason, Emit* out);
  // Opens the job's history file (an unreadable one is logged and the job goes without).
  void OpenHistoryLocked(Entry& entry);
  void PutRecordLocked(Entry& entry, const v1::RoundRecord& record, Emit* out);
  static void Deliver(Emit* emit);

  JobStore store_;
  const AdmissionPolicy policy_;
  mutable std::mutex mu_;
  int64_t next_seq_ = 1;
  std::map<std::string, Entry> jobs_;  // by id ("job-0001" sorts in submission order)
  std::map<int64_t, Watcher> watchers_;
  int64_t next_watch_id_ = 1;
  Listener listener_;
};

// The JobResult of a finished job.
v1::JobResult ResultOf(const v1::Job& job);

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_JOB_MANAGER_H_
