// A worker's training tokens, from its Assignment's DataShard: the bytes that followed as
// shard chunks (u16 little-endian), or a range of a file on a shared file system, which must
// lie inside the worker's own data roots (the shepherd names the path; data_roots.h).
//
//   PCP_ASSIGN_OR_RETURN(TokenSequence tokens, LoadShard(assignment.shard(), inline_bytes, roots));
//
// Errors name the problem (odd byte count, token count differs from the announced one, a
// range outside the file, a byte outside the char vocabulary) and are InvalidArgument, or the
// file's own error (NOT_FOUND, ...); a shared path outside the roots is PERMISSION_DENIED with
// the same message whether or not it exists.
#ifndef PCP_WORKER_SHARD_LOADER_H_
#define PCP_WORKER_SHARD_LOADER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pcp/training/data_roots.h"
#include "pcp/training/dataset.h"
#include "pcp/v1/training.pb.h"

namespace pcp::worker {

absl::StatusOr<TokenSequence> LoadShard(const v1::DataShard& shard, absl::string_view inline_bytes,
                                        const DataRoots& roots);

}  // namespace pcp::worker

#endif  // PCP_WORKER_SHARD_LOADER_H_
