// Where a job's data may come from. A service that reads files named by someone else (the
// shepherd reads a submitted job's data.path, a worker reads a shared shard's path) confines
// them to configured data roots: the path must resolve (after symlinks and `..`) inside a
// root, be a regular file on a real file system (not a device, FIFO, socket or /proc file)
// with one hard link, and hold at most max_file_bytes. Every data read in libs/training goes
// through here. One link, because a hard link has no "real" path to check: a link placed in a
// root to /etc/shadow is, by its name, inside the root; a data file that is hard-linked
// elsewhere must be copied (or symlinked: a symlink resolves, and its target is checked).
//
//   PCP_ASSIGN_OR_RETURN(DataRoots roots, DataRoots::Confined({"data", "/srv/corpora"},
//                                                             /*max_file_bytes=*/1 << 30));
//   PCP_ASSIGN_OR_RETURN(std::string bytes, roots.Read("/srv/corpora/train.bin"));
//   roots.Read("/etc/passwd");   // PermissionDenied: "data file '/etc/passwd' refused: only
//                                // readable regular files of at most 1073741824 bytes inside
//                                // the data roots [/work/data, /srv/corpora] may be read"
//   DataRoots local = DataRoots::Unconfined();   // pcp-local: the user's own files
//
// A confined refusal has one message whatever the reason (missing, outside every root, not a
// regular file, too large, unreadable), so that a caller cannot probe which files exist
// outside the roots. Unconfined reads still require a regular file under the size cap, and
// say exactly what is wrong (the user owns the files).
//
// A root given relative is resolved against the working directory when the DataRoots is
// made. An empty root list confines to nothing: every path is refused.
#ifndef PCP_TRAINING_DATA_ROOTS_H_
#define PCP_TRAINING_DATA_ROOTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace pcp {

// The default size cap of one data file: 1 GiB (tokenized text needs about 3x that in memory).
inline constexpr int64_t kDefaultMaxDataFileBytes = int64_t{1} << 30;

// The services' default data root: the folder of the example data this build was configured
// with (CMake's PCP_DATA_DIR: the repository's data/ unless a package sets another).
std::string DefaultDataRoot();

class DataRoots {
 public:
  // Confined to no root: every path is refused.
  DataRoots() = default;
  // Reads confined to `roots` (each made absolute and, where it exists, canonical).
  // InvalidArgument if max_file_bytes < 1 or a root is empty.
  static absl::StatusOr<DataRoots> Confined(const std::vector<std::string>& roots,
                                            int64_t max_file_bytes = kDefaultMaxDataFileBytes);
  // Any path (for a user's own tool), still regular files of at most max_file_bytes.
  static DataRoots Unconfined(int64_t max_file_bytes = kDefaultMaxDataFileBytes);

  // The absolute canonical path of `path` (relative: to the working directory) if it may be
  // read. Confined refusals are PermissionDenied with RefusalMessage(path).
  absl::StatusOr<std::string> Check(const std::string& path) const;
  // Check, then reads the file through one descriptor that is checked again after opening
  // (a file swapped for a symlink or FIFO between the two is refused, never followed).
  absl::StatusOr<std::string> Read(const std::string& path) const;

  bool confined() const { return confined_; }
  const std::vector<std::string>& roots() const { return roots_; }
  int64_t max_file_bytes() const { return max_file_bytes_; }
  // "data roots [/a, /b]", "data roots [] (none: nothing may be read)" or "unconfined".
  std::string Describe() const;
  // The one message of every confined refusal of `path` (as the caller wrote it).
  std::string RefusalMessage(const std::string& path) const;

 private:
  DataRoots(bool confined, std::vector<std::string> roots, int64_t max_file_bytes)
      : confined_(confined), roots_(std::move(roots)), max_file_bytes_(max_file_bytes) {}
  bool Inside(const std::string& canonical) const;
  // Confined: PermissionDenied with RefusalMessage. Unconfined: `code` with the detail.
  absl::Status Refuse(const std::string& path, const std::string& detail,
                      absl::StatusCode code = absl::StatusCode::kInvalidArgument) const;

  bool confined_ = true;
  std::vector<std::string> roots_;
  int64_t max_file_bytes_ = kDefaultMaxDataFileBytes;
};

}  // namespace pcp

#endif  // PCP_TRAINING_DATA_ROOTS_H_
