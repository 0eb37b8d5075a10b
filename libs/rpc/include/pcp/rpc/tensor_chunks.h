// Chunked transfer of one tensor (TensorChunk) or one byte string (BlobChunk), the unit of
// every tensor stream in pcp.v1 (see protos/pcp/v1/tensor.proto for the rules).
//
//   // Sender: one chunk per message; the chunker shares the tensor's storage.
//   PCP_ASSIGN_OR_RETURN(TensorChunker chunker, TensorChunker::Create("wte", theta));
//   while (!chunker.done()) {
//     v1::ShepherdMessage msg;
//     chunker.Next(msg.mutable_parameter_chunk()->mutable_chunk());
//     stream->Write(msg);
//   }
//
//   // Receiver: strict validation; nothing is allocated before the first chunk's
//   // description (dtype, shape, total size) has been checked against the limits.
//   TensorAssembler assembler;                          // default AssemblyLimits
//   assembler.Expect({"wte", DType::kF32, {65, 128}}); // optional
//   PCP_RETURN_IF_ERROR(assembler.Add(msg.parameter_chunk().chunk()));   // per message
//   if (assembler.complete()) { PCP_ASSIGN_OR_RETURN(Tensor t, assembler.Take()); }
//
//   // Encoded (Δ as int8): each chunk is one encoded buffer of the next run of elements,
//   // encoded when Next() produces it; the receiver decodes each chunk as it arrives.
//   ChunkOptions options;
//   options.codec = codec::Codec::kInt8;
//   PCP_ASSIGN_OR_RETURN(TensorChunker enc, TensorChunker::Create("wte", delta, options));
//   TensorAssembler in;
//   in.ExpectCodec(codec::Codec::kInt8, "the job's diloco.compression.up");  // optional
//   // ... in.Add(chunk) as above; Take() gives the decoded f32 tensor.
//
// Every problem with a peer's chunk is InvalidArgument and names the tensor and the byte
// offset: "tensor 'wte' (index 0) at offset 1048576: crc32c mismatch (...)". An assembler
// that has reported an error keeps reporting it (the stream it listens to is broken).
// Encoded chunks (protos/pcp/v1/tensor.proto, "Encoded tensors") are checked too: a codec
// this build does not know or the receiver did not expect, a header that disagrees with the
// chunk, more elements than remain ("codec int8 chunk holds 300000 elements, only 12
// remain"), a stream that ends short of the shape's element count, a malformed buffer.
// For lists of tensors (θ, Δ) use pcp/rpc/tensor_list.h, built on these classes.
#ifndef PCP_RPC_TENSOR_CHUNKS_H_
#define PCP_RPC_TENSOR_CHUNKS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "pcp/base/f32_pieces.h"
#include "pcp/codec/codec.h"
#include "pcp/rpc/tensor_proto.h"
#include "pcp/tensor/tensor.h"
#include "pcp/v1/tensor.pb.h"

namespace pcp {

// Chunk data sizes, in bytes. Senders use [kMinChunkBytes, kMaxChunkBytes]; receivers refuse
// chunks above kMaxChunkBytes, so no message comes near gRPC's 4 MiB default receive limit.
inline constexpr int64_t kMinChunkBytes = int64_t{128} << 10;
inline constexpr int64_t kMaxChunkBytes = int64_t{1} << 20;
inline constexpr int64_t kDefaultChunkBytes = kMaxChunkBytes;

// The chunk size to send to a peer that accepts chunks of up to `accepted` bytes (the
// shepherd's JoinAck.max_chunk_bytes): `accepted` clamped to [kMinChunkBytes, kMaxChunkBytes];
// 0 (a peer that states no limit) gives kDefaultChunkBytes.
int64_t ChunkBytesForPeer(uint64_t accepted);
// Largest message any PCP stream sends: a full chunk plus generous room for its fields.
inline constexpr int64_t kMaxChunkMessageBytes = kMaxChunkBytes + (int64_t{64} << 10);

struct ChunkOptions {
  // Data bytes per chunk (the last chunk of each tensor may be shorter).
  int64_t chunk_bytes = kDefaultChunkBytes;
  // How tensors are written (TensorChunker only; blobs are always raw). kF32: the tensor's
  // raw bytes, any dtype. Any other codec: f32 tensors only, each chunk one encoded buffer
  // (pcp/codec/encoded.h) of as many elements as fit chunk_bytes encoded, a whole number of
  // blocks except in a tensor's last chunk.
  codec::Codec codec = codec::Codec::kF32;
  // Values per block for a blockwise codec (int8, int4, topk*); 0: the codec's default.
  int block_size = 0;
  // The fraction of each block a sparse codec (topk2/4/8) keeps; 0: codec::kDefaultDensity.
  // A sparse tensor's chunks are encoded when the chunker is made (their sizes depend on the
  // values), each holding the elements whose largest possible encoding fits chunk_bytes.
  double density = 0;
  // InvalidArgument unless kMinChunkBytes <= chunk_bytes <= kMaxChunkBytes, the block
  // size suits the codec (codec::ValidateBlockSize) and the density is valid.
  absl::Status Validate() const;
};

// What a receiver accepts from a peer; everything above is refused before allocating.
struct AssemblyLimits {
  // Largest data field of one chunk.
  int64_t max_chunk_bytes = kMaxChunkBytes;
  // Largest single tensor or blob.
  int64_t max_tensor_bytes = int64_t{1} << 30;
  // Lists (tensor_list.h): largest sum of tensor sizes and most tensors.
  int64_t max_list_bytes = int64_t{8} << 30;
  int64_t max_list_tensors = 65536;
};

// The data of one received chunk as consecutive pieces of gRPC's receive buffers, when it
// was parsed without copying (pcp/rpc/chunk_wire.h). Views; the caller keeps them alive.
using DataPieces = absl::Span<const absl::string_view>;

// The data of one chunk, left in place instead of being copied into the message (see
// TensorChunker::Next and pcp/rpc/chunk_wire.h, which sends it without copying). `data`
// points into the storage that `owner` (a raw chunk: the tensor) or `encoded` (an encoded
// chunk: the buffer it was encoded into) shares and keeps alive; the other one is empty.
struct ChunkPayload {
  const char* data = nullptr;
  size_t size = 0;
  Tensor owner;
  std::shared_ptr<const std::string> encoded;
};

// ---------------------------------------------------------------- tensors

class TensorChunker {
 public:
  // Chunks `tensor` (sharing its storage: do not modify it until done()) as tensor `index`
  // of a list of `count`. Errors: invalid options, an invalid tensor, a codec other than
  // kF32 for a tensor that is not f32, index >= count.
  static absl::StatusOr<TensorChunker> Create(std::string name, Tensor tensor, ChunkOptions options = {},
                                              uint32_t index = 0, uint32_t count = 1);

  // True once every chunk has been produced (a tensor always has at least one chunk).
  bool done() const { return done_; }
  int64_t num_chunks() const { return num_chunks_; }
  const std::string& name() const { return name_; }
  // Bytes on the wire: the tensor's size, or for an encoded tensor its encoded size (the
  // chunks' total_bytes), known before the first chunk is encoded.
  int64_t total_bytes() const { return total_; }
  codec::Codec codec() const { return codec_; }
  // Wall time (steady clock) spent encoding the chunks produced so far, in s; 0 for kF32,
  // whose bytes go out as they are.
  double codec_seconds() const { return codec_seconds_; }

  // Overwrites every field of *chunk with the next chunk (reusing its buffers). Requires
  // !done(). With `payload`, the data field is left empty and the bytes are described in
  // *payload instead (CRCs are still set), for zero-copy sending. An encoded chunk is
  // encoded here: into the data field, or with `payload` into a buffer that
  // payload->encoded owns (reused for the next chunk once every holder has released it, so
  // a caller that keeps one ChunkPayload across calls need not reset it).
  void Next(v1::TensorChunk* chunk, ChunkPayload* payload = nullptr);

 private:
  TensorChunker() = default;
  void NextEncoded(v1::TensorChunk* chunk, ChunkPayload* payload);

  std::string name_;
  Tensor tensor_;
  int64_t chunk_bytes_ = kDefaultChunkBytes;
  uint32_t index_ = 0, count_ = 1;
  int64_t total_ = 0;
  int64_t num_chunks_ = 1;
  int64_t offset_ = 0;
  uint32_t running_crc_ = 0;
  bool done_ = false;
  // Encoded chunks: elements per chunk (but the last), elements chunked so far, the buffer.
  codec::Codec codec_ = codec::Codec::kF32;
  int block_size_ = 0;
  int64_t chunk_elements_ = 0;
  int64_t element_offset_ = 0;
  std::shared_ptr<std::string> buffer_;
  double codec_seconds_ = 0;
  // Sparse codecs: every chunk encoded in Create (the next one handed out by Next).
  double density_ = 0;
  std::vector<std::shared_ptr<std::string>> sparse_chunks_;
  size_t next_sparse_ = 0;
};

class TensorAssembler {
 public:
  explicit TensorAssembler(AssemblyLimits limits = {}) : limits_(limits) {}

  // Requires the tensor to have this name, dtype and shape; checked on the first chunk,
  // before anything is allocated. Call before the first Add.
  void Expect(TensorSpec spec) { expected_ = std::move(spec); }
  // Writes the tensor into `buffer` instead of a new allocation if dtype and shape match
  // (e.g. last round's θ): saves the allocation, zero-fill and page faults. The assembler
  // overwrites the storage, which copies of `buffer` share. Call before the first Add.
  void ReuseBuffer(Tensor buffer) { reuse_ = std::move(buffer); }
  // Requires the chunks to carry this codec (kF32: raw bytes); another is refused at the
  // first chunk: "expected codec int8 (<source>), got f32". `source` says where the
  // expectation comes from (e.g. "the job's diloco.compression.up"); may be empty. Without
  // this, any codec the build knows is accepted. Call before the first Add.
  void ExpectCodec(codec::Codec codec, std::string source = {}) {
    expected_codec_ = codec;
    expected_codec_source_ = std::move(source);
  }

  // Streams the tensor instead of assembling it: each chunk's values go to `sink` once the
  // chunk has been checked (CRCs, position, codec), with the element offset of its first
  // value. A raw chunk's values are handed where they lie, in the received pieces (gRPC's
  // slices; pcp/base/f32_pieces.h), not copied; an encoded chunk is decoded first, into a
  // scratch of one chunk per thread. Nothing of the tensor's size is allocated, and Take()
  // gives an empty Tensor(). f32 tensors only, raw chunks holding whole values. An error
  // from `sink` fails the chunk (annotated with the tensor and offset). The values are valid
  // during the call only. Call before the first Add. (Streaming aggregation:
  // pcp/diloco/delta_sum.h.)
  // The sink also gets SumOfSquares(values) (pcp/base/sum_of_squares.h, same bits), for a
  // norm check without another pass over the values: for raw chunks it is summed in the one
  // read-only pass that checks the chunk's CRC, each block while in cache; an encoded chunk's
  // decoded values are summed after decoding.
  using ValuesSink =
      std::function<absl::Status(int64_t element_offset, const F32Pieces& values, double sum_of_squares)>;
  void StreamTo(ValuesSink sink) { sink_ = std::move(sink); }

  // Validates and copies (an encoded chunk: decodes) one chunk. InvalidArgument naming the
  // tensor and offset for any problem (see the file comment); the same error again after a
  // failure. Limits: the chunk's data size, and the tensor's size both as sent (total_bytes)
  // and decoded, checked at the first chunk before anything is allocated.
  absl::Status Add(const v1::TensorChunk& chunk);
  // The same, with the chunk's bytes given as `data` (its data field is ignored). An
  // encoded chunk in one piece is decoded where it lies; one in several pieces is first
  // gathered (fused with its CRC) into a scratch buffer of at most one chunk.
  absl::Status AddPieces(const v1::TensorChunk& chunk, DataPieces data);

  // Whether a first chunk has been accepted / every byte has arrived.
  bool started() const { return started_; }
  bool complete() const { return complete_; }
  // The tensor's description from its first chunk (valid once started()).
  const std::string& name() const { return name_; }
  uint32_t index() const { return index_; }
  uint32_t count() const { return count_; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  codec::Codec codec() const { return codec_; }
  // Wall time (steady clock) spent decoding encoded chunks over the assembler's life (Take
  // keeps it), in s; raw (kF32) chunks are copied, not decoded, and add nothing.
  double codec_seconds() const { return codec_seconds_; }

  // Hands out the assembled tensor and resets the assembler for another tensor (keeping
  // limits and codec_seconds, dropping Expect, ExpectCodec and ReuseBuffer).
  // FailedPrecondition unless complete().
  absl::StatusOr<Tensor> Take();

 private:
  absl::Status Start(const v1::TensorChunk& chunk, DataPieces data);
  absl::Status CopyIn(const std::string& where, const v1::TensorChunk& chunk, DataPieces data, int64_t size);
  absl::Status DecodeIn(const std::string& where, const v1::TensorChunk& chunk, DataPieces data, int64_t size);
  absl::Status Fail(const absl::Status& status);
  std::string Where(uint64_t offset) const;
  // StreamTo: hands `values` (element `offset` on) and their sum of squares to the sink;
  // errors name `where`.
  absl::Status Emit(const std::string& where, int64_t offset, const F32Pieces& values, double sum_of_squares);

  AssemblyLimits limits_;
  std::optional<TensorSpec> expected_;
  std::optional<codec::Codec> expected_codec_;
  std::string expected_codec_source_;
  Tensor reuse_;
  absl::Status error_;
  bool started_ = false, complete_ = false;
  std::string name_;
  uint32_t index_ = 0, count_ = 0;
  v1::DType wire_dtype_ = v1::DTYPE_UNSPECIFIED;
  DType dtype_ = DType::kF32;
  Shape shape_;
  Tensor tensor_;  // empty when streaming
  ValuesSink sink_;
  int64_t total_ = 0;
  int64_t next_offset_ = 0;
  uint32_t running_crc_ = 0;
  // Encoded tensors: the codec, the decoded element count, elements decoded so far. (A
  // chunk's scratch is the thread's, tensor_chunks.cc.)
  codec::Codec codec_ = codec::Codec::kF32;
  int64_t elements_ = 0;
  int64_t next_element_ = 0;
  double codec_seconds_ = 0;
};

// ---------------------------------------------------------------- byte strings

class BlobChunker {
 public:
  // Chunks `data`, which must stay alive and unchanged until done(). `name` says what the
  // blob is (e.g. a program's content hash, "shard").
  static absl::StatusOr<BlobChunker> Create(std::string name, absl::string_view data, ChunkOptions options = {});
  bool done() const { return done_; }
  int64_t num_chunks() const;
  // Overwrites every field of *chunk with the next chunk. Requires !done().
  void Next(v1::BlobChunk* chunk);

 private:
  BlobChunker() = default;
  std::string name_;
  absl::string_view data_;
  int64_t chunk_bytes_ = kDefaultChunkBytes;
  int64_t offset_ = 0;
  uint32_t running_crc_ = 0;
  bool done_ = false;
};

class BlobAssembler {
 public:
  explicit BlobAssembler(AssemblyLimits limits = {}) : limits_(limits) {}
  // Requires this name and total size (e.g. Assignment.program_hash / program_bytes).
  void Expect(std::string name, int64_t total_bytes) {
    expected_name_ = std::move(name);
    expected_total_ = total_bytes;
  }
  // As TensorAssembler::Add, with limits.max_tensor_bytes bounding the blob's size.
  absl::Status Add(const v1::BlobChunk& chunk);
  bool started() const { return started_; }
  bool complete() const { return complete_; }
  const std::string& name() const { return name_; }
  // Hands out the bytes and resets. FailedPrecondition unless complete().
  absl::StatusOr<std::string> Take();

 private:
  absl::Status Fail(const absl::Status& status);
  std::string Where(uint64_t offset) const;

  AssemblyLimits limits_;
  std::optional<std::string> expected_name_;
  int64_t expected_total_ = -1;
  absl::Status error_;
  bool started_ = false, complete_ = false;
  std::string name_;
  std::string data_;
  int64_t total_ = 0;
  uint32_t running_crc_ = 0;
};

}  // namespace pcp

#endif  // PCP_RPC_TENSOR_CHUNKS_H_
