#include "pcp/base/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace pcp {

absl::StatusOr<DirLock> DirLock::Acquire(absl::string_view dir, absl::string_view what) {
  std::string path = absl::StrCat(dir, "/", kFileName);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat(what, " '", dir, "': opening the lock file ", path));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    std::string holder;
    if (error == EWOULDBLOCK) {
      // The holder writes its pid right after locking; an empty file means it is doing so.
      char buffer[32] = {};
      const ssize_t n = pread(fd, buffer, sizeof buffer - 1, 0);
      holder = std::string(absl::StripAsciiWhitespace(absl::string_view(buffer, n > 0 ? n : 0)));
    }
    close(fd);
    if (error != EWOULDBLOCK) {
      return absl::ErrnoToStatus(error, absl::StrCat(what, " '", dir, "': locking ", path));
    }
    return absl::FailedPreconditionError(absl::StrCat(what, " '", dir, "' is in use by ",
                                                      holder.empty() ? "another process" : "process " + holder,
                                                      " (lock ", path, ")"));
  }
  const std::string pid = absl::StrCat(getpid(), "\n");
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int error = errno;
    close(fd);
    return absl::ErrnoToStatus(error, absl::StrCat(what, " '", dir, "': writing the lock file ", path));
  }
  return DirLock(fd, std::move(path));
}

DirLock::DirLock(DirLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

DirLock& DirLock::operator=(DirLock&& other) noexcept {
  if (this != &other) {
    Release();
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

DirLock::~DirLock() { Release(); }

void DirLock::Release() {
  if (fd_ < 0) return;
  close(fd_);  // drops the flock
  fd_ = -1;
}

}  // namespace pcp
