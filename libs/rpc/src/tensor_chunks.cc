#include "pcp/rpc/tensor_chunks.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pcp/base/status_macros.h"
#include "pcp/base/sum_of_squares.h"
#include "pcp/codec/encoded.h"
#include "pcp/rpc/crc32c.h"

namespace pcp {
namespace {

// Names come from peers: keep messages one short line whatever they send.
constexpr size_t kMaxNameLength = 1024;
std::string Quote(absl::string_view name) {
  if (name.size() > 80) return absl::StrCat("'", name.substr(0, 77), "...'");
  return absl::StrCat("'", name, "'");
}

std::string Hex(uint32_t v) { return absl::StrFormat("0x%08x", v); }

int64_t NumChunks(int64_t total, int64_t chunk_bytes) {
  return total == 0 ? 1 : (total + chunk_bytes - 1) / chunk_bytes;
}

// Checks one chunk's size and position against the sequence so far, in the order a reader
// wants the first problem reported: size, position, emptiness, bounds. `where` is the
// message prefix ("tensor 'x' (index 0) at offset 0").
absl::Status CheckChunkPosition(const std::string& where, const AssemblyLimits& limits, int64_t total,
                                int64_t next_offset, uint64_t offset, int64_t size) {
  if (size > limits.max_chunk_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": chunk of ", size, " bytes exceeds the limit of ", limits.max_chunk_bytes, " bytes"));
  }
  if (offset < static_cast<uint64_t>(next_offset)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": duplicate or out-of-order chunk (expected offset ", next_offset, ")"));
  }
  if (offset > static_cast<uint64_t>(next_offset)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": chunks are not contiguous (expected offset ", next_offset, ")"));
  }
  if (size == 0 && total > 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": empty chunk"));
  }
  if (size > total - next_offset) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": chunk of ", size, " bytes runs past the end (total ", total, " bytes)"));
  }
  return absl::OkStatus();
}

// The copies below go in blocks of this size: each block is checksummed, then copied while
// still in L1. 4 KiB: source and destination blocks together stay well inside a 32 KiB L1
// data cache; measured on the 2-vCPU EPYC (AVX-512) with a 1 MiB chunk in 6 pieces, CPU ms
// per 100 MB: copy + CRC 10.1-10.5 at 32 KiB blocks, 6.7-7.1 at 4-8 KiB.
constexpr size_t kCopyBlock = 4 << 10;

// Copies `pieces` to `dest` and returns their CRC, in blocks small enough that each is still
// in cache when it is copied after being checksummed: one pass over memory instead of two.
uint32_t CopyWithCrc(char* dest, DataPieces pieces) {
  size_t written = 0;
  uint32_t crc = 0;
  for (absl::string_view piece : pieces) {
    for (size_t done = 0; done < piece.size();) {
      const size_t n = std::min(kCopyBlock, piece.size() - done);
      crc = Crc32cExtend(crc, piece.data() + done, n);
      std::memcpy(dest + written, piece.data() + done, n);
      written += n;
      done += n;
    }
  }
  return crc;
}

// A streamed raw chunk is checked where it lies, in blocks of this size: each block is
// checksummed, then its values squared while still in L1 (4 KiB measured cheaper than 16 or
// 64 KiB: bench/results/rpc_stream.md, rxfuse).
constexpr size_t kCheckBlock = 4 << 10;

// The CRC of `pieces` and, into `squares`, the sum of squares of the f32 values they hold
// (boundaries anywhere): one read-only pass, nothing copied.
uint32_t CrcWithSquares(DataPieces pieces, SquareBytes* squares) {
  uint32_t crc = 0;
  for (absl::string_view piece : pieces) {
    for (size_t done = 0; done < piece.size();) {
      const size_t n = std::min(kCheckBlock, piece.size() - done);
      crc = Crc32cExtend(crc, piece.data() + done, n);
      squares->Add(piece.data() + done, n);
      done += n;
    }
  }
  return crc;
}

// Compares the CRC of the chunk's data (`actual`) with the one it states, and on the last
// chunk the CRC of everything with `whole_crc`. Returns the CRC of the bytes so far.
absl::StatusOr<uint32_t> CheckCrcs(const std::string& where, int64_t total, int64_t next_offset, int64_t size,
                                   uint32_t running_crc, uint32_t actual, uint32_t crc, uint32_t whole_crc) {
  if (actual != crc) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": crc32c mismatch (data ", Hex(actual), ", chunk says ", Hex(crc), ")"));
  }
  const uint32_t combined = Crc32cCombine(running_crc, actual, static_cast<uint64_t>(size));
  if (next_offset + size == total && combined != whole_crc) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": crc32c of the whole ", Hex(combined), " differs from the ",
                                                   Hex(whole_crc), " its last chunk states"));
  }
  return combined;
}

int64_t PiecesSize(DataPieces pieces) {
  size_t n = 0;
  for (absl::string_view p : pieces) n += p.size();
  return static_cast<int64_t>(n);
}

// Encoded bytes of `count` values (a sparse codec's most); the block size and density were
// validated in ChunkOptions::Validate.
int64_t EncodedBytes(codec::Codec codec, int64_t count, int block_size, double density = 0) {
  return static_cast<int64_t>(*codec::EncodedSize(codec, static_cast<size_t>(count), block_size, density));
}

// A chunk's scratch (an encoded chunk's decoded values when streamed, an encoded chunk
// gathered from several pieces) is used only within one Add and handed to the sink
// synchronously, so one per thread serves every assembler on it: a shepherd receiving from
// M workers holds (its receiving threads) x one chunk, not M x one chunk (at 256 workers and
// 256 KiB chunks, 64 MiB of the peak).
std::vector<float>& ThreadValues() {
  thread_local std::vector<float> values;
  return values;
}
std::string& ThreadScratch() {
  thread_local std::string scratch;
  return scratch;
}

}  // namespace

int64_t ChunkBytesForPeer(uint64_t accepted) {
  if (accepted == 0) return kDefaultChunkBytes;
  return static_cast<int64_t>(std::clamp<uint64_t>(accepted, kMinChunkBytes, kMaxChunkBytes));
}

absl::Status ChunkOptions::Validate() const {
  if (chunk_bytes < kMinChunkBytes || chunk_bytes > kMaxChunkBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk size ", chunk_bytes, " bytes is outside [", kMinChunkBytes, ", ", kMaxChunkBytes, "]"));
  }
  PCP_RETURN_IF_ERROR(codec::ValidateBlockSize(codec, block_size));
  return codec::ValidateDensity(density);
}

// ---------------------------------------------------------------- TensorChunker

absl::StatusOr<TensorChunker> TensorChunker::Create(std::string name, Tensor tensor, ChunkOptions options,
                                                    uint32_t index, uint32_t count) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  if (name.empty() || name.size() > kMaxNameLength) {
    return absl::InvalidArgumentError(absl::StrCat("tensor name must have 1 to ", kMaxNameLength, " characters"));
  }
  if (!tensor.valid()) {
    return absl::InvalidArgumentError(absl::StrCat("tensor ", Quote(name), " has no storage"));
  }
  if (index >= count) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor ", Quote(name), ": index ", index, " is not below the count ", count));
  }
  if (options.codec != codec::Codec::kF32 && tensor.dtype() != DType::kF32) {
    return absl::InvalidArgumentError(absl::StrCat("tensor ", Quote(name), ": codec ", codec::CodecName(options.codec),
                                                   " encodes f32 tensors only, not ", tensor.TypeString()));
  }
  TensorChunker c;
  c.name_ = std::move(name);
  c.tensor_ = std::move(tensor);
  c.chunk_bytes_ = options.chunk_bytes;
  c.index_ = index;
  c.count_ = count;
  c.codec_ = options.codec;
  c.block_size_ = options.block_size;
  if (c.codec_ == codec::Codec::kF32) {
    c.total_ = c.tensor_.byte_size();
    c.num_chunks_ = NumChunks(c.total_, c.chunk_bytes_);
    return c;
  }
  // Encoded sizes grow by the same amount per block (per value without blocks), so the most
  // whole blocks that fit a chunk follow from the size of one and two of them.
  const int block =
      codec::IsBlockwise(c.codec_) ? (c.block_size_ != 0 ? c.block_size_ : codec::DefaultBlockSize(c.codec_)) : 1;
  c.density_ = options.density;
  const int64_t per_block = EncodedBytes(c.codec_, 2 * block, c.block_size_, c.density_) -
                            EncodedBytes(c.codec_, block, c.block_size_, c.density_);
  const int64_t fixed = EncodedBytes(c.codec_, block, c.block_size_, c.density_) - per_block;
  // >= 1 block at kMinChunkBytes (128 KiB): int8 at the largest block, 65536 values, is 64 KiB
  // + its scale.
  c.chunk_elements_ = (c.chunk_bytes_ - fixed) / per_block * block;
  const int64_t elements = c.tensor_.num_elements();
  const int64_t full = elements / c.chunk_elements_;
  const int64_t rest = elements % c.chunk_elements_;
  c.num_chunks_ = elements == 0 ? 1 : full + (rest > 0 ? 1 : 0);
  if (codec::IsSparse(c.codec_)) {
    // Sizes depend on the values: every chunk is encoded now, so total_bytes is known before
    // the first one goes out (a sparse tensor's chunks are a few % of its f32 bytes).
    const auto start = std::chrono::steady_clock::now();
    c.total_ = 0;
    for (int64_t at = 0; at < elements; at += c.chunk_elements_) {
      const int64_t n = std::min(c.chunk_elements_, elements - at);
      PCP_ASSIGN_OR_RETURN(std::string bytes,
                           codec::Encode(c.codec_,
                                         absl::MakeConstSpan(c.tensor_.data<float>() + at, static_cast<size_t>(n)),
                                         c.block_size_, c.density_));
      c.total_ += static_cast<int64_t>(bytes.size());
      c.sparse_chunks_.push_back(std::make_shared<std::string>(std::move(bytes)));
    }
    c.codec_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return c;
  }
  c.total_ = full * EncodedBytes(c.codec_, c.chunk_elements_, c.block_size_) +
             (rest > 0 ? EncodedBytes(c.codec_, rest, c.block_size_) : 0);
  return c;
}

void TensorChunker::Next(v1::TensorChunk* chunk, ChunkPayload* payload) {
  if (codec_ != codec::Codec::kF32) return NextEncoded(chunk, payload);
  const int64_t size = std::min(chunk_bytes_, total_ - offset_);
  const char* bytes = static_cast<const char*>(tensor_.raw_data()) + offset_;
  chunk->set_name(name_);
  chunk->set_index(index_);
  chunk->set_count(count_);
  chunk->set_dtype(DTypeToProto(tensor_.dtype()));
  ShapeToProto(tensor_.shape(), chunk->mutable_shape());
  chunk->set_total_bytes(static_cast<uint64_t>(total_));
  chunk->set_offset(static_cast<uint64_t>(offset_));
  chunk->set_codec(v1::CODEC_F32);
  if (payload != nullptr) {
    chunk->clear_data();
    payload->data = bytes;
    payload->size = static_cast<size_t>(size);
    payload->owner = tensor_;
    payload->encoded.reset();
  } else {
    chunk->set_data(bytes, static_cast<size_t>(size));
  }
  const uint32_t crc = Crc32c(bytes, static_cast<size_t>(size));
  chunk->set_crc32c(crc);
  running_crc_ = Crc32cCombine(running_crc_, crc, static_cast<uint64_t>(size));
  offset_ += size;
  done_ = offset_ >= total_;
  chunk->set_tensor_crc32c(done_ ? running_crc_ : 0);
}

void TensorChunker::NextEncoded(v1::TensorChunk* chunk, ChunkPayload* payload) {
  const int64_t n = std::min(chunk_elements_, tensor_.num_elements() - element_offset_);
  const bool sparse = codec::IsSparse(codec_);
  const size_t size = n == 0   ? 0
                      : sparse ? sparse_chunks_[next_sparse_]->size()
                               : static_cast<size_t>(EncodedBytes(codec_, n, block_size_));
  chunk->set_name(name_);
  chunk->set_index(index_);
  chunk->set_count(count_);
  chunk->set_dtype(v1::DTYPE_F32);
  ShapeToProto(tensor_.shape(), chunk->mutable_shape());
  chunk->set_total_bytes(static_cast<uint64_t>(total_));
  chunk->set_offset(static_cast<uint64_t>(offset_));
  chunk->set_codec(CodecToProto(codec_));
  char* out;
  if (sparse && n > 0) {
    // Encoded in Create: handed out as it is (zero-copy with `payload`).
    std::shared_ptr<std::string> bytes = std::move(sparse_chunks_[next_sparse_++]);
    out = bytes->data();
    if (payload != nullptr) {
      payload->owner = Tensor();
      chunk->clear_data();
      payload->data = out;
      payload->size = size;
      payload->encoded = bytes;
    } else {
      chunk->set_data(*bytes);
      out = chunk->mutable_data()->data();
    }
  } else if (payload != nullptr) {
    // The previous chunk's buffer is reused once nobody else holds it (gRPC has sent it);
    // the caller's payload is dropped first so that its reference does not count.
    payload->owner = Tensor();
    payload->encoded.reset();
    if (buffer_ == nullptr || buffer_.use_count() != 1) {
      buffer_ = std::make_shared<std::string>();
    } else {
      // use_count() is a relaxed load: order the last holder's reads of the bytes (before
      // its release decrement) before our writes.
      std::atomic_thread_fence(std::memory_order_acquire);
    }
    buffer_->resize(size);
    out = buffer_->data();
    chunk->clear_data();
    payload->data = out;
    payload->size = size;
    payload->encoded = buffer_;
  } else {
    chunk->mutable_data()->resize(size);
    out = chunk->mutable_data()->data();
  }
  if (n > 0 && !sparse) {
    const absl::Span<const float> values(tensor_.data<float>() + element_offset_, static_cast<size_t>(n));
    const auto start = std::chrono::steady_clock::now();
    // Cannot fail: the size and block size were validated in Create.
    codec::EncodeInto(codec_, values, block_size_, absl::MakeSpan(out, size)).IgnoreError();
    codec_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  const uint32_t crc = Crc32c(out, size);
  chunk->set_crc32c(crc);
  running_crc_ = Crc32cCombine(running_crc_, crc, size);
  offset_ += static_cast<int64_t>(size);
  element_offset_ += n;
  done_ = offset_ >= total_;
  chunk->set_tensor_crc32c(done_ ? running_crc_ : 0);
}

// ---------------------------------------------------------------- TensorAssembler

std::string TensorAssembler::Where(uint64_t offset) const {
  return absl::StrCat("tensor ", Quote(name_), " (index ", index_, ") at offset ", offset);
}

absl::Status TensorAssembler::Fail(const absl::Status& status) {
  error_ = status;
  return status;
}

absl::Status TensorAssembler::Start(const v1::TensorChunk& chunk, DataPieces data) {
  name_ = chunk.name();
  index_ = chunk.index();
  count_ = chunk.count();
  const std::string where = Where(chunk.offset());
  if (name_.empty() || name_.size() > kMaxNameLength) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": the name must have 1 to ", kMaxNameLength, " characters"));
  }
  if (index_ >= count_) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": index is not below the list's count ", count_));
  }
  auto codec = CodecFromProto(chunk.codec());
  if (!codec.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", codec.status().message()));
  }
  if (expected_codec_ && *expected_codec_ != *codec) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": expected codec ", codec::CodecName(*expected_codec_),
                     expected_codec_source_.empty() ? "" : absl::StrCat(" (", expected_codec_source_, ")"), ", got ",
                     codec::CodecName(*codec)));
  }
  auto dtype = DTypeFromProto(chunk.dtype());
  if (!dtype.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ": ", dtype.status().message()));
  auto shape = ShapeFromProto(chunk.shape());
  if (!shape.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ": ", shape.status().message()));
  const int64_t elements = NumElements(*shape);
  const int64_t expected_bytes = elements * SizeOf(*dtype);  // decoded
  int64_t wire_bytes = expected_bytes;
  if (*codec != codec::Codec::kF32) {
    if (*dtype != DType::kF32) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": codec ", codec::CodecName(*codec),
                                                     " carries f32 tensors only, not ", TypeString(*dtype, *shape)));
    }
    // The encoded size is checked chunk by chunk; here only that it is bounded and zero
    // exactly for a tensor without elements (a total below the true one fails at the end).
    if (chunk.total_bytes() > static_cast<uint64_t>(limits_.max_tensor_bytes)) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": encoded tensor of ", chunk.total_bytes(),
                                                     " bytes exceeds the limit of ", limits_.max_tensor_bytes,
                                                     " bytes"));
    }
    wire_bytes = static_cast<int64_t>(chunk.total_bytes());
    if ((wire_bytes == 0) != (elements == 0)) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": total_bytes ", wire_bytes, " does not suit codec ",
                                                     codec::CodecName(*codec), " for ", TypeString(*dtype, *shape),
                                                     " (", elements, " elements)"));
    }
  } else if (chunk.total_bytes() != static_cast<uint64_t>(expected_bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": total_bytes ", chunk.total_bytes(), " does not match ",
                                                   TypeString(*dtype, *shape), " (", expected_bytes, " bytes)"));
  }
  if (expected_bytes > limits_.max_tensor_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": tensor of ", expected_bytes,
                                                   " bytes exceeds the limit of ", limits_.max_tensor_bytes, " bytes"));
  }
  if (expected_) {
    if (expected_->name != name_) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": expected tensor ", Quote(expected_->name)));
    }
    if (expected_->dtype != *dtype || expected_->shape != *shape) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": expected ",
                                                     TypeString(expected_->dtype, expected_->shape), ", got ",
                                                     TypeString(*dtype, *shape)));
    }
  }
  // Check the first chunk's position before allocating for the whole tensor.
  const int64_t size = PiecesSize(data);
  PCP_RETURN_IF_ERROR(CheckChunkPosition(where, limits_, wire_bytes, 0, chunk.offset(), size));
  wire_dtype_ = chunk.dtype();
  total_ = wire_bytes;
  codec_ = *codec;
  elements_ = elements;
  if (sink_ && *dtype != DType::kF32) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": a streamed tensor must be f32, not ", TypeString(*dtype, *shape)));
  }
  dtype_ = *dtype;
  shape_ = *shape;
  if (sink_) {
    // Streamed: no tensor.
  } else if (reuse_.valid() && reuse_.dtype() == *dtype && reuse_.shape() == *shape) {
    tensor_ = std::move(reuse_);
  } else {
    tensor_ = Tensor(*dtype, *std::move(shape));
  }
  reuse_ = Tensor();
  started_ = true;
  if (codec_ != codec::Codec::kF32) return DecodeIn(where, chunk, data, size);
  return CopyIn(where, chunk, data, size);
}

absl::Status TensorAssembler::CopyIn(const std::string& where, const v1::TensorChunk& chunk, DataPieces data,
                                     int64_t size) {
  if (sink_ && (next_offset_ % 4 != 0 || size % 4 != 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": a chunk of ", size, " bytes splits an f32 value (streamed tensors take whole values)"));
  }
  uint32_t actual = 0;
  double squares = 0;
  if (sink_) {
    // Checked where it lies (no copy): the CRC and the sum of squares for the sink's norm
    // check in one pass; the sink reads the values from the pieces, still in cache.
    SquareBytes lanes;
    actual = CrcWithSquares(data, &lanes);
    squares = lanes.Finish();
  } else {
    actual = CopyWithCrc(static_cast<char*>(tensor_.raw_data()) + next_offset_, data);
  }
  PCP_ASSIGN_OR_RETURN(running_crc_, CheckCrcs(where, total_, next_offset_, size, running_crc_, actual, chunk.crc32c(),
                                               chunk.tensor_crc32c()));
  if (sink_) PCP_RETURN_IF_ERROR(Emit(where, next_offset_ / 4, F32Pieces(data), squares));
  next_offset_ += size;
  complete_ = next_offset_ == total_;
  return absl::OkStatus();
}

absl::Status TensorAssembler::DecodeIn(const std::string& where, const v1::TensorChunk& chunk, DataPieces data,
                                       int64_t size) {
  // The codecs decode a contiguous buffer; a chunk that gRPC received in several slices is
  // gathered first (one copy of the encoded bytes, a quarter or less of the decoded ones).
  absl::string_view bytes;
  uint32_t actual = 0;
  if (data.size() == 1) {
    bytes = data[0];
    actual = Crc32c(bytes);
  } else if (size > 0) {
    std::string& scratch = ThreadScratch();
    scratch.resize(static_cast<size_t>(size));
    actual = CopyWithCrc(scratch.data(), data);
    bytes = scratch;
  }
  PCP_ASSIGN_OR_RETURN(running_crc_, CheckCrcs(where, total_, next_offset_, size, running_crc_, actual, chunk.crc32c(),
                                               chunk.tensor_crc32c()));
  const absl::string_view name = codec::CodecName(codec_);
  if (size > 0) {
    auto header = codec::ReadHeader(bytes);
    if (!header.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", header.status().message()));
    }
    if (header->codec != codec_) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": chunk of codec ", name, " holds a buffer encoded with ",
                                                     codec::CodecName(header->codec)));
    }
    const uint64_t remaining = static_cast<uint64_t>(elements_ - next_element_);
    if (header->count == 0 || header->count > remaining) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": codec ", name, " chunk holds ", header->count,
                                                     " elements, only ", remaining, " remain"));
    }
    std::vector<float>& values = ThreadValues();
    if (sink_) values.resize(header->count);
    float* out = sink_ ? values.data() : tensor_.data<float>() + next_element_;
    const auto start = std::chrono::steady_clock::now();
    const absl::Status decoded = codec::Decode(bytes, absl::MakeSpan(out, header->count));
    codec_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!decoded.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ": ", decoded.message()));
    if (sink_) PCP_RETURN_IF_ERROR(Emit(where, next_element_, F32Pieces(values), SumOfSquares(values)));
    next_element_ += static_cast<int64_t>(header->count);
  }
  next_offset_ += size;
  complete_ = next_offset_ == total_;
  if (complete_ && next_element_ != elements_) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": codec ", name, " stream ends after ", next_element_, " of ", elements_, " elements"));
  }
  return absl::OkStatus();
}

absl::Status TensorAssembler::Emit(const std::string& where, int64_t offset, const F32Pieces& values,
                                   double sum_of_squares) {
  absl::Status s = sink_(offset, values, sum_of_squares);
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(where, ": ", s.message()));
}

absl::Status TensorAssembler::Add(const v1::TensorChunk& chunk) {
  const absl::string_view data = chunk.data();
  return AddPieces(chunk, DataPieces(&data, 1));
}

absl::Status TensorAssembler::AddPieces(const v1::TensorChunk& chunk, DataPieces data) {
  if (!error_.ok()) return error_;
  if (!started_) return Fail(Start(chunk, data));
  const std::string where = Where(chunk.offset());
  if (complete_) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(where, ": chunk after the tensor was complete")));
  }
  // Every chunk repeats the tensor's description; the first one fixed it.
  const char* field = nullptr;
  if (chunk.name() != name_) {
    field = "name";
  } else if (chunk.index() != index_) {
    field = "index";
  } else if (chunk.count() != count_) {
    field = "count";
  } else if (chunk.dtype() != wire_dtype_) {
    field = "dtype";
  } else if (chunk.codec() != static_cast<int>(codec_)) {
    field = "codec";
  } else if (chunk.total_bytes() != static_cast<uint64_t>(total_)) {
    field = "total_bytes";
  } else if (!std::equal(chunk.shape().begin(), chunk.shape().end(), shape_.begin(), shape_.end())) {
    field = "shape";
  }
  if (field != nullptr) {
    return Fail(
        absl::InvalidArgumentError(absl::StrCat(where, ": chunk's ", field, " differs from the tensor's first chunk")));
  }
  const int64_t size = PiecesSize(data);
  if (absl::Status s = CheckChunkPosition(where, limits_, total_, next_offset_, chunk.offset(), size); !s.ok()) {
    return Fail(s);
  }
  if (codec_ != codec::Codec::kF32) return Fail(DecodeIn(where, chunk, data, size));
  return Fail(CopyIn(where, chunk, data, size));
}

absl::StatusOr<Tensor> TensorAssembler::Take() {
  if (!complete_) {
    return absl::FailedPreconditionError(
        started_
            ? absl::StrCat("tensor ", Quote(name_), " is incomplete: ", next_offset_, " of ", total_, " bytes received")
            : std::string("no tensor received"));
  }
  Tensor t = std::move(tensor_);
  const double codec_seconds = codec_seconds_;
  *this = TensorAssembler(limits_);
  codec_seconds_ = codec_seconds;
  return t;
}

// ---------------------------------------------------------------- BlobChunker

absl::StatusOr<BlobChunker> BlobChunker::Create(std::string name, absl::string_view data, ChunkOptions options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  if (options.codec != codec::Codec::kF32) {
    return absl::InvalidArgumentError(
        absl::StrCat("blob ", Quote(name), ": blobs are sent raw, not as codec ", codec::CodecName(options.codec)));
  }
  if (name.empty() || name.size() > kMaxNameLength) {
    return absl::InvalidArgumentError(absl::StrCat("blob name must have 1 to ", kMaxNameLength, " characters"));
  }
  BlobChunker c;
  c.name_ = std::move(name);
  c.data_ = data;
  c.chunk_bytes_ = options.chunk_bytes;
  return c;
}

int64_t BlobChunker::num_chunks() const { return NumChunks(static_cast<int64_t>(data_.size()), chunk_bytes_); }

void BlobChunker::Next(v1::BlobChunk* chunk) {
  const int64_t total = static_cast<int64_t>(data_.size());
  const int64_t size = std::min(chunk_bytes_, total - offset_);
  const absl::string_view piece = data_.substr(offset_, size);
  chunk->set_name(name_);
  chunk->set_total_bytes(static_cast<uint64_t>(total));
  chunk->set_offset(static_cast<uint64_t>(offset_));
  chunk->set_data(piece.data(), piece.size());
  const uint32_t crc = Crc32c(piece);
  chunk->set_crc32c(crc);
  running_crc_ = Crc32cCombine(running_crc_, crc, piece.size());
  offset_ += size;
  done_ = offset_ >= total;
  chunk->set_blob_crc32c(done_ ? running_crc_ : 0);
}

// ---------------------------------------------------------------- BlobAssembler

std::string BlobAssembler::Where(uint64_t offset) const {
  return absl::StrCat("blob ", Quote(name_), " at offset ", offset);
}

absl::Status BlobAssembler::Fail(const absl::Status& status) {
  error_ = status;
  return status;
}

absl::Status BlobAssembler::Add(const v1::BlobChunk& chunk) {
  if (!error_.ok()) return error_;
  if (!started_) {
    name_ = chunk.name();
    const std::string where = Where(chunk.offset());
    if (name_.empty() || name_.size() > kMaxNameLength) {
      return Fail(
          absl::InvalidArgumentError(absl::StrCat(where, ": the name must have 1 to ", kMaxNameLength, " characters")));
    }
    if (expected_name_ && *expected_name_ != name_) {
      return Fail(absl::InvalidArgumentError(absl::StrCat(where, ": expected blob ", Quote(*expected_name_))));
    }
    if (chunk.total_bytes() > static_cast<uint64_t>(limits_.max_tensor_bytes)) {
      return Fail(
          absl::InvalidArgumentError(absl::StrCat(where, ": blob of ", chunk.total_bytes(),
                                                  " bytes exceeds the limit of ", limits_.max_tensor_bytes, " bytes")));
    }
    if (expected_total_ >= 0 && chunk.total_bytes() != static_cast<uint64_t>(expected_total_)) {
      return Fail(absl::InvalidArgumentError(
          absl::StrCat(where, ": blob of ", chunk.total_bytes(), " bytes, expected ", expected_total_)));
    }
    total_ = static_cast<int64_t>(chunk.total_bytes());
  } else {
    const std::string where = Where(chunk.offset());
    if (complete_) {
      return Fail(absl::InvalidArgumentError(absl::StrCat(where, ": chunk after the blob was complete")));
    }
    if (chunk.name() != name_ || chunk.total_bytes() != static_cast<uint64_t>(total_)) {
      return Fail(
          absl::InvalidArgumentError(absl::StrCat(where, ": chunk's ", chunk.name() != name_ ? "name" : "total_bytes",
                                                  " differs from the blob's first chunk")));
    }
  }
  const std::string where = Where(chunk.offset());
  const int64_t next = static_cast<int64_t>(data_.size());
  const int64_t size = static_cast<int64_t>(chunk.data().size());
  if (absl::Status s = CheckChunkPosition(where, limits_, total_, next, chunk.offset(), size); !s.ok()) {
    return Fail(s);
  }
  auto crc =
      CheckCrcs(where, total_, next, size, running_crc_, Crc32c(chunk.data()), chunk.crc32c(), chunk.blob_crc32c());
  if (!crc.ok()) return Fail(crc.status());
  if (!started_) data_.reserve(static_cast<size_t>(total_));
  started_ = true;
  data_.append(chunk.data());
  running_crc_ = *crc;
  complete_ = static_cast<int64_t>(data_.size()) == total_;
  return absl::OkStatus();
}

absl::StatusOr<std::string> BlobAssembler::Take() {
  if (!complete_) {
    return absl::FailedPreconditionError(
        started_
            ? absl::StrCat("blob ", Quote(name_), " is incomplete: ", data_.size(), " of ", total_, " bytes received")
            : std::string("no blob received"));
  }
  std::string out = std::move(data_);
  *this = BlobAssembler(limits_);
  return out;
}

}  // namespace pcp
