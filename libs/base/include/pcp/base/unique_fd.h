// A file descriptor closed when its owner goes out of scope.
//
//   UniqueFd fd(open(path, O_RDONLY | O_CLOEXEC));
//   if (fd.get() < 0) return ErrnoError(errno, "opening", path);
//   read(fd.get(), ...);   // closed at scope exit
#ifndef PCP_BASE_UNIQUE_FD_H_
#define PCP_BASE_UNIQUE_FD_H_

#include <unistd.h>

namespace pcp {

class UniqueFd {
 public:
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() {
    if (fd_ >= 0) close(fd_);
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  // The descriptor (negative: none).
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace pcp

#endif  // PCP_BASE_UNIQUE_FD_H_
