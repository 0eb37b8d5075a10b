// pcp_test_child: a stand-in worker for the supervisor's tests (never shipped).
//
//   pcp_test_child [--log=PATH] [--exit_after_ms=N] [--exit_code=C] [--ignore_sigterm]
//                  [--term_delay_ms=N] [--progress_incarnation=N] [anything else, ignored]
//
// Appends one line per event to PATH (or $PCP_TEST_CHILD_LOG):
//   "start <pid> <incarnation> <args...>", "progress <pid>", "sigterm <pid>", "exit <pid> <code>".
// --progress_incarnation=N: right after starting, report one completed round to the
// supervisor (pcp::ReportProgress, as pcp-worker does) if $PCP_WORKER_INCARNATION is N
// (0: in every incarnation).
// Runs until SIGTERM (then waits term_delay_ms and exits 0) or until exit_after_ms passes
// (then exits with exit_code). Unknown arguments (e.g. the --shepherd and --supervisor_id
// that pcp-supervisor passes) are accepted, and logged with "start".
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "pcp/base/progress_report.h"

namespace {

volatile sig_atomic_t got_sigterm = 0;

void OnSigterm(int) { got_sigterm = 1; }

std::string log_path;

void Log(const std::string& line) {
  if (log_path.empty()) return;
  int fd = open(log_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  std::string text = line + "\n";
  ssize_t ignored = write(fd, text.data(), text.size());
  (void)ignored;
  close(fd);
}

bool Flag(const char* arg, const char* name, std::string* value) {
  size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) != 0) return false;
  if (arg[n] == '\0') {
    *value = "";
    return true;
  }
  if (arg[n] != '=') return false;
  *value = arg + n + 1;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  long exit_after_ms = -1;
  int exit_code = 0;
  bool ignore_sigterm = false;
  long term_delay_ms = 0;
  long progress_incarnation = -1;
  if (const char* env = std::getenv("PCP_TEST_CHILD_LOG")) log_path = env;
  std::string args;
  for (int i = 1; i < argc; ++i) {
    std::string value;
    args += std::string(" ") + argv[i];
    if (Flag(argv[i], "--log", &value))
      log_path = value;
    else if (Flag(argv[i], "--exit_after_ms", &value))
      exit_after_ms = std::atol(value.c_str());
    else if (Flag(argv[i], "--exit_code", &value))
      exit_code = std::atoi(value.c_str());
    else if (Flag(argv[i], "--ignore_sigterm", &value))
      ignore_sigterm = true;
    else if (Flag(argv[i], "--term_delay_ms", &value))
      term_delay_ms = std::atol(value.c_str());
    else if (Flag(argv[i], "--progress_incarnation", &value))
      progress_incarnation = std::atol(value.c_str());
  }
  // Handler first, then "start": a test that saw "start" may signal at once.
  signal(SIGTERM, ignore_sigterm ? SIG_IGN : OnSigterm);
  const char* incarnation = std::getenv("PCP_WORKER_INCARNATION");
  Log("start " + std::to_string(getpid()) + " " + (incarnation ? incarnation : "0") + args);
  if (progress_incarnation == 0 ||
      (progress_incarnation > 0 && incarnation != nullptr && std::atol(incarnation) == progress_incarnation)) {
    pcp::ReportProgress();
    Log("progress " + std::to_string(getpid()));
  }

  const auto start = std::chrono::steady_clock::now();
  while (true) {
    if (got_sigterm) {
      Log("sigterm " + std::to_string(getpid()));
      std::this_thread::sleep_for(std::chrono::milliseconds(term_delay_ms));
      Log("exit " + std::to_string(getpid()) + " 0");
      return 0;
    }
    if (exit_after_ms >= 0 && std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(exit_after_ms)) {
      Log("exit " + std::to_string(getpid()) + " " + std::to_string(exit_code));
      return exit_code;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}
