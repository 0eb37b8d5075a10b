#include "pcp/rpc/traffic_kind.h"

#include <limits>

#include "pcp/codec/codec.h"
#include "pcp/rpc/tensor_proto.h"

namespace pcp {
namespace {

Traffic TensorTraffic(absl::string_view kind, const v1::TensorChunk& chunk) {
  Traffic t{.kind = kind, .codec = CodecLabel(chunk)};
  if (chunk.offset() != 0) return t;
  // A peer's shape may be anything: one that does not parse, or whose f32 size overflows,
  // counts nothing (the receiver refuses the chunk).
  absl::StatusOr<Shape> shape = ShapeFromProto(chunk.shape());
  if (!shape.ok()) return t;
  const int64_t elements = NumElements(*shape);
  if (elements <= std::numeric_limits<int64_t>::max() / 4) t.f32_bytes = elements * 4;
  return t;
}

}  // namespace

absl::string_view CodecLabel(const v1::TensorChunk& chunk) {
  absl::StatusOr<codec::Codec> c = CodecFromProto(chunk.codec());
  return c.ok() ? codec::CodecName(*c) : absl::string_view("none");
}

Traffic TrafficOf(const v1::ShepherdMessage& message) {
  switch (message.kind_case()) {
    case v1::ShepherdMessage::kParameterChunk: {
      const v1::ParameterChunk& p = message.parameter_chunk();
      return TensorTraffic(p.update_from_round() == 0 ? "theta_full" : "theta_update", p.chunk());
    }
    case v1::ShepherdMessage::kProgramChunk: return {.kind = "program"};
    case v1::ShepherdMessage::kShardChunk: return {.kind = "shard"};
    default: return {.kind = "control"};
  }
}

Traffic TrafficOf(const v1::WorkerMessage& message) {
  if (message.kind_case() == v1::WorkerMessage::kResultChunk)
    return TensorTraffic("delta", message.result_chunk().chunk());
  return {.kind = "control"};
}

}  // namespace pcp
