#include "pcp/base/termination_signal.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace pcp {
namespace {

int g_pipe[2] = {-1, -1};
volatile sig_atomic_t g_signal = 0;

void OnSignal(int sig) {
  const int saved = errno;
  if (g_signal == 0) g_signal = sig;
  const char byte = 1;
  [[maybe_unused]] ssize_t n = write(g_pipe[1], &byte, 1);
  errno = saved;
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

int WaitForTerminationSignal() {
  char byte;
  while (true) {
    const ssize_t n = read(g_pipe[0], &byte, 1);
    if (n == 1 || (n < 0 && errno != EINTR)) break;
  }
  return g_signal;
}

void WakeTerminationWaiter() {
  const char byte = 0;
  [[maybe_unused]] ssize_t n = write(g_pipe[1], &byte, 1);
}

}  // namespace pcp
