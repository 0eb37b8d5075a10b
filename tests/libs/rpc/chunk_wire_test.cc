#include "pcp/rpc/chunk_wire.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/rpc/crc32c.h"
#include "pcp/rpc/tensor_list.h"
#include "pcp/testing/tensor_testing.h"

namespace pcp {
namespace {

using ::testing::HasSubstr;

Tensor RandomF32(Shape shape, uint32_t seed) { return testing::RandomTensor({DType::kF32, std::move(shape)}, seed); }

std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

// The same bytes as a ByteBuffer of many small slices, as gRPC hands over received data.
grpc::ByteBuffer Fragmented(const std::string& bytes, size_t piece) {
  std::vector<grpc::Slice> slices;
  for (size_t i = 0; i < bytes.size(); i += piece) {
    slices.emplace_back(bytes.data() + i, std::min(piece, bytes.size() - i));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

TEST(ChunkWireTest, ZeroCopyEncodingParsesAsTheOrdinaryMessage) {
  const Tensor t = RandomF32({300000}, 1);  // 1.2 MB: two chunks of 1 MiB
  auto chunker = TensorChunker::Create("lm_head.weight", t);
  ASSERT_TRUE(chunker.ok());
  auto copying = TensorChunker::Create("lm_head.weight", t);
  while (!chunker->done()) {
    v1::WorkerMessage head;
    ChunkPayload payload;
    head.mutable_result_chunk()->set_round(12);
    chunker->Next(head.mutable_result_chunk()->mutable_chunk(), &payload);
    EXPECT_TRUE(head.result_chunk().chunk().data().empty());
    const grpc::ByteBuffer wire = SerializeWithPayload(head, kResultChunkDataPath, payload);

    // What the copying path would have sent.
    v1::WorkerMessage expected;
    expected.mutable_result_chunk()->set_round(12);
    copying->Next(expected.mutable_result_chunk()->mutable_chunk());

    v1::WorkerMessage parsed;
    ASSERT_TRUE(parsed.ParseFromString(Flatten(wire)));
    EXPECT_EQ(parsed.SerializeAsString(), expected.SerializeAsString());
    EXPECT_EQ(parsed.result_chunk().chunk().crc32c(), Crc32c(parsed.result_chunk().chunk().data()));
  }
}

TEST(ChunkWireTest, ParserViewsPayloadWithoutCopyingAndAssembles) {
  const std::vector<NamedTensor> list = {{"a", RandomF32({300000}, 1)},
                                         {"b", RandomF32({0}, 2)},
                                         {"c", RandomF32({7}, 3)}};
  for (bool zero_copy : {true, false}) {
    SCOPED_TRACE(zero_copy ? "zero-copy sender" : "ordinary protobuf sender");
    auto chunker = TensorListChunker::Create(list, ChunkOptions{kMinChunkBytes});
    ASSERT_TRUE(chunker.ok());
    TensorListAssembler assembler;
    assembler.ExpectSpecs(SpecsOf(list));
    ChunkMessageParser parser;
    while (!chunker->done()) {
      v1::ShepherdMessage head;
      head.mutable_parameter_chunk()->set_round(3);
      std::string bytes;
      if (zero_copy) {
        ChunkPayload payload;
        chunker->Next(head.mutable_parameter_chunk()->mutable_chunk(), &payload);
        bytes = Flatten(SerializeWithPayload(head, kParameterChunkDataPath, payload));
      } else {
        chunker->Next(head.mutable_parameter_chunk()->mutable_chunk());
        bytes = head.SerializeAsString();
      }
      // Odd-sized slices split varints and the payload across slice boundaries.
      grpc::ByteBuffer received = Fragmented(bytes, 4093);
      v1::ShepherdMessage msg;
      ASSERT_TRUE(parser.Parse(&received, kParameterChunkDataPath, &msg).ok());
      ASSERT_TRUE(msg.has_parameter_chunk());
      EXPECT_EQ(msg.parameter_chunk().round(), 3u);
      EXPECT_TRUE(msg.parameter_chunk().chunk().data().empty());
      ASSERT_TRUE(assembler.AddPieces(msg.parameter_chunk().chunk(), parser.payload()).ok());
    }
    ASSERT_TRUE(assembler.complete());
    auto back = assembler.Take();
    ASSERT_TRUE(back.ok());
    for (size_t i = 0; i < list.size(); ++i) {
      EXPECT_TRUE(BitwiseEqual((*back)[i].tensor, list[i].tensor)) << list[i].name;
    }
  }
}

TEST(ChunkWireTest, TakenPayloadOutlivesBufferAndNextParse) {
  const std::vector<NamedTensor> list = {{"a", RandomF32({70000}, 4)}, {"b", RandomF32({5}, 5)}};
  auto chunker = TensorListChunker::Create(list, ChunkOptions{kMinChunkBytes});
  ASSERT_TRUE(chunker.ok());
  ChunkMessageParser parser;
  std::vector<std::pair<v1::ShepherdMessage, ReceivedPayload>> queued;
  while (!chunker->done()) {
    v1::ShepherdMessage head;
    ChunkPayload payload;
    chunker->Next(head.mutable_parameter_chunk()->mutable_chunk(), &payload);
    // Tiny slices are stored inline in grpc_slice itself: the views must survive the move.
    grpc::ByteBuffer received = Fragmented(Flatten(SerializeWithPayload(head, kParameterChunkDataPath, payload)), 7);
    v1::ShepherdMessage msg;
    ASSERT_TRUE(parser.Parse(&received, kParameterChunkDataPath, &msg).ok());
    queued.emplace_back(std::move(msg), parser.TakePayload());
    EXPECT_TRUE(parser.payload().empty());
  }  // every received buffer is gone, and the parser has parsed later messages
  TensorListAssembler assembler;
  assembler.ExpectSpecs(SpecsOf(list));
  for (auto& [msg, payload] : queued) {
    EXPECT_FALSE(payload.empty());
    ASSERT_TRUE(assembler.AddPieces(msg.parameter_chunk().chunk(), payload.pieces()).ok());
  }
  auto back = assembler.Take();
  ASSERT_TRUE(back.ok());
  for (size_t i = 0; i < list.size(); ++i) EXPECT_TRUE(BitwiseEqual((*back)[i].tensor, list[i].tensor));
}

TEST(ChunkWireTest, EncodedPayloadOutlivesChunkerAndPayload) {
  const std::vector<NamedTensor> list = {{"a", RandomF32({700000}, 6)}, {"b", RandomF32({}, 7)}};
  ChunkOptions options{kMinChunkBytes};
  options.codec = codec::Codec::kInt8;
  std::vector<std::pair<v1::WorkerMessage, ReceivedPayload>> queued;
  ChunkMessageParser parser;
  {
    auto chunker = TensorListChunker::Create(list, options);
    ASSERT_TRUE(chunker.ok());
    ChunkPayload payload;
    std::vector<grpc::ByteBuffer> sent;  // as if gRPC were still sending them all
    while (!chunker->done()) {
      v1::WorkerMessage head;
      chunker->Next(head.mutable_result_chunk()->mutable_chunk(), &payload);
      sent.push_back(SerializeWithPayload(head, kResultChunkDataPath, payload));
    }
    payload = ChunkPayload();
    chunker = absl::InternalError("gone");  // the chunker and its buffer are dropped
    for (grpc::ByteBuffer& wire : sent) {
      grpc::ByteBuffer received = Fragmented(Flatten(wire), 5000);
      v1::WorkerMessage msg;
      ASSERT_TRUE(parser.Parse(&received, kResultChunkDataPath, &msg).ok());
      EXPECT_EQ(msg.result_chunk().chunk().codec(), v1::CODEC_INT8);
      queued.emplace_back(std::move(msg), parser.TakePayload());
    }
  }
  TensorListAssembler assembler;
  assembler.ExpectCodec(codec::Codec::kInt8);
  for (auto& [msg, payload] : queued) {
    ASSERT_TRUE(assembler.AddPieces(msg.result_chunk().chunk(), payload.pieces()).ok());
  }
  auto back = assembler.Take();
  ASSERT_TRUE(back.ok());
  for (size_t i = 0; i < list.size(); ++i) {
    EXPECT_TRUE(testing::TensorsNear((*back)[i].tensor, list[i].tensor, 0, 1.0 / 254 + 1e-6));
  }
}

TEST(ChunkWireTest, ParserHandlesOtherMessagesAndFieldOrders) {
  ChunkMessageParser parser;
  // A message without the path parses as usual.
  v1::ShepherdMessage hb;
  hb.mutable_heartbeat()->set_sequence(42);
  grpc::ByteBuffer buf = Fragmented(hb.SerializeAsString(), 3);
  v1::ShepherdMessage msg;
  ASSERT_TRUE(parser.Parse(&buf, kParameterChunkDataPath, &msg).ok());
  EXPECT_EQ(msg.heartbeat().sequence(), 42u);
  EXPECT_TRUE(parser.payload().empty());

  // Data before the header fields, and the data field twice (the last one wins), as a
  // protobuf parser sees it.
  v1::TensorChunk first, second, rest;
  first.set_data("old");
  second.set_data("new!");
  rest.set_name("x");
  rest.set_offset(5);
  v1::ParameterChunk p1, p2, p3;
  *p1.mutable_chunk() = first;
  *p2.mutable_chunk() = rest;
  p2.set_round(9);
  *p3.mutable_chunk() = second;
  v1::ShepherdMessage m1, m2, m3;
  *m1.mutable_parameter_chunk() = p1;
  *m2.mutable_parameter_chunk() = p2;
  *m3.mutable_parameter_chunk() = p3;
  const std::string bytes = m1.SerializeAsString() + m2.SerializeAsString() + m3.SerializeAsString();
  v1::ShepherdMessage reference;
  ASSERT_TRUE(reference.ParseFromString(bytes));
  grpc::ByteBuffer merged = Fragmented(bytes, 2);
  ASSERT_TRUE(parser.Parse(&merged, kParameterChunkDataPath, &msg).ok());
  std::string payload;
  for (absl::string_view piece : parser.payload()) payload.append(piece.data(), piece.size());
  EXPECT_EQ(payload, reference.parameter_chunk().chunk().data());
  EXPECT_EQ(payload, "new!");
  EXPECT_EQ(msg.parameter_chunk().chunk().name(), "x");
  EXPECT_EQ(msg.parameter_chunk().chunk().offset(), 5u);
  EXPECT_EQ(msg.parameter_chunk().round(), 9u);
}

TEST(ChunkWireTest, MalformedBytesAreInvalidArgument) {
  v1::WorkerMessage head;
  head.mutable_result_chunk()->mutable_chunk()->set_data(std::string(1000, 'x'));
  const std::string good = head.SerializeAsString();
  ChunkMessageParser parser;
  v1::WorkerMessage msg;
  for (const std::string& bad : {good.substr(0, good.size() - 1),  // truncated payload
                                 good.substr(0, 2),                // truncated length
                                 std::string("\x0b\x00", 2),       // a group (wire type 3)
                                 std::string("\x00\x01", 2),       // field number 0
                                 std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11)}) {  // varint overflow
    grpc::ByteBuffer buf = Fragmented(bad, 7);
    const absl::Status s = parser.Parse(&buf, kResultChunkDataPath, &msg);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()), HasSubstr("malformed pcp.v1.WorkerMessage"));
    EXPECT_TRUE(parser.payload().empty());
  }
  grpc::ByteBuffer truncated = Fragmented(good.substr(0, 10), 4);
  EXPECT_FALSE(ParseByteBuffer(&truncated, &msg).ok());
  grpc::ByteBuffer whole = Fragmented(good, 100);
  ASSERT_TRUE(ParseByteBuffer(&whole, &msg).ok());
  EXPECT_EQ(msg.result_chunk().chunk().data().size(), 1000u);
}

TEST(ChunkWireTest, PayloadKeepsTensorAliveWhileBufferLives) {
  grpc::ByteBuffer wire;
  {
    Tensor t = RandomF32({1000}, 5);
    const std::string expected(static_cast<const char*>(t.raw_data()), 4000);
    auto chunker = TensorChunker::Create("t", t);
    v1::WorkerMessage head;
    ChunkPayload payload;
    chunker->Next(head.mutable_result_chunk()->mutable_chunk(), &payload);
    wire = SerializeWithPayload(head, kResultChunkDataPath, payload);
    t = Tensor();
    chunker = absl::InternalError("dropped");
    payload = ChunkPayload();
    v1::WorkerMessage parsed;
    ASSERT_TRUE(parsed.ParseFromString(Flatten(wire)));
    EXPECT_EQ(parsed.result_chunk().chunk().data(), expected);
  }
}

}  // namespace
}  // namespace pcp
