// One process per directory: an exclusive lock on a service's state directory, held for
// the life of the process, so that two shepherds (or two supervisors) can never write the
// same state.
//
//   PCP_ASSIGN_OR_RETURN(DirLock lock, DirLock::Acquire(config.state_dir, "state_dir"));
//   ... the directory is ours until `lock` is destroyed or the process ends ...
//
// The lock is flock(LOCK_EX | LOCK_NB) on DIR/.lock, a file that holds the holder's pid so
// that a second process can say who holds it. The kernel drops a flock when its holder
// exits, SIGKILL included, so a left-over .lock file never blocks a restart. flock locks
// belong to an open file, so a second Acquire of one directory fails within one process too.
// The descriptor is close-on-exec: children do not inherit the lock.
#ifndef PCP_BASE_DIR_LOCK_H_
#define PCP_BASE_DIR_LOCK_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pcp {

class DirLock {
 public:
  // The lock file's name inside the directory.
  static constexpr absl::string_view kFileName = ".lock";

  // Locks `dir`, which must exist. `what` names the directory in errors (e.g. "state_dir").
  // FAILED_PRECONDITION if another holder has it, e.g.
  //   "state_dir '/var/lib/pcp' is in use by process 4121 (lock /var/lib/pcp/.lock)";
  // other errors name the lock file and the system's reason.
  [[nodiscard]] static absl::StatusOr<DirLock> Acquire(absl::string_view dir, absl::string_view what);

  DirLock() = default;  // holds nothing
  DirLock(DirLock&& other) noexcept;
  DirLock& operator=(DirLock&& other) noexcept;
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;
  ~DirLock();

  bool held() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  // Gives the lock up (the file stays). Idempotent.
  void Release();

 private:
  DirLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

}  // namespace pcp

#endif  // PCP_BASE_DIR_LOCK_H_
