// Private: the shepherd's one decision-making thread. It takes events (workers joining,
// leaving, ready, results; jobs queued or cancelled) from a queue filled by gRPC and
// heartbeat threads, and drives the running job's JobRun: starting the next job when idle,
// advancing rounds, finishing, cancelling. Nothing it does blocks a gRPC thread. An exception
// out of a job (std::bad_alloc, ...) fails that job with the reason; the shepherd goes on.
//
//   Coordinator coordinator(&config, jobs.get(), &registry);
//   registry.SetSink(&coordinator);
//   jobs->SetListener([&] { coordinator.Wake(); });
//   coordinator.Start();
//   ...
//   coordinator.Stop();   // checkpoints a running job (it stays running, for resume)
#ifndef PCP_SHEPHERD_SRC_COORDINATOR_H_
#define PCP_SHEPHERD_SRC_COORDINATOR_H_

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "job_run.h"
#include "worker_registry.h"

namespace pcp::shepherd {

class Coordinator final : public WorkerEventSink {
 public:
  Coordinator(const ShepherdConfig* config, JobManager* jobs, WorkerRegistry* registry);
  ~Coordinator() override;

  void Start();
  // Stops the thread; a running job is checkpointed and stays RUNNING (resumed on restart).
  void Stop();
  // Jobs were queued or cancelled.
  void Wake();
  // Something the running job waits for happened (a background evaluation finished).
  void Nudge();

  struct Status {
    std::string active_job_id;
    uint32_t workers_in_round = 0;
  };
  Status status() const;
  // θ of the running job (or of the last job this process finished), or null.
  std::shared_ptr<const ParamsSnapshot> snapshot() const;

  // WorkerEventSink: queued for the coordinator's thread.
  void Post(WorkerEvent event) override;

 private:
  void Loop();
  void Handle(WorkerEvent& event);
  void MaybeStartJob();
  // The running job failed (an exception escaped it): record why, release its workers.
  void FailRun(const absl::Status& why);
  void PublishStatus();

  const ShepherdConfig* config_;
  JobManager* jobs_;
  WorkerRegistry* registry_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<WorkerEvent> events_;
  bool stop_ = false;
  bool jobs_changed_ = true;
  bool nudged_ = false;
  Status status_;
  std::shared_ptr<const ParamsSnapshot> snapshot_;
  std::thread thread_;

  // Coordinator thread only.
  std::map<WorkerSession*, std::shared_ptr<WorkerSession>> workers_;
  std::unique_ptr<JobRun> run_;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_COORDINATOR_H_
