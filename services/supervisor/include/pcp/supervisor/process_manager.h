// Keeps one worker process alive: starts it, restarts it on any exit with exponential
// backoff and jitter, and carries out restart / drain / shutdown requests.
//
//   ProcessManagerOptions options;
//   options.spawn = {.path = "/usr/bin/pcp-worker",
//                    .args = {"--shepherd=localhost:7070", "--supervisor_id=node-1"}};
//   options.backoff = {.initial = absl::Seconds(1), .multiplier = 2, .max = absl::Minutes(1)};
//   PCP_ASSIGN_OR_RETURN(std::unique_ptr<ProcessManager> manager,
//                        ProcessManager::Start(options));
//   WorkerStatus now = manager->Status();          // pid, state, restarts, last exit, ...
//   manager->Drain(absl::ZeroDuration(),           // 0 = options.grace
//                  [](absl::Status s, std::string msg) { /* acknowledged */ });
//   manager->Shutdown(absl::ZeroDuration());       // blocks until the worker is gone
//
// Lifecycle of the worker (WorkerState mirrors control.proto's WorkerProcessState):
//   RUNNING --exit, no progress--> BACKOFF --delay--> RUNNING   whatever the exit code
//   RUNNING --exit after progress--> RUNNING          (at once; the backoff starts over)
//   RUNNING --Restart--> RESTARTING --exit--> RUNNING (at once, no backoff)
//   RUNNING --Drain--> DRAINING --exit--> STOPPED --Restart--> RUNNING
// Stopping a worker = SIGTERM to its process group, then SIGKILL once the grace period has
// passed.
//
// Crash loop or progress: each worker gets the write end of a pipe (PCP_PROGRESS_FD, see
// pcp/base/progress_report.h) and writes a byte per completed round. A worker that exits
// having reported progress did useful work, so it is restarted at once, however short its
// life (rounds may take seconds); one that dies before any report is in a crash loop, and
// each such exit lengthens the backoff. The backoff also starts over from
// `backoff.initial` when a worker without reports had been up for at least `healthy_after`
// (e.g. a worker that waited long for its first round).
//
// Threading: one loop thread owns the child (it spawns it, so the child's PDEATHSIG is tied
// to it; see child_process.h). Every public method is thread-safe and never blocks on the
// worker, except Shutdown and the destructor. `done` callbacks and the change listener run
// on the loop thread: they must return quickly and must not call Shutdown.
#ifndef PCP_SUPERVISOR_PROCESS_MANAGER_H_
#define PCP_SUPERVISOR_PROCESS_MANAGER_H_

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "pcp/base/backoff.h"
#include "pcp/supervisor/child_process.h"

namespace pcp::supervisor {

enum class WorkerState {
  kRunning,     // a worker process is alive
  kRestarting,  // being stopped in order to be started again at once
  kBackoff,     // exited; waiting before the next start
  kDraining,    // being stopped, and will stay stopped
  kStopped,     // not running and not restarting
};

// "running", "restarting", "backoff", "draining", "stopped".
absl::string_view WorkerStateName(WorkerState state);

// A snapshot of the worker process, as reported in heartbeats.
struct WorkerStatus {
  WorkerState state = WorkerState::kStopped;
  pid_t pid = 0;                  // the live worker; 0 when none
  uint64_t incarnation = 0;       // processes started so far (1 for the first)
  uint32_t restarts = 0;          // incarnation - 1, or 0 before the first start
  bool exited_before = false;     // false until a worker has exited
  ExitInfo last_exit;             // how the previous worker ended
  absl::Duration uptime;          // of the live worker; 0 when none
  uint64_t progress_reports = 0;  // rounds the live worker reported done; 0 when none
  absl::Duration backoff_left;    // BACKOFF: time until the next start
  absl::Duration backoff_delay;   // BACKOFF: the whole delay chosen for this wait
  std::string last_spawn_error;   // why the last start failed; empty if it did not
  uint64_t changes = 0;           // +1 on every state change (for waiting on changes)
};

struct ProcessManagerOptions {
  // The worker binary and its arguments. The manager adds PCP_WORKER_INCARNATION=<n> to
  // the worker's environment (n = WorkerStatus::incarnation of that process), and
  // PCP_PROGRESS_FD with its progress pipe.
  SpawnOptions spawn;
  BackoffOptions backoff;
  // A worker up at least this long is healthy: its exit restarts the backoff from `initial`
  // (a worker that reported progress is restarted at once anyway).
  absl::Duration healthy_after = absl::Seconds(60);
  // Time between SIGTERM and SIGKILL when a request gives none.
  absl::Duration grace = absl::Seconds(10);
  // Reproducible jitter for tests; 0 = random.
  uint64_t seed = 0;
  // Start in STOPPED instead of starting the worker at once.
  bool start_stopped = false;
};

// INVALID_ARGUMENT naming the bad option.
[[nodiscard]] absl::Status ValidateProcessManagerOptions(const ProcessManagerOptions& options);

class ProcessManager {
 public:
  // Called when a request has been carried out (OK) or could not be (an error saying why);
  // `message` describes what happened, e.g. "worker 4121 exited (signal 15) after 1.2 s".
  using Done = std::function<void(absl::Status status, std::string message)>;

  // Validates the options (the binary must exist and be executable), starts the loop
  // thread and, unless start_stopped, the first worker.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ProcessManager>> Start(ProcessManagerOptions options);
  // Shutdown(options.grace).
  ~ProcessManager();

  WorkerStatus Status() const;
  // Waits until `predicate(Status())` holds or `timeout` passes; returns the last status
  // and whether the predicate held.
  bool WaitFor(const std::function<bool(const WorkerStatus&)>& predicate, absl::Duration timeout,
               WorkerStatus* last = nullptr) const;

  // Stops the worker (if one runs) and starts a new one at once, without backoff; also
  // starts a drained or backing-off worker. `done` runs once the new process runs. A later
  // Drain or Shutdown supersedes it (`done` gets ABORTED).
  void Restart(absl::Duration grace, Done done);
  // Stops the worker and keeps it stopped until Restart. `done` runs once it has exited
  // (at once if none runs).
  void Drain(absl::Duration grace, Done done);
  // Stops the worker, waits for it to exit, and ends the loop thread. Blocks; idempotent.
  // Afterwards requests fail with FAILED_PRECONDITION.
  void Shutdown(absl::Duration grace);

  // `listener` runs on the loop thread after every state change (replaces the previous one).
  void SetChangeListener(std::function<void()> listener);

 private:
  struct Request;
  class Loop;
  explicit ProcessManager(ProcessManagerOptions options);

  std::unique_ptr<Loop> loop_;
  std::thread thread_;
  std::once_flag joined_;
};

}  // namespace pcp::supervisor

#endif  // PCP_SUPERVISOR_PROCESS_MANAGER_H_
