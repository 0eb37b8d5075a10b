// The pseudo-gradient Δ that every simulated worker of pcp-loadgen sends: made and encoded
// once, then sent from the same buffers on every stream and in every round, so a load
// generator of M workers holds one Δ, not M.
//
//   PCP_ASSIGN_OR_RETURN(std::shared_ptr<const SyntheticDelta> delta,
//                        SyntheticDelta::Create(specs, codec::Codec::kF32, {.seed = 1, .scale = 1e-4f}));
//   for (grpc::ByteBuffer& m : delta->Messages(round)) stream.Write(m);   // ResultChunks of `round`
//
// The values are deterministic pseudo-random numbers, uniform in [-scale, scale], the same
// for every worker (so every Δ has the same L2 norm, about scale × sqrt(|θ| / 3): the
// shepherd's screening, norm_k × the round's median and the max_norm cap, accepts them when
// that norm is below the cap). Tensors have the names, shapes and order of the job's
// parameter list (Assignment.parameters); only f32 parameters are supported (every GPT
// parameter is). Each chunk message is the WorkerMessage a real worker sends
// (result_chunk {round, chunk}), its data referenced, not copied (pcp/rpc/chunk_wire.h):
// Messages() costs one small header per chunk.
#ifndef PCP_LOADGEN_SYNTHETIC_DELTA_H_
#define PCP_LOADGEN_SYNTHETIC_DELTA_H_

#include <grpcpp/support/byte_buffer.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "pcp/codec/codec.h"
#include "pcp/rpc/tensor_chunks.h"
#include "pcp/rpc/tensor_proto.h"
#include "pcp/v1/tensor.pb.h"

namespace pcp::loadgen {

struct SyntheticDeltaOptions {
  uint64_t seed = 1;
  float scale = 1e-4f;                       // values uniform in [-scale, scale]; > 0 and finite
  int64_t chunk_bytes = kDefaultChunkBytes;  // data per chunk (what the shepherd accepts)
};

class SyntheticDelta {
 public:
  // InvalidArgument for an empty list, a parameter that is not f32, a bad scale, or what
  // the chunker refuses (e.g. a repeated name).
  static absl::StatusOr<std::shared_ptr<const SyntheticDelta>> Create(const std::vector<TensorSpec>& specs,
                                                                      codec::Codec codec,
                                                                      SyntheticDeltaOptions options = {});

  // The ResultChunk messages of round `round`, in order (the RoundResult is not included).
  std::vector<grpc::ByteBuffer> Messages(uint64_t round) const;

  int64_t num_chunks() const { return static_cast<int64_t>(chunks_.size()); }
  // Bytes of chunk data (encoded, for a codec other than f32) of one Δ.
  int64_t data_bytes() const { return data_bytes_; }
  // The f32 values' L2 norm (before any encoding).
  double norm() const { return norm_; }
  // The L2 norm of the values as a receiver decodes them (after the codec; = norm() for
  // f32): what a worker declares as its Δ's norm where the protocol asks for it.
  double decoded_norm() const { return decoded_norm_; }
  codec::Codec codec() const { return codec_; }

 private:
  SyntheticDelta() = default;
  std::vector<std::pair<v1::TensorChunk, ChunkPayload>> chunks_;
  int64_t data_bytes_ = 0;
  double norm_ = 0;
  double decoded_norm_ = 0;
  codec::Codec codec_ = codec::Codec::kF32;
};

}  // namespace pcp::loadgen

#endif  // PCP_LOADGEN_SYNTHETIC_DELTA_H_
