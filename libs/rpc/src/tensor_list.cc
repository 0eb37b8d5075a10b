#include "pcp/rpc/tensor_list.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "pcp/rpc/crc32c.h"

namespace pcp {
namespace {

std::string Quote(absl::string_view name) {
  if (name.size() > 80) return absl::StrCat("'", name.substr(0, 77), "...'");
  return absl::StrCat("'", name, "'");
}

// What a tensor adds to its list's size: its bytes on the wire and, for an encoded tensor,
// its decoded size if larger (what the receiver allocates). An invalid shape counts as its
// wire bytes; TensorAssembler then refuses it.
uint64_t ListBytes(const v1::TensorChunk& chunk) {
  uint64_t bytes = chunk.total_bytes();
  if (chunk.codec() != v1::CODEC_F32) {
    auto shape = ShapeFromProto(chunk.shape());
    if (shape.ok()) {
      bytes = std::max(bytes, static_cast<uint64_t>(NumElements(*shape)) * sizeof(float));
    }
  }
  return bytes;
}

}  // namespace

uint32_t ListCrc32c(absl::Span<const Tensor> tensors) {
  uint32_t crc = 0;
  for (const Tensor& t : tensors) crc = Crc32cExtend(crc, t.raw_data(), static_cast<size_t>(t.byte_size()));
  return crc;
}

std::vector<TensorSpec> SpecsOf(const std::vector<NamedTensor>& tensors) {
  std::vector<TensorSpec> specs;
  specs.reserve(tensors.size());
  for (const NamedTensor& t : tensors) specs.push_back({t.name, t.tensor.dtype(), t.tensor.shape()});
  return specs;
}

// ---------------------------------------------------------------- TensorListChunker

absl::StatusOr<TensorListChunker> TensorListChunker::Create(std::vector<NamedTensor> tensors, ChunkOptions options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  if (tensors.empty()) return absl::InvalidArgumentError("empty tensor list");
  if (tensors.size() > UINT32_MAX) return absl::InvalidArgumentError("tensor list too long");
  TensorListChunker c;
  absl::flat_hash_set<absl::string_view> names;
  for (size_t i = 0; i < tensors.size(); ++i) {
    // Validates the name and tensor the same way the chunker for it will.
    auto one = TensorChunker::Create(tensors[i].name, tensors[i].tensor, options, static_cast<uint32_t>(i),
                                     static_cast<uint32_t>(tensors.size()));
    if (!one.ok()) return one.status();
    if (!names.insert(tensors[i].name).second) {
      return absl::InvalidArgumentError(absl::StrCat("tensor name ", Quote(tensors[i].name), " appears twice"));
    }
    c.num_chunks_ += one->num_chunks();
    c.total_bytes_ += one->total_bytes();
  }
  c.tensors_ = std::move(tensors);
  c.options_ = options;
  return c;
}

void TensorListChunker::Next(v1::TensorChunk* chunk, ChunkPayload* payload) {
  if (!current_) {
    // Validated in Create.
    current_.emplace(*TensorChunker::Create(tensors_[next_].name, tensors_[next_].tensor, options_,
                                            static_cast<uint32_t>(next_), static_cast<uint32_t>(tensors_.size())));
  }
  current_->Next(chunk, payload);
  if (current_->done()) {
    codec_seconds_ += current_->codec_seconds();
    current_.reset();
    ++next_;
  }
}

// ---------------------------------------------------------------- TensorListAssembler

absl::Status TensorListAssembler::Add(const v1::TensorChunk& chunk) {
  const absl::string_view data = chunk.data();
  return AddPieces(chunk, DataPieces(&data, 1));
}

absl::Status TensorListAssembler::AddPieces(const v1::TensorChunk& chunk, DataPieces data) {
  if (!error_.ok()) return error_;
  absl::Status s = AddImpl(chunk, data);
  if (!s.ok()) error_ = s;
  return s;
}

absl::Status TensorListAssembler::AddImpl(const v1::TensorChunk& chunk, DataPieces data) {
  const auto where = [&] { return absl::StrCat("tensor ", Quote(chunk.name()), " (index ", chunk.index(), ")"); };
  if (complete_) {
    return absl::InvalidArgumentError(absl::StrCat(where(), ": chunk after the tensor list was complete"));
  }
  if (tensors_.empty() && !current_.started()) {
    // The list's first chunk fixes its length.
    if (chunk.count() == 0 || chunk.count() > limits_.max_list_tensors) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(), ": list count ", chunk.count(), " is outside [1, ", limits_.max_list_tensors, "]"));
    }
    if (expected_ && chunk.count() != expected_->size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(), ": list of ", chunk.count(), " tensors, expected ", expected_->size()));
    }
    count_ = chunk.count();
  } else if (chunk.count() != count_) {
    return absl::InvalidArgumentError(
        absl::StrCat(where(), ": list count ", chunk.count(), " differs from the list's first chunk (", count_, ")"));
  }
  if (!current_.started()) {
    // First chunk of the next tensor: it must be the next index.
    const uint32_t want = static_cast<uint32_t>(tensors_.size());
    if (chunk.index() != want) {
      return absl::InvalidArgumentError(absl::StrCat(where(), ": tensor out of order (expected index ", want, ")"));
    }
    if (names_.contains(chunk.name())) {
      return absl::InvalidArgumentError(absl::StrCat(where(), ": repeated tensor name"));
    }
    if (expected_) current_.Expect((*expected_)[want]);
    if (want < reuse_.size()) current_.ReuseBuffer(std::move(reuse_[want].tensor));
    if (expected_codec_) current_.ExpectCodec(*expected_codec_, expected_codec_source_);
    if (sink_) {
      current_.StreamTo([this, want](int64_t offset, const F32Pieces& values, double sum_of_squares) {
        return sink_(want, offset, values, sum_of_squares);
      });
    }
  } else if (chunk.index() != current_.index()) {
    return absl::InvalidArgumentError(absl::StrCat(where(), ": chunk of another tensor while tensor ",
                                                   Quote(current_.name()), " (index ", current_.index(),
                                                   ") is incomplete"));
  }
  const bool was_started = current_.started();
  const uint64_t tensor_bytes = was_started ? 0 : ListBytes(chunk);
  if (!was_started && tensor_bytes > static_cast<uint64_t>(limits_.max_list_bytes - list_bytes_)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where(), ": the list would exceed its limit of ", limits_.max_list_bytes, " bytes"));
  }
  if (absl::Status s = current_.AddPieces(chunk, data); !s.ok()) return s;
  if (!was_started) list_bytes_ += static_cast<int64_t>(tensor_bytes);
  if (current_.complete()) {
    std::string name = current_.name();
    auto tensor = current_.Take();
    if (!tensor.ok()) return tensor.status();
    names_.insert(name);
    tensors_.push_back({std::move(name), *std::move(tensor)});
    complete_ = tensors_.size() == count_;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<NamedTensor>> TensorListAssembler::Take() {
  if (!complete_) {
    return absl::FailedPreconditionError(count_ == 0 ? std::string("no tensor list received")
                                                     : absl::StrCat("tensor list is incomplete: ", tensors_.size(),
                                                                    " of ", count_, " tensors received"));
  }
  std::vector<NamedTensor> out = std::move(tensors_);
  TensorAssembler current = std::move(current_);  // its scratch buffer and codec_seconds
  *this = TensorListAssembler(limits_);
  current_ = std::move(current);
  return out;
}

}  // namespace pcp
