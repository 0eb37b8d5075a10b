#include "pcp/supervisor_testing/process_testing.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace pcp::supervisor_testing {

const char* const kTestChildPath = PCP_TEST_CHILD_PATH;
const char* const kSupervisorPath = PCP_SUPERVISOR_PATH;

std::string MakeTempDir(absl::string_view name) {
  static std::atomic<int> counter{0};
  const char* base = std::getenv("TEST_TMPDIR");
  std::string dir = absl::StrCat(base != nullptr ? base : "/tmp", "/pcp_", name, "_", getpid(), "_", counter++);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::vector<std::string> LogLines(const std::string& path, absl::string_view prefix) {
  std::vector<std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (absl::string_view(line).substr(0, prefix.size()) == prefix) out.push_back(line);
  }
  return out;
}

std::string Field(const std::string& line, int index) {
  std::vector<std::string> parts = absl::StrSplit(line, ' ', absl::SkipEmpty());
  return index >= 0 && index < static_cast<int>(parts.size()) ? parts[index] : "";
}

bool WaitUntil(const std::function<bool()>& predicate, absl::Duration timeout) {
  const auto deadline = std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
  while (true) {
    if (predicate()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool ProcessAlive(pid_t pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (stat.empty()) return false;
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return true;
  const char state = stat[paren + 2];
  return state != 'Z' && state != 'X';
}

absl::StatusOr<supervisor::ChildProcess> StartProcess(const std::vector<std::string>& argv,
                                                      const std::string& stderr_path) {
  if (argv.empty()) return absl::InvalidArgumentError("no command");
  if (stderr_path.empty()) {
    return supervisor::ChildProcess::Spawn(
        {.path = argv[0], .args = std::vector<std::string>(argv.begin() + 1, argv.end())});
  }
  // sh redirects stderr, then execs the command in its place (same pid, same group).
  supervisor::SpawnOptions options{.path = "/bin/sh",
                                   .args = {"-c", "exec \"$@\" 2>>\"$PCP_TEST_STDERR\"", "sh"},
                                   .env = {{"PCP_TEST_STDERR", stderr_path}}};
  options.args.insert(options.args.end(), argv.begin(), argv.end());
  return supervisor::ChildProcess::Spawn(options);
}

std::vector<pid_t> StartedPids(const std::string& log_path) {
  std::vector<pid_t> pids;
  for (const std::string& line : LogLines(log_path, "start ")) {
    pids.push_back(static_cast<pid_t>(std::atoi(Field(line, 1).c_str())));
  }
  return pids;
}

int PickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  int port = 0;
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

}  // namespace pcp::supervisor_testing
