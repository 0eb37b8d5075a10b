// What a Training-stream message carries, in the words of the services' byte metrics (the
// `kind` and `codec` labels of pcp_*_bytes_sent_total / _received_total and of the
// payload_f32 counters beside them), named here once for both ends of the stream.
//
//   Traffic t = TrafficOf(shepherd_message);
//   t.kind       // "theta_full", "theta_update", "program", "shard" or "control"
//   t.codec      // "none" without tensor data, else the chunk's codec: "f32", "int8", ...
//   t.f32_bytes  // 4 × the tensor's elements on its first chunk, else 0
//   TrafficOf(worker_message).kind   // "delta" or "control"
//
// The f32 bytes are what the tensor would take uncompressed; dividing their sum by the wire
// bytes of the same kind and codec gives the compression ratio. They are counted once per
// tensor, with its first chunk (offset 0), from the shape every chunk carries, so they need
// no chunk data (which is often sent or received outside the message, pcp/rpc/chunk_wire.h).
#ifndef PCP_RPC_TRAFFIC_KIND_H_
#define PCP_RPC_TRAFFIC_KIND_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "pcp/v1/tensor.pb.h"
#include "pcp/v1/training.pb.h"

namespace pcp {

struct Traffic {
  absl::string_view kind;
  absl::string_view codec = "none";
  int64_t f32_bytes = 0;
};

// parameter_chunk = theta_full (update_from_round 0) or theta_update, program_chunk =
// program, shard_chunk = shard, anything else (assignment, heartbeat, ...) = control.
Traffic TrafficOf(const v1::ShepherdMessage& message);
// result_chunk = delta, anything else = control.
Traffic TrafficOf(const v1::WorkerMessage& message);

// The codec label of a tensor chunk: its codec's name as job YAML spells it ("f32", "bf16",
// "int8", "int4"), or "none" for a codec id this build does not know (a chunk the receiver
// refuses anyway).
absl::string_view CodecLabel(const v1::TensorChunk& chunk);

}  // namespace pcp

#endif  // PCP_RPC_TRAFFIC_KIND_H_
