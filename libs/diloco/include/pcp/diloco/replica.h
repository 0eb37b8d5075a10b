// Replicas of θ that stay bit-identical to the shepherd's: after the first full θ, a worker
// receives each round's outer update encoded with the job's diloco.compression.down codec
// and adds the decoded update to the θ it holds; the shepherd adds the same decoded update to
// its own θ (not the exact one), so every copy takes the same values, bit for bit. The
// encoding error is not lost: the shepherd keeps error feedback for it
// (pcp/codec/error_feedback.h), so it is sent in later rounds.
//
//   ApplyUpdate(theta, decoded_update);   // shepherd and worker alike
//
// The addition is plain f32, one rounding per element, in one order: IEEE-754 makes it give
// the same bits on every x86-64 CPU (there is no multiply for the compiler to fuse).
#ifndef PCP_DILOCO_REPLICA_H_
#define PCP_DILOCO_REPLICA_H_

#include "absl/types/span.h"

namespace pcp::diloco {

// theta[i] += update[i]. Requires equal sizes.
void ApplyUpdate(absl::Span<float> theta, absl::Span<const float> update);

}  // namespace pcp::diloco

#endif  // PCP_DILOCO_REPLICA_H_
