#include "pcp/base/progress_report.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/numbers.h"

namespace pcp {
namespace {

// The descriptor from the environment, checked once: it must be an open pipe, so that a
// stray PCP_PROGRESS_FD (say, copied from another process's environment) never makes us
// write into some unrelated file that happens to have that number.
int ProgressFd() {
  static const int fd = [] {
    const char* env = std::getenv(kProgressFdEnv);
    int n = -1;
    if (env == nullptr || !absl::SimpleAtoi(env, &n) || n < 3) return -1;
    struct stat st;
    if (fstat(n, &st) != 0 || !S_ISFIFO(st.st_mode)) return -1;
    const int flags = fcntl(n, F_GETFL);
    if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) return -1;
    fcntl(n, F_SETFL, flags | O_NONBLOCK);
    fcntl(n, F_SETFD, FD_CLOEXEC);  // not passed on to the worker's own children
    return n;
  }();
  return fd;
}

}  // namespace

void ReportProgress() {
  const int fd = ProgressFd();
  if (fd < 0) return;
  const char byte = 1;
  [[maybe_unused]] ssize_t n = write(fd, &byte, 1);
}

}  // namespace pcp
