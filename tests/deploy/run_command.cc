#include "run_command.h"

#include <sys/wait.h>

#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "process_harness.h"

namespace pcp::testing {

absl::StatusOr<CommandOutput> RunCommand(const std::string& binary, const std::vector<std::string>& args,
                                         const std::string& log_path, absl::Duration timeout) {
  std::error_code ec;
  std::filesystem::remove(log_path, ec);
  absl::StatusOr<std::unique_ptr<Process>> process =
      Process::Start({.binary = binary, .args = args, .log_path = log_path});
  if (!process.ok()) return process.status();
  absl::StatusOr<int> status = (*process)->Wait(timeout);
  if (!status.ok()) {
    (*process)->Stop(absl::Seconds(2)).IgnoreError();
    return absl::DeadlineExceededError(absl::StrCat(binary, " ", absl::StrJoin(args, " "), ": did not finish in ",
                                                    absl::FormatDuration(timeout), "; output:\n",
                                                    (*process)->LogTail(20)));
  }
  CommandOutput out;
  out.exit_code = WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
  out.output = (*process)->Log();
  return out;
}

}  // namespace pcp::testing
