#include "pcp/training/data_roots.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pcp/base/unique_fd.h"

namespace pcp {
namespace {

namespace fs = std::filesystem;

// Kernel file systems whose "regular files" are generated on read (their size says 0) and
// may hold secrets (/proc/self/environ) or have effects: never data.
bool IsPseudoFileSystem(const struct statfs& st) {
  switch (static_cast<unsigned long>(st.f_type)) {  // NOLINT(runtime/int): statfs's type
    case PROC_SUPER_MAGIC:
    case SYSFS_MAGIC:
    case DEBUGFS_MAGIC:
    case TRACEFS_MAGIC:
    case SECURITYFS_MAGIC:
    case CGROUP_SUPER_MAGIC:
    case CGROUP2_SUPER_MAGIC:
    case DEVPTS_SUPER_MAGIC:
    case BPF_FS_MAGIC:
    case EFIVARFS_MAGIC: return true;
    default: return false;
  }
}

std::string Errno(int err) { return std::strerror(err); }

}  // namespace

std::string DefaultDataRoot() { return PCP_DEFAULT_DATA_ROOT; }

absl::StatusOr<DataRoots> DataRoots::Confined(const std::vector<std::string>& roots, int64_t max_file_bytes) {
  if (max_file_bytes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the data file size cap must be at least 1 byte, got ", max_file_bytes));
  }
  std::vector<std::string> canonical;
  for (const std::string& root : roots) {
    if (root.empty()) return absl::InvalidArgumentError("a data root is an empty path");
    std::error_code ec;
    fs::path absolute = fs::absolute(root, ec);
    if (ec) return absl::InvalidArgumentError(absl::StrCat("data root '", root, "': ", ec.message()));
    // weakly_canonical: a root that does not exist yet stays usable once it is created.
    fs::path resolved = fs::weakly_canonical(absolute, ec);
    canonical.push_back((ec ? absolute.lexically_normal() : resolved).string());
  }
  return DataRoots(/*confined=*/true, std::move(canonical), max_file_bytes);
}

DataRoots DataRoots::Unconfined(int64_t max_file_bytes) {
  return DataRoots(/*confined=*/false, {}, max_file_bytes < 1 ? kDefaultMaxDataFileBytes : max_file_bytes);
}

std::string DataRoots::Describe() const {
  if (!confined_) return "unconfined";
  if (roots_.empty()) return "data roots [] (none: nothing may be read)";
  return absl::StrCat("data roots [", absl::StrJoin(roots_, ", "), "]");
}

std::string DataRoots::RefusalMessage(const std::string& path) const {
  return absl::StrCat("data file '", path, "' refused: only readable regular files of at most ", max_file_bytes_,
                      " bytes inside the ", Describe(), " may be read");
}

absl::Status DataRoots::Refuse(const std::string& path, const std::string& detail, absl::StatusCode code) const {
  if (confined_) return absl::PermissionDeniedError(RefusalMessage(path));
  return absl::Status(code, absl::StrCat(detail, ": ", path));
}

bool DataRoots::Inside(const std::string& canonical) const {
  for (const std::string& root : roots_) {
    if (canonical == root) return true;
    const bool slash = !root.empty() && root.back() == '/';  // "/" itself
    if (canonical.size() > root.size() && canonical.compare(0, root.size(), root) == 0 &&
        (slash || canonical[root.size()] == '/')) {
      return true;
    }
  }
  return false;
}

absl::StatusOr<std::string> DataRoots::Check(const std::string& path) const {
  if (path.empty()) return Refuse(path, "empty path");
  // realpath resolves symlinks and `..` of what exists; a missing file fails here (ENOENT),
  // before anything outside the roots is opened.
  char buffer[PATH_MAX];
  if (realpath(path.c_str(), buffer) == nullptr) {
    const int err = errno;
    return err == ENOENT ? Refuse(path, "file not found", absl::StatusCode::kNotFound) : Refuse(path, Errno(err));
  }
  std::string canonical = buffer;
  if (confined_ && !Inside(canonical)) return Refuse(path, "outside the data roots");
  struct stat st;
  if (stat(canonical.c_str(), &st) != 0) return Refuse(path, Errno(errno));
  if (S_ISDIR(st.st_mode)) return Refuse(path, "is a directory, expected a file");
  struct statfs fs_info;
  if (statfs(canonical.c_str(), &fs_info) != 0 || IsPseudoFileSystem(fs_info)) {
    return Refuse(path, "a kernel pseudo-file (/proc, /sys, ...), not data");
  }
  if (!S_ISREG(st.st_mode)) return Refuse(path, "not a regular file (a device, FIFO or socket)");
  if (confined_ && st.st_nlink > 1) return Refuse(path, "has more than one hard link");
  if (st.st_size > max_file_bytes_) {
    return Refuse(path, absl::StrCat(st.st_size, " bytes, over the cap of ", max_file_bytes_, " bytes"));
  }
  return canonical;
}

absl::StatusOr<std::string> DataRoots::Read(const std::string& path) const {
  absl::StatusOr<std::string> canonical = Check(path);
  if (!canonical.ok()) return canonical.status();
  // O_NOFOLLOW: the canonical path has no symlink left, so one appearing now is a swap.
  // O_NONBLOCK: a FIFO swapped in must not block the open.
  UniqueFd fd(open(canonical->c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK));
  if (fd.get() < 0) return Refuse(path, Errno(errno));
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return Refuse(path, Errno(errno));
  if (!S_ISREG(st.st_mode)) return Refuse(path, "not a regular file (a device, FIFO or socket)");
  if (confined_ && st.st_nlink > 1) return Refuse(path, "has more than one hard link");
  struct statfs fs_info;
  if (fstatfs(fd.get(), &fs_info) != 0 || IsPseudoFileSystem(fs_info)) {
    return Refuse(path, "a kernel pseudo-file (/proc, /sys, ...), not data");
  }
  if (confined_) {
    // The descriptor's own path: whatever happened to the name, this is what was opened.
    char link[PATH_MAX];
    const std::string self = absl::StrCat("/proc/self/fd/", fd.get());
    const ssize_t n = readlink(self.c_str(), link, sizeof(link) - 1);
    if (n > 0 && !Inside(std::string(link, static_cast<size_t>(n)))) {
      return Refuse(path, "outside the data roots");
    }
  }
  std::string bytes;
  bytes.resize(static_cast<size_t>(std::min<int64_t>(st.st_size, max_file_bytes_)));
  size_t got = 0;
  while (true) {
    if (got == bytes.size()) {
      // The file may have grown since fstat: read on, up to the cap.
      if (static_cast<int64_t>(bytes.size()) > max_file_bytes_) {
        return Refuse(path, absl::StrCat("grew over the cap of ", max_file_bytes_, " bytes"));
      }
      bytes.resize(std::min<size_t>(bytes.size() + (size_t{1} << 16), static_cast<size_t>(max_file_bytes_) + 1));
    }
    const ssize_t r = read(fd.get(), bytes.data() + got, bytes.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Refuse(path, Errno(errno));
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  if (static_cast<int64_t>(got) > max_file_bytes_) {
    return Refuse(path, absl::StrCat("grew over the cap of ", max_file_bytes_, " bytes"));
  }
  bytes.resize(got);
  return bytes;
}

}  // namespace pcp
