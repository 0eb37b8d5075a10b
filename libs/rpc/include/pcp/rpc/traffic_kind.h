// What a Training-stream message carries, as one word: the `kind` label of the services'
// bytes_sent/bytes_received metrics, named here once for both ends of the stream.
//
//   TrafficKind(shepherd_message)  // "params", "program", "shard" or "control"
//   TrafficKind(worker_message)    // "delta" or "control"
#ifndef PCP_RPC_TRAFFIC_KIND_H_
#define PCP_RPC_TRAFFIC_KIND_H_

#include "absl/strings/string_view.h"
#include "pcp/v1/training.pb.h"

namespace pcp {

// parameter_chunk = params, program_chunk = program, shard_chunk = shard, anything else
// (assignment, heartbeat, ...) = control.
absl::string_view TrafficKind(const v1::ShepherdMessage& message);
// result_chunk = delta, anything else = control.
absl::string_view TrafficKind(const v1::WorkerMessage& message);

}  // namespace pcp

#endif  // PCP_RPC_TRAFFIC_KIND_H_
