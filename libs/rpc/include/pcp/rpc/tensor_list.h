// A list of named tensors (θ, Δ) as one sequence of TensorChunks: the chunks of tensor 0,
// then of tensor 1, ... (protos/pcp/v1/tensor.proto).
//
//   // Sender
//   PCP_ASSIGN_OR_RETURN(TensorListChunker chunker, TensorListChunker::Create(delta));
//   while (!chunker.done()) {
//     v1::WorkerMessage msg;
//     v1::ResultChunk* r = msg.mutable_result_chunk();
//     r->set_round(round);
//     chunker.Next(r->mutable_chunk());
//     stream->Write(msg);
//   }
//
//   // Receiver: pinning the expected names/dtypes/shapes rejects a Δ of the wrong shape at
//   // its first chunk, with a message naming the tensor.
//   TensorListAssembler assembler;
//   assembler.ExpectSpecs(param_specs);
//   PCP_RETURN_IF_ERROR(assembler.Add(msg.result_chunk().chunk()), _ << "result of round " << r);
//   if (assembler.complete()) { PCP_ASSIGN_OR_RETURN(std::vector<NamedTensor> d, assembler.Take()); }
//
//   // Encoded: ChunkOptions{.codec = codec::Codec::kInt8} at the sender (every tensor must be
//   // f32), assembler.ExpectCodec(codec::Codec::kInt8, "the job's diloco.compression.up")
//   // at the receiver; Take() gives the decoded f32 tensors.
#ifndef PCP_RPC_TENSOR_LIST_H_
#define PCP_RPC_TENSOR_LIST_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pcp/rpc/tensor_chunks.h"
#include "pcp/tensor/safetensors.h"  // NamedTensor
#include "pcp/tensor/tensor.h"

namespace pcp {

// Specs of a list of tensors, in order.
std::vector<TensorSpec> SpecsOf(const std::vector<NamedTensor>& tensors);

// CRC-32C of the tensors' bytes, one after the other in order (StartRound.theta_crc32c: the
// check that a worker's θ replica equals the shepherd's).
uint32_t ListCrc32c(absl::Span<const Tensor> tensors);

class TensorListChunker {
 public:
  // Chunks every tensor of `tensors` in order (sharing their storage: do not modify them
  // until done()), each with `options` (its codec too). Errors: invalid options, an empty
  // list, an invalid tensor, a tensor the codec cannot encode, an empty or repeated name.
  static absl::StatusOr<TensorListChunker> Create(std::vector<NamedTensor> tensors, ChunkOptions options = {});

  bool done() const { return next_ >= tensors_.size(); }
  // Total chunks and bytes (on the wire: encoded, for an encoded list) of the whole list.
  int64_t num_chunks() const { return num_chunks_; }
  int64_t total_bytes() const { return total_bytes_; }
  codec::Codec codec() const { return options_.codec; }
  // Wall time spent encoding the chunks produced so far, in s (TensorChunker::codec_seconds).
  double codec_seconds() const { return codec_seconds_ + (current_ ? current_->codec_seconds() : 0.0); }
  // Overwrites every field of *chunk with the next chunk. Requires !done(). With `payload`,
  // the data stays in place (see TensorChunker::Next).
  void Next(v1::TensorChunk* chunk, ChunkPayload* payload = nullptr);

 private:
  TensorListChunker() = default;
  std::vector<NamedTensor> tensors_;
  ChunkOptions options_;
  size_t next_ = 0;
  std::optional<TensorChunker> current_;
  int64_t num_chunks_ = 0, total_bytes_ = 0;
  double codec_seconds_ = 0;  // of the tensors done
};

class TensorListAssembler {
 public:
  explicit TensorListAssembler(AssemblyLimits limits = {}) : limits_(limits), current_(limits) {}

  // Requires exactly these tensors, in this order. Call before the first Add.
  void ExpectSpecs(std::vector<TensorSpec> specs) { expected_ = std::move(specs); }
  // Receives into these tensors where dtype and shape match (e.g. the previous round's list,
  // handed back): no allocation, zero-fill or page faults. Their storage is overwritten.
  // Call before the first Add.
  void ReuseBuffers(std::vector<NamedTensor> buffers) { reuse_ = std::move(buffers); }
  // Requires every tensor to come with this codec (TensorAssembler::ExpectCodec). Call
  // before the first Add.
  void ExpectCodec(codec::Codec codec, std::string source = {}) {
    expected_codec_ = codec;
    expected_codec_source_ = std::move(source);
  }

  // Streams every tensor to `sink` instead of assembling it (TensorAssembler::StreamTo): the
  // values of each checked chunk (where they lie in the received pieces, valid during the
  // call) with the tensor's index in the list, the element offset and SumOfSquares(values)
  // (computed while checking the CRC; pass both to DeltaSum::Contribution::Add).
  // Take() then gives the names with empty tensors. Call before the first Add.
  using ListSink = std::function<absl::Status(uint32_t tensor, int64_t element_offset, const F32Pieces& values,
                                              double sum_of_squares)>;
  void StreamTo(ListSink sink) { sink_ = std::move(sink); }

  // Validates and copies one chunk. InvalidArgument naming the tensor for any problem: those
  // of TensorAssembler::Add, plus a chunk of another tensor before the current one is
  // complete, a tensor out of order or repeated, a count that changes, exceeds
  // limits.max_list_tensors or differs from the expected specs, a list larger than
  // limits.max_list_bytes (each tensor counted at the larger of its encoded and decoded
  // sizes), a chunk after the list is complete. Sticky after an error.
  absl::Status Add(const v1::TensorChunk& chunk);
  // The same, with the chunk's bytes given as `data` (its data field is ignored), e.g. as
  // parsed by ChunkMessageParser without copying.
  absl::Status AddPieces(const v1::TensorChunk& chunk, DataPieces data);

  bool complete() const { return complete_; }
  // Tensors received completely so far, and the list's length (0 before the first chunk).
  int64_t tensors_received() const { return static_cast<int64_t>(tensors_.size()); }
  uint32_t count() const { return count_; }
  // Wall time spent decoding encoded chunks over the assembler's life, in s (Take keeps it;
  // TensorAssembler::codec_seconds).
  double codec_seconds() const { return current_.codec_seconds(); }

  // Hands out the list and resets the assembler (keeping limits and codec_seconds, dropping
  // ExpectSpecs, ExpectCodec, ReuseBuffers and StreamTo).
  // FailedPrecondition unless complete().
  absl::StatusOr<std::vector<NamedTensor>> Take();

 private:
  absl::Status AddImpl(const v1::TensorChunk& chunk, DataPieces data);

  AssemblyLimits limits_;
  std::optional<std::vector<TensorSpec>> expected_;
  std::vector<NamedTensor> reuse_;
  ListSink sink_;
  std::optional<codec::Codec> expected_codec_;
  std::string expected_codec_source_;
  absl::Status error_;
  TensorAssembler current_;
  std::vector<NamedTensor> tensors_;
  absl::flat_hash_set<std::string> names_;
  uint32_t count_ = 0;
  int64_t list_bytes_ = 0;
  bool complete_ = false;
};

}  // namespace pcp

#endif  // PCP_RPC_TENSOR_LIST_H_
