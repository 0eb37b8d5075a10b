// Test-only harness for end-to-end tests with real processes: start a binary with
// arguments, capture its stdout and stderr in a log file, wait for a log line or a port,
// send it real signals, stop it by PID (SIGTERM, then SIGKILL after a grace period).
//
//   int port = PickFreePort();
//   PCP_ASSERT_OK_AND_ASSIGN(auto shepherd, Process::Start({
//       .binary = PCP_SHEPHERD_BINARY,
//       .args = {absl::StrCat("--listen=127.0.0.1:", port)},
//       .log_path = dir + "/shepherd.log"}));
//   ASSERT_TRUE(WaitForPort(port, absl::Seconds(20)).ok());
//   ...
//   shepherd->Signal(SIGKILL);                       // a real crash
//   absl::StatusOr<int> status = shepherd->Stop();   // SIGTERM, wait, SIGKILL if needed
//
// A started process is stopped when its Process object is destroyed (never leaked), and
// it gets SIGKILL from the kernel if the test process dies first (PR_SET_PDEATHSIG), so a
// crashed test leaves no orphans of its own children. Children are not waited for by
// anything else: the Process object owns the PID until it reaps it.
#ifndef PCP_TESTS_SERVICES_E2E_PROCESS_HARNESS_H_
#define PCP_TESTS_SERVICES_E2E_PROCESS_HARNESS_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace pcp::testing {

struct ProcessOptions {
  // Path of the executable (not searched in $PATH).
  std::string binary;
  // Arguments after argv[0].
  std::vector<std::string> args;
  // stdout and stderr both go here (appended; created if missing). Required.
  std::string log_path;
  // Extra environment variables ("NAME", "value"), on top of the test's own environment.
  std::vector<std::pair<std::string, std::string>> env;
  // Working directory of the child; empty = the test's.
  std::string working_dir;
};

// One child process, owned: destroying it stops it (SIGTERM, then SIGKILL).
class Process {
 public:
  // Forks and execs. Fails (with the reason) if the binary cannot be executed.
  static absl::StatusOr<std::unique_ptr<Process>> Start(ProcessOptions options);

  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process();

  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return options_.log_path; }
  // "pcp-shepherd[1234]" for messages.
  std::string name() const;

  // True while the process has not exited (reaps it when it has).
  bool Running();
  // Sends `signal` to the process (no-op once it has been reaped).
  absl::Status Signal(int signal);
  // Waits up to `timeout` for the process to exit by itself; returns its wait status.
  absl::StatusOr<int> Wait(absl::Duration timeout);
  // SIGTERM, waits up to `grace`, then SIGKILL and waits. Returns the wait status
  // (WIFEXITED/WIFSIGNALED apply). Idempotent: a second call returns the same status.
  absl::StatusOr<int> Stop(absl::Duration grace = absl::Seconds(10));
  // The wait status once reaped.
  std::optional<int> exit_status() const { return exit_status_; }

  // The log so far.
  std::string Log() const;
  // Waits until a log line (starting at byte `from`) contains `needle`; returns that line.
  // Fails early when the process exits before it appears, quoting the log's tail.
  absl::StatusOr<std::string> WaitForLog(absl::string_view needle, absl::Duration timeout, size_t from = 0);
  // As WaitForLog, for the first line matching an ECMAScript regular expression.
  absl::StatusOr<std::string> WaitForLogRegex(const std::string& pattern, absl::Duration timeout, size_t from = 0);
  // Bytes logged so far (pass as `from` to wait only for lines written after now).
  size_t LogSize() const;
  // The last `lines` lines of the log, for failure messages.
  std::string LogTail(int lines = 30) const;

 private:
  Process(ProcessOptions options, pid_t pid) : options_(std::move(options)), pid_(pid) {}
  absl::StatusOr<std::string> WaitForLine(const std::function<bool(absl::string_view)>& match, absl::string_view what,
                                          absl::Duration timeout, size_t from);

  ProcessOptions options_;
  pid_t pid_;
  std::optional<int> exit_status_;
};

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then released).
// Ports handed out by this process are not handed out twice.
int PickFreePort();

// Waits until something accepts TCP connections on 127.0.0.1:`port`.
absl::Status WaitForPort(int port, absl::Duration timeout);

// True if a process with this PID exists and is not a zombie (reads /proc/PID/stat), e.g.
// a grandchild (a supervisor's worker) that this test cannot wait for.
bool PidAlive(pid_t pid);

// PIDs of the live children of `parent` (from /proc/*/stat), e.g. a supervisor's worker.
std::vector<pid_t> ChildrenOf(pid_t parent);

// Waits until PidAlive(pid) is false.
absl::Status WaitForPidGone(pid_t pid, absl::Duration timeout);

// "exited with 0", "killed by signal 9 (Killed)" for a wait status.
std::string DescribeWaitStatus(int status);

// A fresh directory under $TEST_TMPDIR or /tmp ("pcp-e2e-XXXXXX"), removed with its
// contents when the object is destroyed unless $PCP_KEEP_TEST_DIRS is set.
class TempDir {
 public:
  static absl::StatusOr<TempDir> Create(absl::string_view prefix = "pcp-e2e");
  TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, "")) {}
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace pcp::testing

#endif  // PCP_TESTS_SERVICES_E2E_PROCESS_HARNESS_H_
