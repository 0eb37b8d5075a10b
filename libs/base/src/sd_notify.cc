#include "pcp/base/sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace pcp {

absl::Status SdNotify(absl::string_view state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || path[0] == '\0') return absl::OkStatus();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const size_t n = std::strlen(path);
  if (n >= sizeof(addr.sun_path) || (path[0] != '/' && path[0] != '@')) {
    return absl::InvalidArgumentError(absl::StrCat("NOTIFY_SOCKET '", path, "': not a socket path"));
  }
  std::memcpy(addr.sun_path, path, n);
  if (path[0] == '@') addr.sun_path[0] = '\0';  // abstract namespace
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("sd_notify: socket: ", std::strerror(errno)));
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + n);
  const ssize_t sent =
      sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&addr), len);
  const int error = errno;
  close(fd);
  if (sent < 0) return absl::UnavailableError(absl::StrCat("sd_notify to ", path, ": ", std::strerror(error)));
  return absl::OkStatus();
}

absl::Duration SystemdWatchdogPeriod() {
  const char* usec = std::getenv("WATCHDOG_USEC");
  const char* pid = std::getenv("WATCHDOG_PID");
  int64_t us = 0;
  if (usec == nullptr || !absl::SimpleAtoi(usec, &us) || us <= 0) return absl::ZeroDuration();
  if (int64_t p = 0; pid != nullptr && absl::SimpleAtoi(pid, &p) && p != getpid()) return absl::ZeroDuration();
  return absl::Microseconds(us);
}

}  // namespace pcp
