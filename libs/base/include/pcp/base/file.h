// Whole-file I/O with errors as values, and crash-safe replacement of a file.
//
//   PCP_RETURN_IF_ERROR(MakeDirs("/ckpt/step_100"));
//   PCP_RETURN_IF_ERROR(WriteFileAtomic("/ckpt/step_100/meta.json", json_text));
//   PCP_ASSIGN_OR_RETURN(std::string text, ReadFile("/ckpt/step_100/meta.json"));
//
// Paths are plain POSIX paths (relative ones are resolved against the working directory).
// Every error message names the path and the operating system's reason, e.g.
//   "opening '/ckpt/x.json' for reading: No such file or directory"
// and the status code follows errno (ENOENT -> NOT_FOUND, EACCES -> PERMISSION_DENIED, ...).
#ifndef PCP_BASE_FILE_H_
#define PCP_BASE_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace pcp {

// Reads the whole file at `path` (regular files, pipes and /proc files alike).
[[nodiscard]] absl::StatusOr<std::string> ReadFile(absl::string_view path);

// Replaces (or creates) `path` with `bytes` so that a reader or a crash sees either the
// old file or the complete new one, never a torn file: writes a temporary file in the same
// directory, fsyncs it, renames it over `path` and fsyncs the directory. On failure the
// temporary file is removed and `path` is left as it was. New files get mode 0644 & ~umask.
[[nodiscard]] absl::Status WriteFileAtomic(absl::string_view path, absl::string_view bytes);

// As WriteFileAtomic, with the content given as consecutive pieces (written in order, not
// copied into one buffer first), e.g. a header followed by large tensor payloads.
[[nodiscard]] absl::Status WriteFileAtomicParts(absl::string_view path, absl::Span<const absl::string_view> parts);

// Creates directory `path` and any missing parents (like `mkdir -p`, mode 0755 & ~umask).
// Succeeds if it already exists as a directory; fails if a component exists and is not one.
[[nodiscard]] absl::Status MakeDirs(absl::string_view path);

// Appends `bytes` to `path` (created, mode 0644 & ~umask, if missing), then fdatasyncs it
// when `sync`. A crash may leave a torn tail: readers of an append-only file must tolerate one.
[[nodiscard]] absl::Status AppendFile(absl::string_view path, absl::string_view bytes, bool sync);

}  // namespace pcp

#endif  // PCP_BASE_FILE_H_
