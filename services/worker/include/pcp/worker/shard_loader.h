// A worker's training tokens, from its Assignment's DataShard: the bytes that followed as
// shard chunks (u16 little-endian), or a range of a file on a shared file system.
//
//   PCP_ASSIGN_OR_RETURN(TokenSequence tokens, LoadShard(assignment.shard(), inline_bytes));
//
// Errors name the problem (odd byte count, token count differs from the announced one, a
// range outside the file, a byte outside the char vocabulary) and are InvalidArgument, or the
// file's own error (NOT_FOUND, ...).
#ifndef PCP_WORKER_SHARD_LOADER_H_
#define PCP_WORKER_SHARD_LOADER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pcp/training/dataset.h"
#include "pcp/v1/training.pb.h"

namespace pcp::worker {

absl::StatusOr<TokenSequence> LoadShard(const v1::DataShard& shard, absl::string_view inline_bytes);

}  // namespace pcp::worker

#endif  // PCP_WORKER_SHARD_LOADER_H_
