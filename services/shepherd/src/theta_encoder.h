// Private: what the shepherd sends of θ, encoded once for every stream. θ in full is chunked
// once per θ (f32). When the job compresses θ updates (diloco.compression.down not f32), each
// round's update from the last θ (of the whole θ, or with Streaming DiLoCo of the round's
// fragment) is encoded after error feedback and applied to the shepherd's own θ exactly as
// every replica applies it (pcp/diloco/replica.h), so that both stay bit-identical. With
// compression.down_mode union (SparseLoCo: no outer momentum, so the update is sparse, its
// support the union of the workers' Δs) every nonzero of the update goes down with the down
// codec's levels and nothing is kept for later rounds.
//
//   ThetaEncoder enc(compression, chunk_bytes, param_specs, /*fragments=*/nullptr);
//   PCP_ASSIGN_OR_RETURN(auto full, enc.Full(theta));                 // chunked once per θ
//   PCP_RETURN_IF_ERROR(enc.EncodeRound(r, theta, &next));            // next: what replicas get
//   theta = next;  enc.Reset();                                       // a new θ
//   std::shared_ptr<const ChunkedList> up = enc.UpdateFrom(r);        // null: send θ in full
//   PCP_ASSIGN_OR_RETURN(FragmentChunks f, enc.Fragment(r, theta));   // Streaming DiLoCo
//
// Coordinator thread only; the chunked lists it returns are shared with the streams sending
// them (immutable).
#ifndef PCP_SHEPHERD_SRC_THETA_ENCODER_H_
#define PCP_SHEPHERD_SRC_THETA_ENCODER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pcp/codec/compression.h"
#include "pcp/codec/error_feedback.h"
#include "pcp/diloco/streaming.h"
#include "pcp/rpc/chunked_list.h"
#include "pcp/rpc/tensor_proto.h"
#include "pcp/tensor/tensor.h"

namespace pcp::shepherd {

// A fragment of θ as every stream sends it after its round.
struct FragmentChunks {
  std::shared_ptr<const ChunkedList> chunks;
  bool update = false;  // the encoded update (else the fragment's values, f32)
};

class ThetaEncoder {
 public:
  // `chunk_bytes`: the size of each chunk sent. `fragments`: Streaming DiLoCo's plan (null:
  // the whole θ each round); it must outlive the encoder.
  ThetaEncoder(codec::CompressionOptions compression, int64_t chunk_bytes, std::vector<TensorSpec> param_specs,
               const diloco::FragmentPlan* fragments);

  // θ in full, chunked once until Reset.
  absl::StatusOr<std::shared_ptr<const ChunkedList>> Full(const std::vector<Tensor>& theta);
  // θ changed: the next Full chunks it again.
  void Reset() { full_.reset(); }

  // After round `round`'s outer step, when the job compresses θ updates (else nothing): `next`
  // (θ after the step) is replaced by `theta` + the decoded update (of the round's fragment
  // with Streaming DiLoCo), what every replica computes; the encoding error is kept for the
  // next round. FailedPrecondition when the result is not finite.
  absl::Status EncodeRound(uint64_t round, const std::vector<Tensor>& theta, std::vector<Tensor>* next);

  // The whole-θ update from round `round`'s θ to the next, chunked; null when none was
  // encoded for that round (send θ in full).
  std::shared_ptr<const ChunkedList> UpdateFrom(uint64_t round) const {
    return update_round_ == round && round != 0 ? update_ : nullptr;
  }
  // Streaming DiLoCo: round `round`'s fragment after its outer step: its encoded update when
  // EncodeRound ran for the round, else its values in `theta`.
  absl::StatusOr<FragmentChunks> Fragment(uint64_t round, const std::vector<Tensor>& theta);

 private:
  // `values` (named `names`) chunked and encoded with `codec` once, for every stream that sends
  // them (counted in the codec-seconds metric once).
  absl::StatusOr<std::shared_ptr<const ChunkedList>> ChunksOf(const std::vector<Tensor>& values,
                                                              const std::vector<std::string>& names,
                                                              codec::Codec codec) const;
  // The update `next` − `before` after error feedback (`feedback`, one per tensor), encoded
  // with the down codec; `next` becomes before + the decoded update. Returns the updates as
  // encoded (what the streams send).
  absl::StatusOr<std::vector<Tensor>> EncodeUpdate(const std::vector<Tensor>& before, std::vector<Tensor>* next,
                                                   const std::vector<std::string>& names,
                                                   std::vector<codec::ErrorFeedback>* feedback) const;
  std::vector<std::string> NamesOf(const std::vector<TensorSpec>& specs) const;

  const codec::CompressionOptions compression_;
  const int64_t chunk_bytes_;
  const std::vector<TensorSpec> param_specs_;
  const diloco::FragmentPlan* const fragments_;
  std::shared_ptr<const ChunkedList> full_;  // θ chunked (null until needed; reset with θ)
  // The last encoded update: of the whole θ (chunked), or of a fragment (its values).
  uint64_t update_round_ = 0;  // the round it is of (0: none)
  std::shared_ptr<const ChunkedList> update_;
  std::vector<Tensor> fragment_update_;
  // Error feedback per parameter (whole θ), or per fragment and segment.
  std::vector<codec::ErrorFeedback> feedback_;
  std::vector<std::vector<codec::ErrorFeedback>> fragment_feedback_;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_THETA_ENCODER_H_
