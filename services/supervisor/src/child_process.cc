#include "pcp/supervisor/child_process.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

extern char** environ;

namespace pcp::supervisor {
namespace {

ExitInfo FromWaitStatus(int status) {
  if (WIFSIGNALED(status)) return {.exit_code = -1, .signal = WTERMSIG(status)};
  if (WIFEXITED(status)) return {.exit_code = WEXITSTATUS(status), .signal = 0};
  return {.exit_code = -1, .signal = 0};
}

// The child's side of Spawn, between fork and exec: only async-signal-safe calls (the
// supervisor has gRPC threads, and any lock they held at fork time stays held here).
[[noreturn]] void ExecChild(pid_t parent, int error_fd, const char* path, char* const* argv, char* const* envp,
                            const int* keep_fds, size_t num_keep_fds) {
  // Die with the thread that spawned us; then close the race where the parent died before
  // prctl took effect.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(126);
  setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, nullptr);
  }
  // Descriptors the supervisor opened without O_CLOEXEC must not leak into the worker.
  if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    for (int fd = 3; fd < 4096; ++fd) fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  for (size_t i = 0; i < num_keep_fds; ++i) fcntl(keep_fds[i], F_SETFD, 0);
  execve(path, argv, envp);
  int error = errno;
  ssize_t ignored = write(error_fd, &error, sizeof error);
  (void)ignored;
  _exit(127);
}

std::vector<std::string> BuildEnvironment(const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    absl::string_view item(*entry);
    bool replaced = false;
    for (const auto& [key, value] : extra) {
      if (item.size() > key.size() && item.substr(0, key.size()) == key && item[key.size()] == '=') {
        replaced = true;
        break;
      }
    }
    if (!replaced) env.emplace_back(item);
  }
  for (const auto& [key, value] : extra) env.push_back(absl::StrCat(key, "=", value));
  return env;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::string ExitInfo::ToString() const {
  if (signal != 0) return absl::StrCat("signal ", signal, " (", strsignal(signal), ")");
  return absl::StrCat("exit code ", exit_code);
}

absl::StatusOr<ChildProcess> ChildProcess::Spawn(const SpawnOptions& options) {
  if (options.path.empty()) return absl::InvalidArgumentError("no executable to start");
  std::vector<std::string> argv_strings;
  argv_strings.push_back(options.path);
  argv_strings.insert(argv_strings.end(), options.args.begin(), options.args.end());
  std::vector<std::string> env_strings = BuildEnvironment(options.env);
  std::vector<char*> argv = Pointers(argv_strings);
  std::vector<char*> envp = Pointers(env_strings);

  int error_pipe[2];
  if (pipe2(error_pipe, O_CLOEXEC) != 0) {
    return absl::ErrnoToStatus(errno, "creating the exec error pipe");
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    int error = errno;
    close(error_pipe[0]);
    close(error_pipe[1]);
    return absl::ErrnoToStatus(error, absl::StrCat("fork for '", options.path, "'"));
  }
  if (pid == 0) {
    ExecChild(parent, error_pipe[1], options.path.c_str(), argv.data(), envp.data(), options.keep_fds.data(),
              options.keep_fds.size());
  }

  close(error_pipe[1]);
  setpgid(pid, pid);  // also done by the child; whichever runs first wins, both agree
  int exec_error = 0;
  ssize_t n;
  do {
    n = read(error_pipe[0], &exec_error, sizeof exec_error);
  } while (n < 0 && errno == EINTR);
  close(error_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof exec_error)) {
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return absl::ErrnoToStatus(exec_error, absl::StrCat("starting '", options.path, "'"));
  }
  // Not reaped yet, so the pid cannot have been reused: pidfd_open is race-free here.
  // Via syscall(): Debian 12's <sys/pidfd.h> lacks extern "C" and does not link from C++.
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  return ChildProcess(pid, pidfd);
}

ChildProcess::ChildProcess(pid_t pid, int pidfd)
    : pid_(pid), pidfd_(pidfd), reaped_(false), started_(std::chrono::steady_clock::now()) {}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::exchange(other.pidfd_, -1)),
      reaped_(std::exchange(other.reaped_, true)),
      started_(other.started_) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    Close();
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::exchange(other.pidfd_, -1);
    reaped_ = std::exchange(other.reaped_, true);
    started_ = other.started_;
  }
  return *this;
}

ChildProcess::~ChildProcess() { Close(); }

void ChildProcess::Close() {
  if (!reaped_) Kill();
  if (pidfd_ >= 0) close(pidfd_);
  pidfd_ = -1;
}

absl::Status ChildProcess::Signal(int sig) {
  if (reaped_) {
    return absl::FailedPreconditionError(absl::StrCat("process ", pid_, " already reaped"));
  }
  // An unreaped child keeps its pid and process group id reserved, so neither can name a
  // stranger. ESRCH for the group means only a zombie is left: nothing to signal.
  if (kill(-pid_, sig) == 0 || errno == ESRCH) return absl::OkStatus();
  if (kill(pid_, sig) == 0 || errno == ESRCH) return absl::OkStatus();
  return absl::ErrnoToStatus(errno, absl::StrCat("signalling process ", pid_));
}

std::optional<ExitInfo> ChildProcess::TryReap() {
  if (reaped_) return std::nullopt;
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r != pid_) return std::nullopt;
  reaped_ = true;
  if (pidfd_ >= 0) close(pidfd_);
  pidfd_ = -1;
  return FromWaitStatus(status);
}

std::optional<ExitInfo> ChildProcess::WaitFor(absl::Duration timeout) {
  const auto deadline = std::chrono::steady_clock::now() + absl::ToChronoMilliseconds(timeout);
  while (!reaped_) {
    if (std::optional<ExitInfo> info = TryReap()) return info;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    if (pidfd_ >= 0) {
      struct pollfd pfd = {.fd = pidfd_, .events = POLLIN, .revents = 0};
      poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    } else {
      std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(10)));
    }
  }
  return std::nullopt;
}

ExitInfo ChildProcess::Kill() {
  if (reaped_) return {};
  (void)Signal(SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  if (pidfd_ >= 0) close(pidfd_);
  pidfd_ = -1;
  return FromWaitStatus(status);
}

}  // namespace pcp::supervisor
