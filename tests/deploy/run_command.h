// Test-only: run a command to completion and collect its exit code and output.
//
//   absl::StatusOr<CommandOutput> r = RunCommand("/usr/bin/promtool", {"check", "rules", path},
//                                                dir + "/promtool.log");
//   ASSERT_TRUE(r.ok()) << r.status();
//   EXPECT_EQ(r->exit_code, 0) << r->output;
//
// The command runs as a child process (ProcessHarness: stopped by PID if it outlives
// `timeout`); stdout and stderr go, interleaved, to `log_path` and come back in `output`.
#ifndef PCP_TESTS_DEPLOY_RUN_COMMAND_H_
#define PCP_TESTS_DEPLOY_RUN_COMMAND_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace pcp::testing {

struct CommandOutput {
  int exit_code = -1;  // -1: killed by a signal (or by the timeout)
  std::string output;  // stdout and stderr, interleaved
};

// Runs `binary` (an absolute path) with `args`; fails only if it cannot be started or does
// not finish within `timeout`. `log_path` is truncated first.
absl::StatusOr<CommandOutput> RunCommand(const std::string& binary, const std::vector<std::string>& args,
                                         const std::string& log_path, absl::Duration timeout = absl::Seconds(60));

}  // namespace pcp::testing

#endif  // PCP_TESTS_DEPLOY_RUN_COMMAND_H_
