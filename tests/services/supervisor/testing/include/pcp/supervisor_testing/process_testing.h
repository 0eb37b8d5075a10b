// Test-only helpers for tests that run real processes (supervisor, its stand-in worker).
//
//   std::string dir = MakeTempDir("drain");
//   ASSERT_TRUE(WaitUntil([&] { return !ProcessAlive(pid); }, absl::Seconds(5)));
//   std::vector<std::string> starts = LogLines(dir + "/child.log", "start ");
//
// Paths of the binaries under test come from the build (kTestChildPath, kSupervisorPath).
#ifndef PCP_SUPERVISOR_TESTING_PROCESS_TESTING_H_
#define PCP_SUPERVISOR_TESTING_PROCESS_TESTING_H_

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "pcp/supervisor/child_process.h"

namespace pcp::supervisor_testing {

// pcp_test_child (see tests/services/supervisor/test_child.cc) and pcp-supervisor.
extern const char* const kTestChildPath;
extern const char* const kSupervisorPath;

// A new empty directory under $TEST_TMPDIR (or /tmp), named after `name`.
std::string MakeTempDir(absl::string_view name);

// Lines of the file at `path` that start with `prefix` (none if the file is missing).
std::vector<std::string> LogLines(const std::string& path, absl::string_view prefix = "");

// The whitespace-separated field `index` of `line` ("" if absent).
std::string Field(const std::string& line, int index);

// Polls `predicate` every 10 ms until it holds (true) or `timeout` passes (false).
bool WaitUntil(const std::function<bool()>& predicate, absl::Duration timeout);

// True if `pid` names a live process (a zombie counts as dead).
bool ProcessAlive(pid_t pid);

// Starts `argv` (argv[0] = the executable) as a child process in its own process group
// that the kernel kills if the test dies; its stderr is appended to `stderr_path` when that
// is not empty (the test's stderr otherwise).
absl::StatusOr<supervisor::ChildProcess> StartProcess(const std::vector<std::string>& argv,
                                                      const std::string& stderr_path = "");

// The worker pids that pcp_test_child logged in "start" lines, in order.
std::vector<pid_t> StartedPids(const std::string& log_path);

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then released).
int PickFreePort();

}  // namespace pcp::supervisor_testing

#endif  // PCP_SUPERVISOR_TESTING_PROCESS_TESTING_H_
