#include "pcp/base/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "pcp/base/status_macros.h"

namespace pcp {
namespace {

// "<what> '<path>': <strerror>" with a status code derived from errno.
absl::Status ErrnoError(int err, absl::string_view what, absl::string_view path) {
  return absl::Status(absl::ErrnoToStatusCode(err),
                      absl::StrCat(what, " '", path, "': ", std::error_code(err, std::generic_category()).message()));
}

// Closes the descriptor on scope exit unless released.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

absl::Status WriteAll(int fd, absl::string_view bytes, absl::string_view path) {
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "writing", path);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

// Splits "a/b/c" into ("a/b", "c"); "c" into (".", "c"); "/c" into ("/", "c").
std::pair<std::string, std::string> SplitPath(absl::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == absl::string_view::npos) return {std::string(1, '.'), std::string(path)};
  return {slash == 0 ? std::string(1, '/') : std::string(path.substr(0, slash)), std::string(path.substr(slash + 1))};
}

absl::Status FsyncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "opening directory", dir);
  FdCloser closer(fd);
  if (::fsync(fd) != 0) return ErrnoError(errno, "fsyncing directory", dir);
  return absl::OkStatus();
}

// Creates a fresh temporary file next to the target; returns its descriptor.
absl::StatusOr<int> CreateTempFile(const std::string& dir, const std::string& base, std::string* temp_path) {
  static std::atomic<uint64_t> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    uint64_t nonce = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                     (counter.fetch_add(1) << 40);
    *temp_path = absl::StrCat(dir, "/.", base, ".tmp-", ::getpid(), "-", absl::Hex(nonce));
    int fd = ::open(temp_path->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) return fd;
    if (errno != EEXIST) return ErrnoError(errno, "creating temporary file", *temp_path);
  }
  return absl::AlreadyExistsError(absl::StrCat("could not create a unique temporary file in '", dir, "'"));
}

}  // namespace

absl::StatusOr<std::string> ReadFile(absl::string_view path) {
  std::string p(path);
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "opening for reading", path);
  FdCloser closer(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoError(errno, "stat of", path);
  if (S_ISDIR(st.st_mode)) return ErrnoError(EISDIR, "reading", path);
  std::string out;
  // st_size is exact for regular files and 0 for pipes and /proc files; read until EOF
  // either way, growing the buffer when the guess was too small.
  size_t capacity = S_ISREG(st.st_mode) ? static_cast<size_t>(st.st_size) + 1 : 4096;
  out.resize(capacity);
  size_t used = 0;
  while (true) {
    if (used == out.size()) out.resize(out.size() * 2);
    ssize_t n = ::read(fd, out.data() + used, out.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "reading", path);
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  out.resize(used);
  return out;
}

absl::Status WriteFileAtomic(absl::string_view path, absl::string_view bytes) {
  return WriteFileAtomicParts(path, {bytes});
}

absl::Status WriteFileAtomicParts(absl::string_view path, absl::Span<const absl::string_view> parts) {
  if (path.empty()) return absl::InvalidArgumentError("WriteFileAtomic: empty path");
  auto [dir, base] = SplitPath(path);
  if (base.empty() || base == "." || base == "..") {
    return absl::InvalidArgumentError(absl::StrCat("WriteFileAtomic: '", path, "' names a directory, not a file"));
  }
  std::string temp_path;
  absl::StatusOr<int> fd_or = CreateTempFile(dir, base, &temp_path);
  if (!fd_or.ok()) {
    return absl::Status(fd_or.status().code(), absl::StrCat("writing '", path, "': ", fd_or.status().message()));
  }
  FdCloser closer(*fd_or);
  auto fail = [&](absl::Status status) {
    ::close(closer.release());
    ::unlink(temp_path.c_str());
    return status;
  };
  for (absl::string_view part : parts) {
    absl::Status s = WriteAll(*fd_or, part, temp_path);
    if (!s.ok()) return fail(std::move(s));
  }
  if (::fsync(*fd_or) != 0) return fail(ErrnoError(errno, "fsyncing", temp_path));
  // close() can report deferred write errors (e.g. on network file systems).
  if (::close(closer.release()) != 0) {
    absl::Status s = ErrnoError(errno, "closing", temp_path);
    ::unlink(temp_path.c_str());
    return s;
  }
  std::string target(path);
  if (::rename(temp_path.c_str(), target.c_str()) != 0) {
    absl::Status s = ErrnoError(errno, absl::StrCat("renaming '", temp_path, "' to"), path);
    ::unlink(temp_path.c_str());
    return s;
  }
  // Without this the rename itself may be lost on a crash even though the data is durable.
  return FsyncDirectory(dir);
}

absl::Status MakeDirs(absl::string_view path) {
  if (path.empty()) return absl::InvalidArgumentError("MakeDirs: empty path");
  std::string prefix;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    size_t end = slash == absl::string_view::npos ? path.size() : slash;
    absl::string_view component = path.substr(start, end - start);
    start = end + 1;
    // Skip the root, empty components ("a//b") and "." / ".." (which exist by definition).
    if (component.empty() || component == "." || component == "..") continue;
    prefix.assign(path.data(), end);
    if (::mkdir(prefix.c_str(), 0755) == 0) continue;
    int err = errno;
    struct stat st;
    if (err == EEXIST && ::stat(prefix.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) continue;
      return absl::FailedPreconditionError(
          absl::StrCat("creating directory '", path, "': '", prefix, "' exists and is not a directory"));
    }
    return ErrnoError(err, "creating directory", prefix);
  }
  return absl::OkStatus();
}

absl::Status AppendFile(absl::string_view path, absl::string_view bytes, bool sync) {
  const std::string p(path);
  int fd = ::open(p.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError(errno, "opening for appending", path);
  FdCloser closer(fd);
  PCP_RETURN_IF_ERROR(WriteAll(fd, bytes, path));
  if (sync && ::fdatasync(fd) != 0) return ErrnoError(errno, "syncing", path);
  return absl::OkStatus();
}

}  // namespace pcp
