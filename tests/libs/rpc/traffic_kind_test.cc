// TrafficOf: the kind, codec and f32-equivalent bytes that the services' byte metrics count
// for each Training-stream message, and that every value it gives is one the metric catalog
// declares (a value outside a fixed label set aborts the process that counts it).
#include "pcp/rpc/traffic_kind.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pcp/codec/codec.h"
#include "pcp/metrics/catalog.h"
#include "pcp/rpc/tensor_proto.h"

namespace pcp {
namespace {

using metrics::LabelsOf;
using metrics::Metric;

v1::TensorChunk Chunk(codec::Codec c, std::vector<int64_t> shape, uint64_t offset = 0) {
  v1::TensorChunk chunk;
  chunk.set_name("w");
  chunk.set_dtype(v1::DTYPE_F32);
  for (int64_t d : shape) chunk.add_shape(d);
  chunk.set_offset(offset);
  chunk.set_codec(CodecToProto(c));
  return chunk;
}

v1::ShepherdMessage Theta(codec::Codec c, uint64_t update_from_round, uint64_t offset = 0) {
  v1::ShepherdMessage m;
  v1::ParameterChunk* p = m.mutable_parameter_chunk();
  p->set_round(3);
  p->set_update_from_round(update_from_round);
  *p->mutable_chunk() = Chunk(c, {65, 128}, offset);
  return m;
}

v1::WorkerMessage Delta(codec::Codec c, std::vector<int64_t> shape, uint64_t offset = 0) {
  v1::WorkerMessage m;
  m.mutable_result_chunk()->set_round(3);
  *m.mutable_result_chunk()->mutable_chunk() = Chunk(c, std::move(shape), offset);
  return m;
}

// Whether `value` is a declared value of label `label` (0: kind, 1: codec) of `m`.
bool Declared(Metric m, size_t label, absl::string_view value) {
  const std::vector<metrics::LabelSpec> specs = LabelsOf(m);
  if (specs.size() <= label) return false;
  return std::find(specs[label].values.begin(), specs[label].values.end(), value) != specs[label].values.end();
}

TEST(TrafficKindTest, ThetaIsFullOrAnUpdateWithItsCodec) {
  Traffic full = TrafficOf(Theta(codec::Codec::kF32, 0));
  EXPECT_EQ(full.kind, "theta_full");
  EXPECT_EQ(full.codec, "f32");
  EXPECT_EQ(full.f32_bytes, 65 * 128 * 4);
  Traffic update = TrafficOf(Theta(codec::Codec::kInt4, 2));
  EXPECT_EQ(update.kind, "theta_update");
  EXPECT_EQ(update.codec, "int4");
  EXPECT_EQ(update.f32_bytes, 65 * 128 * 4);  // the decoded size, whatever the codec
  // Later chunks of a tensor add no f32 bytes: the tensor was counted with its first.
  Traffic later = TrafficOf(Theta(codec::Codec::kInt4, 2, 4096));
  EXPECT_EQ(later.kind, "theta_update");
  EXPECT_EQ(later.codec, "int4");
  EXPECT_EQ(later.f32_bytes, 0);
}

TEST(TrafficKindTest, DeltaCarriesItsCodec) {
  for (codec::Codec c : {codec::Codec::kF32, codec::Codec::kBf16, codec::Codec::kInt8, codec::Codec::kInt4}) {
    Traffic t = TrafficOf(Delta(c, {7, 3}));
    EXPECT_EQ(t.kind, "delta");
    EXPECT_EQ(t.codec, codec::CodecName(c));
    EXPECT_EQ(t.f32_bytes, 7 * 3 * 4);
  }
  EXPECT_EQ(TrafficOf(Delta(codec::Codec::kInt8, {})).f32_bytes, 4);      // a scalar: one element
  EXPECT_EQ(TrafficOf(Delta(codec::Codec::kInt8, {0, 5})).f32_bytes, 0);  // no elements
}

TEST(TrafficKindTest, MessagesWithoutTensorDataHaveCodecNone) {
  v1::ShepherdMessage program, shard, start, heartbeat;
  program.mutable_program_chunk()->set_data("module");
  shard.mutable_shard_chunk()->set_data("tokens");
  start.mutable_start_round()->set_round(1);
  heartbeat.mutable_heartbeat()->set_sequence(1);
  const std::vector<std::pair<v1::ShepherdMessage, std::string>> cases = {{program, "program"},
                                                                          {shard, "shard"},
                                                                          {start, "control"},
                                                                          {heartbeat, "control"}};
  for (const auto& [m, kind] : cases) {
    Traffic t = TrafficOf(m);
    EXPECT_EQ(t.kind, kind);
    EXPECT_EQ(t.codec, "none");
    EXPECT_EQ(t.f32_bytes, 0);
  }
  v1::WorkerMessage result;
  result.mutable_round_result()->set_round(1);
  Traffic t = TrafficOf(result);
  EXPECT_EQ(t.kind, "control");
  EXPECT_EQ(t.codec, "none");
  EXPECT_EQ(t.f32_bytes, 0);
}

TEST(TrafficKindTest, APeersOddChunkStillGivesADeclaredLabel) {
  // A codec id this build does not know, and a shape whose f32 size overflows: the receiver
  // refuses both, but counting them must not abort.
  v1::WorkerMessage odd = Delta(codec::Codec::kInt8, {int64_t{1} << 40, int64_t{1} << 22});
  odd.mutable_result_chunk()->mutable_chunk()->set_codec(static_cast<v1::Codec>(77));
  Traffic t = TrafficOf(odd);
  EXPECT_EQ(t.codec, "none");
  EXPECT_EQ(t.f32_bytes, 0);
  EXPECT_TRUE(Declared(Metric::kShepherdBytesReceivedTotal, 1, t.codec));
  v1::WorkerMessage negative = Delta(codec::Codec::kInt8, {-3, 2});
  EXPECT_EQ(TrafficOf(negative).f32_bytes, 0);
}

// The catalog spells the kinds and codecs as string lists; they must be what TrafficOf and
// the codec list give, on both ends of the stream.
TEST(TrafficKindTest, EveryKindAndCodecIsDeclaredInTheCatalog) {
  std::vector<v1::ShepherdMessage> down = {Theta(codec::Codec::kF32, 0)};
  std::vector<v1::WorkerMessage> up;
  for (int i = 0; i < codec::kNumCodecs; ++i) {
    const codec::Codec c = codec::kCodecNames[i].first;
    down.push_back(Theta(c, 1));
    up.push_back(Delta(c, {2}));
    EXPECT_TRUE(Declared(Metric::kShepherdPayloadF32BytesSentTotal, 1, codec::CodecName(c))) << codec::CodecName(c);
    if (c != codec::Codec::kF32) {
      EXPECT_TRUE(Declared(Metric::kShepherdCodecSecondsTotal, 1, codec::CodecName(c)));
      EXPECT_TRUE(Declared(Metric::kWorkerCodecSecondsTotal, 1, codec::CodecName(c)));
    }
  }
  down.emplace_back().mutable_program_chunk();
  down.emplace_back().mutable_shard_chunk();
  down.emplace_back().mutable_start_round();
  up.emplace_back().mutable_round_result();
  for (const v1::ShepherdMessage& m : down) {
    const Traffic t = TrafficOf(m);
    for (Metric metric : {Metric::kShepherdBytesSentTotal, Metric::kWorkerBytesReceivedTotal}) {
      EXPECT_TRUE(Declared(metric, 0, t.kind)) << t.kind;
      EXPECT_TRUE(Declared(metric, 1, t.codec)) << t.codec;
    }
    if (t.codec != "none") {
      for (Metric metric : {Metric::kShepherdPayloadF32BytesSentTotal, Metric::kWorkerPayloadF32BytesReceivedTotal}) {
        EXPECT_TRUE(Declared(metric, 0, t.kind)) << t.kind;
        EXPECT_TRUE(Declared(metric, 1, t.codec)) << t.codec;
      }
    }
  }
  for (const v1::WorkerMessage& m : up) {
    const Traffic t = TrafficOf(m);
    for (Metric metric : {Metric::kWorkerBytesSentTotal, Metric::kShepherdBytesReceivedTotal}) {
      EXPECT_TRUE(Declared(metric, 0, t.kind)) << t.kind;
      EXPECT_TRUE(Declared(metric, 1, t.codec)) << t.codec;
    }
    if (t.codec != "none") {
      for (Metric metric : {Metric::kWorkerPayloadF32BytesSentTotal, Metric::kShepherdPayloadF32BytesReceivedTotal}) {
        EXPECT_TRUE(Declared(metric, 0, t.kind)) << t.kind;
        EXPECT_TRUE(Declared(metric, 1, t.codec)) << t.codec;
      }
    }
  }
}

}  // namespace
}  // namespace pcp
