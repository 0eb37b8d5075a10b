#include "pcp/rpc/traffic_kind.h"

namespace pcp {

absl::string_view TrafficKind(const v1::ShepherdMessage& message) {
  switch (message.kind_case()) {
    case v1::ShepherdMessage::kParameterChunk: return "params";
    case v1::ShepherdMessage::kProgramChunk: return "program";
    case v1::ShepherdMessage::kShardChunk: return "shard";
    default: return "control";
  }
}

absl::string_view TrafficKind(const v1::WorkerMessage& message) {
  return message.kind_case() == v1::WorkerMessage::kResultChunk ? "delta" : "control";
}

}  // namespace pcp
