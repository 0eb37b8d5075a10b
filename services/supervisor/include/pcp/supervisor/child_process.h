// One child process: spawned with fork/exec, signalled, and reaped through a pidfd.
//
//   PCP_ASSIGN_OR_RETURN(ChildProcess child,
//                        ChildProcess::Spawn({.path = "/usr/bin/pcp-worker",
//                                             .args = {"--shepherd=host:7070"}}));
//   PCP_RETURN_IF_ERROR(child.Signal(SIGTERM));
//   std::optional<ExitInfo> exit = child.WaitFor(absl::Seconds(10));
//   if (!exit) child.Kill();   // SIGKILL and reap
//
// Guarantees, so that a supervisor never leaves an orphan:
// - The child runs with PR_SET_PDEATHSIG = SIGKILL: if the spawning *thread* ends (the
//   supervisor crashes or is SIGKILLed), the kernel kills the child. Call Spawn from a thread
//   that lives as long as the child (ProcessManager uses its own loop thread).
// - The child leads its own process group, and Signal() signals the whole group, so a
//   worker's own helpers go with it and a Ctrl-C on the supervisor's terminal reaches only
//   the supervisor (which forwards SIGTERM).
// - The child starts with an empty signal mask and default signal dispositions, and with
//   every inherited descriptor except 0, 1, 2 and SpawnOptions::keep_fds closed on exec.
// - Destroying a ChildProcess that has not been reaped SIGKILLs and reaps it.
//
// A failed exec (missing binary, no permission) is reported by Spawn as an error, not as a
// child that exits with 127. Not thread-safe: one owner at a time (move-only).
#ifndef PCP_SUPERVISOR_CHILD_PROCESS_H_
#define PCP_SUPERVISOR_CHILD_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace pcp::supervisor {

// How a child process ended, as control.proto's WorkerProcess reports it.
struct ExitInfo {
  // Exit status (0–255) of a process that exited by itself; -1 if a signal killed it.
  int exit_code = 0;
  // The signal that killed it; 0 if it exited by itself.
  int signal = 0;

  // "exit code 3" or "signal 9 (Killed)".
  std::string ToString() const;
};

struct SpawnOptions {
  std::string path;               // executable; used as argv[0]
  std::vector<std::string> args;  // argv[1..]
  // Added to (or replacing entries of) the supervisor's own environment.
  std::vector<std::pair<std::string, std::string>> env;
  // Descriptors of the supervisor that the child inherits, under the same numbers (every
  // other one is closed on exec). The caller keeps its own copies open until Spawn returns.
  std::vector<int> keep_fds;
};

class ChildProcess {
 public:
  [[nodiscard]] static absl::StatusOr<ChildProcess> Spawn(const SpawnOptions& options);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  // Becomes readable (poll POLLIN) once the child has exited. -1 after reaping.
  int pidfd() const { return pidfd_; }
  bool reaped() const { return reaped_; }
  std::chrono::steady_clock::time_point started() const { return started_; }

  // Sends `sig` to the child's process group. OK if the child has already exited but is not
  // yet reaped; FAILED_PRECONDITION after reaping.
  absl::Status Signal(int sig);
  // Reaps the child if it has exited; never blocks.
  std::optional<ExitInfo> TryReap();
  // Waits up to `timeout` for the child to exit and reaps it.
  std::optional<ExitInfo> WaitFor(absl::Duration timeout);
  // SIGKILLs the process group and reaps the child (blocks until it is gone).
  ExitInfo Kill();

 private:
  ChildProcess(pid_t pid, int pidfd);
  void Close();

  pid_t pid_ = -1;
  int pidfd_ = -1;
  bool reaped_ = true;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace pcp::supervisor

#endif  // PCP_SUPERVISOR_CHILD_PROCESS_H_
