#include "pcp/loadgen/synthetic_delta.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "pcp/codec/encoded.h"
#include "pcp/rpc/chunk_wire.h"
#include "pcp/rpc/tensor_list.h"
#include "pcp/tensor/safetensors.h"
#include "pcp/v1/training.pb.h"

namespace pcp::loadgen {
namespace {

// SplitMix64: a fast, well-mixed stream of 64-bit values from one seed.
uint64_t NextRandom(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace

absl::StatusOr<std::shared_ptr<const SyntheticDelta>> SyntheticDelta::Create(const std::vector<TensorSpec>& specs,
                                                                             codec::Codec codec,
                                                                             SyntheticDeltaOptions options) {
  if (specs.empty()) return absl::InvalidArgumentError("synthetic Δ: the parameter list is empty");
  if (!(options.scale > 0) || !std::isfinite(options.scale)) {
    return absl::InvalidArgumentError(absl::StrCat("synthetic Δ: scale must be finite and > 0, got ", options.scale));
  }
  std::shared_ptr<SyntheticDelta> delta(new SyntheticDelta());
  delta->codec_ = codec;
  uint64_t state = options.seed;
  double sum_squares = 0;
  std::vector<NamedTensor> named;
  named.reserve(specs.size());
  for (const TensorSpec& spec : specs) {
    if (spec.dtype != DType::kF32) {
      return absl::InvalidArgumentError(absl::StrCat("synthetic Δ: parameter '", spec.name, "' is ",
                                                     MlirName(spec.dtype), ", only f32 parameters are supported"));
    }
    Tensor t(DType::kF32, spec.shape);
    float* v = t.data<float>();
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      // 24 random bits -> [-1, 1) -> [-scale, scale).
      const float unit = static_cast<float>(NextRandom(&state) >> 40) * (2.0f / 16777216.0f) - 1.0f;
      v[i] = unit * options.scale;
      sum_squares += static_cast<double>(v[i]) * v[i];
    }
    named.push_back({spec.name, std::move(t)});
  }
  delta->norm_ = std::sqrt(sum_squares);
  absl::StatusOr<TensorListChunker> chunker =
      TensorListChunker::Create(std::move(named), ChunkOptions{.chunk_bytes = options.chunk_bytes, .codec = codec});
  if (!chunker.ok()) return absl::InvalidArgumentError(absl::StrCat("synthetic Δ: ", chunker.status().message()));
  double decoded_squares = 0;
  std::vector<float> scratch;
  while (!chunker->done()) {
    std::pair<v1::TensorChunk, ChunkPayload> c;
    // A fresh payload per chunk: an encoded chunk then gets its own buffer (the chunker
    // reuses a buffer only once nobody holds it), which every stream shares.
    chunker->Next(&c.first, &c.second);
    delta->data_bytes_ += static_cast<int64_t>(c.second.size);
    if (codec != codec::Codec::kF32 && c.second.size > 0) {
      // The norm the shepherd will see: of the values as it decodes them.
      const absl::string_view bytes(c.second.data, c.second.size);
      absl::StatusOr<codec::EncodedHeader> header = codec::ReadHeader(bytes);
      if (!header.ok()) return absl::InternalError(absl::StrCat("synthetic Δ: ", header.status().message()));
      scratch.resize(header->count);
      if (absl::Status s = codec::Decode(bytes, absl::MakeSpan(scratch)); !s.ok()) {
        return absl::InternalError(absl::StrCat("synthetic Δ: ", s.message()));
      }
      for (float v : scratch) decoded_squares += static_cast<double>(v) * v;
    }
    delta->chunks_.push_back(std::move(c));
  }
  delta->decoded_norm_ = codec == codec::Codec::kF32 ? delta->norm_ : std::sqrt(decoded_squares);
  return std::shared_ptr<const SyntheticDelta>(std::move(delta));
}

std::vector<grpc::ByteBuffer> SyntheticDelta::Messages(uint64_t round) const {
  std::vector<grpc::ByteBuffer> out;
  out.reserve(chunks_.size());
  v1::WorkerMessage head;
  v1::ResultChunk* r = head.mutable_result_chunk();
  r->set_round(round);
  for (const auto& [chunk, payload] : chunks_) {
    *r->mutable_chunk() = chunk;
    out.push_back(SerializeWithPayload(head, kResultChunkDataPath, payload));
  }
  return out;
}

}  // namespace pcp::loadgen
