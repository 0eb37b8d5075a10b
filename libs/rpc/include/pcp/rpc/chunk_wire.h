// Zero-copy sending of chunk messages: the megabyte of tensor data in a chunk message is
// referenced by the outgoing grpc::ByteBuffer instead of being copied into the protobuf
// message and again into gRPC's buffer. For the raw (ByteBuffer) flavours of the generated
// services: Training::WithRawCallbackMethod_Connect on the shepherd, grpc::GenericStub on
// the worker.
//
//   v1::ShepherdMessage msg;
//   ChunkPayload payload;
//   v1::ParameterChunk* p = msg.mutable_parameter_chunk();
//   p->set_round(round);
//   chunker.Next(p->mutable_chunk(), &payload);          // data left in the tensor
//   grpc::ByteBuffer wire = SerializeWithPayload(msg, kParameterChunkDataPath, payload);
//   reactor->StartWrite(&wire);                          // keep `wire` alive until OnWriteDone
//
//   ChunkMessageParser parser;                          // reuse across messages
//   v1::WorkerMessage in;
//   PCP_RETURN_IF_ERROR(parser.Parse(&received, kResultChunkDataPath, &in));
//   if (in.has_result_chunk()) {
//     PCP_RETURN_IF_ERROR(assembler.AddPieces(in.result_chunk().chunk(), parser.payload()));
//   }
//
// How: protobuf merges repeated occurrences of an embedded message, so the bytes of `head`
// followed by a small header and the data as the bytes field at `path` parse as exactly the
// message with the data in place. Any protobuf parser (grpcurl, Python) reads it the same.
#ifndef PCP_RPC_CHUNK_WIRE_H_
#define PCP_RPC_CHUNK_WIRE_H_

#include <grpcpp/support/byte_buffer.h>

#include <array>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "google/protobuf/message_lite.h"
#include "pcp/rpc/tensor_chunks.h"
#include "pcp/v1/training.pb.h"

namespace pcp {

// Field numbers from a message's top level down to its chunk's `data` field.
inline constexpr std::array<int, 3> kResultChunkDataPath = {v1::WorkerMessage::kResultChunkFieldNumber,
                                                            v1::ResultChunk::kChunkFieldNumber,
                                                            v1::TensorChunk::kDataFieldNumber};
inline constexpr std::array<int, 3> kParameterChunkDataPath = {v1::ShepherdMessage::kParameterChunkFieldNumber,
                                                               v1::ParameterChunk::kChunkFieldNumber,
                                                               v1::TensorChunk::kDataFieldNumber};

// `head` (whose chunk data is empty) serialized, followed by `payload` as the bytes field at
// `path`, which must name embedded-message fields and end at a bytes field. The buffer
// references payload.data and holds payload.owner / payload.encoded until gRPC releases it.
grpc::ByteBuffer SerializeWithPayload(const google::protobuf::MessageLite& head, absl::Span<const int> path,
                                      const ChunkPayload& payload);

// Parses all of `buffer` into `msg` (cleared first). InvalidArgument for bytes that are not
// a valid message of that type.
absl::Status ParseByteBuffer(grpc::ByteBuffer* buffer, google::protobuf::MessageLite* msg);

// Chunk data left where gRPC received it: views into gRPC's receive buffers plus the
// references that keep those buffers alive, so a message can be queued and its data copied
// (once, by TensorAssembler::AddPieces) later, on another thread. Moving it copies no bytes.
class ReceivedPayload {
 public:
  DataPieces pieces() const { return pieces_; }
  bool empty() const { return pieces_.empty(); }

 private:
  friend class ChunkMessageParser;
  std::vector<grpc::Slice> slices_;  // moved as a whole, so the views stay valid
  std::vector<absl::string_view> pieces_;
};

// Parses received messages without copying their chunk data: the message comes out with an
// empty data field at `path`, and payload() views those bytes where they lie in gRPC's
// receive buffer, ready for TensorAssembler::AddPieces (one copy, fused with the CRC, from
// the socket buffer into the tensor). A message without that field parses as usual, with an
// empty payload. Any field order and repeated occurrences parse as protobuf would.
class ChunkMessageParser {
 public:
  // InvalidArgument for bytes that are not a valid message of that type. The payload views
  // stay valid until the next Parse or the parser's destruction.
  absl::Status Parse(grpc::ByteBuffer* buffer, absl::Span<const int> path, google::protobuf::MessageLite* msg);
  DataPieces payload() const { return pieces_; }
  // The last parsed message's payload, kept alive past the next Parse (the parser's views
  // are left empty).
  ReceivedPayload TakePayload();

 private:
  std::vector<grpc::Slice> slices_;
  std::vector<absl::string_view> pieces_;
  std::string head_;
};

}  // namespace pcp

#endif  // PCP_RPC_CHUNK_WIRE_H_
