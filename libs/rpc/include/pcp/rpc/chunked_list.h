// A tensor list chunked once (encoded and checksummed once) and sent as the same bytes on any
// number of streams: the shepherd's θ (or θ update) of a round, for every worker.
//
//   PCP_ASSIGN_OR_RETURN(std::shared_ptr<const ChunkedList> list,
//                        ChunkedList::Create(theta, ChunkOptions{.codec = codec::Codec::kInt8}));
//   for (size_t i = 0; i < list->size(); ++i) {
//     v1::TensorChunk chunk = list->chunk(i);        // every field but data (CRCs set)
//     const ChunkPayload& bytes = list->payload(i);  // the data, in place (chunk_wire.h sends it)
//   }
//
// Raw (f32) chunks point into the tensors, which the list shares (do not modify them while it
// lives); encoded chunks into buffers the list owns (|list| × the codec's bits / 32 in all).
// Immutable once built, so any thread may read it.
#ifndef PCP_RPC_CHUNKED_LIST_H_
#define PCP_RPC_CHUNKED_LIST_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "pcp/rpc/tensor_chunks.h"
#include "pcp/tensor/safetensors.h"  // NamedTensor
#include "pcp/v1/tensor.pb.h"

namespace pcp {

class ChunkedList {
 public:
  // Chunks (and encodes) every tensor now; errors as TensorListChunker::Create.
  static absl::StatusOr<std::shared_ptr<const ChunkedList>> Create(std::vector<NamedTensor> tensors,
                                                                   ChunkOptions options = {});

  size_t size() const { return chunks_.size(); }
  const v1::TensorChunk& chunk(size_t i) const { return chunks_[i]; }
  const ChunkPayload& payload(size_t i) const { return payloads_[i]; }
  codec::Codec codec() const { return codec_; }
  // Bytes of chunk data on the wire, and the time the encoding took (0 for f32), in s.
  int64_t total_bytes() const { return total_bytes_; }
  double codec_seconds() const { return codec_seconds_; }

 private:
  ChunkedList() = default;
  std::vector<v1::TensorChunk> chunks_;
  std::vector<ChunkPayload> payloads_;
  codec::Codec codec_ = codec::Codec::kF32;
  int64_t total_bytes_ = 0;
  double codec_seconds_ = 0;
};

}  // namespace pcp

#endif  // PCP_RPC_CHUNKED_LIST_H_
