#include "pcp/supervisor/stop_signal.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace pcp::supervisor {
namespace {

sigset_t StopSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

absl::Status BlockStopSignals() {
  sigset_t set = StopSet();
  int error = pthread_sigmask(SIG_BLOCK, &set, nullptr);
  if (error != 0) return absl::ErrnoToStatus(error, "blocking SIGTERM and SIGINT");
  return absl::OkStatus();
}

StopSignal::StopSignal() {
  sigset_t set = StopSet();
  signal_fd_ = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  event_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

StopSignal::~StopSignal() {
  if (signal_fd_ >= 0) close(signal_fd_);
  if (event_fd_ >= 0) close(event_fd_);
}

void StopSignal::Request(absl::string_view reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (reason_.empty()) reason_ = std::string(reason);
  }
  uint64_t one = 1;
  ssize_t ignored = write(event_fd_, &one, sizeof one);
  (void)ignored;
}

std::string StopSignal::Wait() {
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!reason_.empty()) return reason_;
    }
    struct pollfd fds[2] = {{.fd = signal_fd_, .events = POLLIN, .revents = 0},
                            {.fd = event_fd_, .events = POLLIN, .revents = 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) return "poll failed";
    struct signalfd_siginfo info;
    if (read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      Request(info.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
    }
    uint64_t drained;
    ssize_t ignored = read(event_fd_, &drained, sizeof drained);
    (void)ignored;
  }
}

}  // namespace pcp::supervisor
