#include "process_harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

extern char** environ;

namespace pcp::testing {
namespace {

absl::Status ErrnoError(absl::string_view what, int err) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(err)));
}

std::string ReadFrom(const std::string& path, size_t from) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  if (size < 0 || static_cast<size_t>(size) <= from) return "";
  in.seekg(static_cast<std::streamoff>(from));
  std::string text(static_cast<size_t>(size) - from, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Process>> Process::Start(ProcessOptions options) {
  if (options.log_path.empty()) return absl::InvalidArgumentError("ProcessOptions.log_path is empty");
  if (access(options.binary.c_str(), X_OK) != 0) {
    return ErrnoError(absl::StrCat("cannot execute '", options.binary, "'"), errno);
  }
  // Everything the child needs is prepared before fork: after fork in a threaded process
  // (gRPC's threads) only async-signal-safe calls are allowed until exec.
  std::vector<std::string> argv_storage = {options.binary};
  argv_storage.insert(argv_storage.end(), options.args.begin(), options.args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_storage) argv.push_back(arg.data());
  argv.push_back(nullptr);

  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) {
    absl::string_view entry(*e);
    bool overridden = false;
    for (const auto& [name, value] : options.env) {
      if (absl::StartsWith(entry, absl::StrCat(name, "="))) overridden = true;
    }
    if (!overridden) env_storage.emplace_back(entry);
  }
  for (const auto& [name, value] : options.env) env_storage.push_back(absl::StrCat(name, "=", value));
  std::vector<char*> envp;
  for (std::string& entry : env_storage) envp.push_back(entry.data());
  envp.push_back(nullptr);

  int log_fd = open(options.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return ErrnoError(absl::StrCat("opening log '", options.log_path, "'"), errno);
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int exec_pipe[2];
  if (null_fd < 0 || pipe2(exec_pipe, O_CLOEXEC) != 0) {
    int err = errno;
    close(log_fd);
    if (null_fd >= 0) close(null_fd);
    return ErrnoError("creating pipes", err);
  }
  const char* working_dir = options.working_dir.empty() ? nullptr : options.working_dir.c_str();
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(log_fd);
    close(null_fd);
    close(exec_pipe[0]);
    close(exec_pipe[1]);
    return ErrnoError("fork", err);
  }
  if (pid == 0) {
    // Child: die with the test, never outlive it as an orphan.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(null_fd, STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    // Signals blocked or ignored by the test's threads must not leak into the child.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    if (working_dir == nullptr || chdir(working_dir) == 0) execve(argv[0], argv.data(), envp.data());
    int err = errno;
    ssize_t ignored = write(exec_pipe[1], &err, sizeof(err));
    (void)ignored;
    _exit(127);
  }
  close(log_fd);
  close(null_fd);
  close(exec_pipe[1]);
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(exec_pipe[0], &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  close(exec_pipe[0]);
  if (n > 0) {
    int status;
    waitpid(pid, &status, 0);
    return ErrnoError(absl::StrCat("exec '", options.binary, "'"), child_errno);
  }
  return std::unique_ptr<Process>(new Process(std::move(options), pid));
}

Process::~Process() {
  absl::StatusOr<int> status = Stop(absl::Seconds(5));
  (void)status;
}

std::string Process::name() const {
  return absl::StrCat(std::filesystem::path(options_.binary).filename().string(), "[", pid_, "]");
}

bool Process::Running() {
  if (exit_status_.has_value()) return false;
  int status;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_status_ = status;
    return false;
  }
  return r == 0;
}

absl::Status Process::Signal(int signal) {
  if (!Running()) return absl::OkStatus();
  if (kill(pid_, signal) != 0) return ErrnoError(absl::StrCat("kill ", name()), errno);
  return absl::OkStatus();
}

absl::StatusOr<int> Process::Wait(absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  while (Running()) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(name(), " still running after ", absl::FormatDuration(timeout)));
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  return *exit_status_;
}

absl::StatusOr<int> Process::Stop(absl::Duration grace) {
  if (!Running()) return *exit_status_;
  (void)kill(pid_, SIGTERM);
  if (absl::StatusOr<int> status = Wait(grace); status.ok()) return status;
  (void)kill(pid_, SIGKILL);
  return Wait(absl::Seconds(30));
}

std::string Process::Log() const { return ReadFrom(options_.log_path, 0); }

size_t Process::LogSize() const {
  std::error_code ec;
  auto size = std::filesystem::file_size(options_.log_path, ec);
  return ec ? 0 : static_cast<size_t>(size);
}

std::string Process::LogTail(int lines) const {
  std::string log = Log();
  size_t pos = log.size();
  for (int i = 0; i <= lines && pos > 0; ++i) {
    size_t nl = log.rfind('\n', pos - 1);
    if (nl == std::string::npos) {
      pos = 0;
      break;
    }
    pos = nl;
    if (i == lines) ++pos;
  }
  return log.substr(pos);
}

absl::StatusOr<std::string> Process::WaitForLine(const std::function<bool(absl::string_view)>& match,
                                                 absl::string_view what, absl::Duration timeout, size_t from) {
  absl::Time deadline = absl::Now() + timeout;
  while (true) {
    bool running = Running();  // before reading: a line written before exit is still seen
    std::string text = ReadFrom(options_.log_path, from);
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      if (match(line)) return std::string(line);
    }
    if (!running) {
      return absl::FailedPreconditionError(absl::StrCat(name(), " ", DescribeWaitStatus(*exit_status_),
                                                        " before logging ", what, "; log tail:\n", LogTail()));
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat("no ", what, " from ", name(), " within ",
                                                      absl::FormatDuration(timeout), "; log tail:\n", LogTail()));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

absl::StatusOr<std::string> Process::WaitForLog(absl::string_view needle, absl::Duration timeout, size_t from) {
  std::string n(needle);
  return WaitForLine([&n](absl::string_view line) { return absl::StrContains(line, n); },
                     absl::StrCat("'", needle, "'"), timeout, from);
}

absl::StatusOr<std::string> Process::WaitForLogRegex(const std::string& pattern, absl::Duration timeout, size_t from) {
  std::regex re(pattern);
  return WaitForLine([&re](absl::string_view line) { return std::regex_search(line.begin(), line.end(), re); },
                     absl::StrCat("a line matching /", pattern, "/"), timeout, from);
}

int PickFreePort() {
  static std::mutex mu;
  static std::set<int> handed_out;
  std::lock_guard<std::mutex> lock(mu);
  for (int attempt = 0; attempt < 100; ++attempt) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    int port = 0;
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin_port);
    }
    close(fd);
    if (port != 0 && handed_out.insert(port).second) return port;
  }
  return 0;
}

absl::Status WaitForPort(int port, absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    bool ok = fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    if (fd >= 0) close(fd);
    if (ok) return absl::OkStatus();
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("nothing listens on 127.0.0.1:", port, " after ", absl::FormatDuration(timeout)));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

namespace {

// The text of a /proc file, "" when it cannot be read: a process that exits meanwhile makes
// the read fail with ESRCH, which libstdc++'s filebuf throws as std::ios_base::failure.
std::string ReadProcFile(const std::string& path) {
  std::ifstream in(path);
  try {
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace

bool PidAlive(pid_t pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno != EPERM) return false;
  const std::string text = ReadProcFile(absl::StrCat("/proc/", pid, "/stat"));
  size_t close_paren = text.rfind(')');
  if (close_paren == std::string::npos || close_paren + 2 >= text.size()) return false;
  char state = text[close_paren + 2];
  return state != 'Z' && state != 'X';
}

std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string text = ReadProcFile(entry.path() / "stat");
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses; the last ')' ends it.
    size_t close_paren = text.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::istringstream rest(text.substr(close_paren + 1));
    char state = 0;
    pid_t ppid = 0;
    if (rest >> state >> ppid && ppid == parent && state != 'Z' && state != 'X') {
      children.push_back(static_cast<pid_t>(std::stol(name)));
    }
  }
  return children;
}

absl::Status WaitForPidGone(pid_t pid, absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  while (PidAlive(pid)) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("process ", pid, " still alive after ", absl::FormatDuration(timeout)));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::OkStatus();
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exited with ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return absl::StrCat("killed by signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  }
  return absl::StrCat("wait status ", status);
}

absl::StatusOr<TempDir> TempDir::Create(absl::string_view prefix) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string pattern = absl::StrCat(base != nullptr && base[0] != '\0' ? base : "/tmp", "/", prefix, "-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) return ErrnoError(absl::StrCat("mkdtemp ", pattern), errno);
  return TempDir(pattern);
}

TempDir::~TempDir() {
  if (path_.empty() || std::getenv("PCP_KEEP_TEST_DIRS") != nullptr) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace pcp::testing
