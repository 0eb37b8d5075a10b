// Error feedback: what a lossy codec dropped from one round's Δ is added to the next round's,
// so over rounds the sum of what was sent tracks the sum of the Δs (the difference is one
// bounded residual) instead of drifting. One ErrorFeedback per buffer (a tensor, or a
// fragment), kept by the sender across rounds.
//
//   ErrorFeedback feedback;                                      // per tensor, for the job
//   for (each round) {
//     PCP_ASSIGN_OR_RETURN(std::string bytes, feedback.EncodeWithFeedback(Codec::kInt4, delta));
//     Send(bytes);
//   }
//
// Each call encodes input = delta + β·residual and keeps residual = input − Decode(encoded)
// (f32 rounding included). β (set_decay, default 1) is SparseLoCo's decay of the accumulator
// (e ← β·e + Δ): what waits too long fades instead of arriving stale; β = 1 is plain error
// feedback, computed exactly as before (delta + residual). f32 loses nothing: its residual is zero and nothing is kept.
// Where the input or its decoded value is not finite (a NaN/inf Δ, or a bf16 overflow) the
// residual is 0: that Δ is refused by the receiver, and a NaN kept here would poison every
// later round.
//
// Not thread-safe; the residual costs 4 bytes per value of the buffer.
#ifndef PCP_CODEC_ERROR_FEEDBACK_H_
#define PCP_CODEC_ERROR_FEEDBACK_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "pcp/codec/codec.h"

namespace pcp::codec {

class ErrorFeedback {
 public:
  ErrorFeedback() = default;

  // Encodes delta + residual with `codec` (block_size 0: its default) and keeps the new
  // residual. The first call with a lossy codec sizes the residual; later calls must pass
  // the same number of values (InvalidArgument otherwise, residual unchanged), as must an
  // invalid block size.
  // `density`: a sparse codec's (0: the default; encoded.h).
  absl::StatusOr<std::string> EncodeWithFeedback(Codec codec, absl::Span<const float> delta, int block_size = 0,
                                                 double density = 0);

  // For a sender that encodes elsewhere, e.g. a chunked stream (pcp/rpc/tensor_chunks.h)
  // whose chunks hold block-aligned runs of the buffer and so produce the same blocks as one
  // whole encoding: adds the residual to `delta` in place (`delta` becomes what is to be sent)
  // and keeps residual = delta − Decode(Encode(delta)). Same errors as EncodeWithFeedback.
  absl::Status Compensate(Codec codec, absl::Span<float> delta, int block_size = 0, double density = 0);

  // What the last encodings lost, to be sent next round; empty before the first lossy
  // encoding and after Reset.
  absl::Span<const float> residual() const { return residual_; }
  // Drops the residual (e.g. after a full resync).
  void Reset() { residual_.clear(); }
  // β in (0, 1] (InvalidArgument otherwise, unchanged): the residual is scaled by β before it is
  // added to the next Δ.
  absl::Status set_decay(double decay);
  double decay() const { return decay_; }

 private:
  std::vector<float> residual_;
  float decay_ = 1.0f;
};

}  // namespace pcp::codec

#endif  // PCP_CODEC_ERROR_FEEDBACK_H_
