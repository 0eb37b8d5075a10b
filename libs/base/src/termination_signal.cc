#include "pcp/base/termination_signal.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"

namespace pcp {
namespace {

int g_pipe[2] = {-1, -1};
volatile sig_atomic_t g_signal = 0;

std::mutex& Mu() {
  static std::mutex* mu = new std::mutex;
  return *mu;
}
std::string& Reason() {  // guarded by Mu()
  static std::string* reason = new std::string;
  return *reason;
}

void Wake() {
  const char byte = 1;
  [[maybe_unused]] ssize_t n = write(g_pipe[1], &byte, 1);
}

void OnSignal(int sig) {
  const int saved = errno;
  if (g_signal == 0) g_signal = sig;
  Wake();
  errno = saved;
}

// Moves a recorded signal into the reason (the handler cannot take the lock).
void TakeSignalLocked() {
  if (Reason().empty() && g_signal != 0) Reason() = g_signal == SIGINT ? "SIGINT" : "SIGTERM";
}

}  // namespace

absl::Status InstallTerminationHandler() {
  if (g_pipe[0] >= 0) return absl::OkStatus();
  if (pipe2(g_pipe, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe2: ", std::strerror(errno)));
  }
  fcntl(g_pipe[1], F_SETFL, O_NONBLOCK);
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int sig : {SIGTERM, SIGINT}) {
    if (sigaction(sig, &action, nullptr) != 0) {
      return absl::InternalError(absl::StrCat("sigaction(", sig, "): ", std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

std::string WaitForTermination() {
  while (true) {
    {
      std::lock_guard<std::mutex> lock(Mu());
      TakeSignalLocked();
      if (!Reason().empty()) {
        // Pass the wake-up on: another thread may be blocked in read() below.
        Wake();
        return Reason();
      }
    }
    char byte;
    const ssize_t n = read(g_pipe[0], &byte, 1);
    if (n < 0 && errno != EINTR) return "termination pipe failed";
  }
}

void RequestTermination(absl::string_view reason) {
  {
    std::lock_guard<std::mutex> lock(Mu());
    TakeSignalLocked();
    if (Reason().empty()) Reason() = std::string(reason.empty() ? "requested" : reason);
  }
  Wake();
}

}  // namespace pcp
