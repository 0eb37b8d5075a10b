// FOR TESTING ONLY: corrupts the Δ a worker sends, so that the shepherd's Δ screening
// (pcp/diloco/screening.h) can be exercised on a real cluster. Never set it in production:
// a worker with a fault poisons (or tries to poison) the job it trains.
//
// pcp-worker --fault_delta=SPEC, SPEC a '/'-separated list of steps applied in turn, one per
// round the worker completes, starting again from the first after the last:
//   none             the Δ as computed
//   scale:F          Δ × F (e.g. scale:1000)
//   negate_scale:F   −Δ × F
//   noise:F          Gaussian noise (fixed seed) whose L2 norm is F × ‖Δ‖, instead of Δ
//   nan              Δ with its first element NaN
//   lie:F            Δ × F, with the norm of Δ declared in its ResultHeader (F times too small:
//                    the shepherd's streaming aggregation catches it as the chunks arrive)
// ('/' rather than ',' so that the spec survives the supervisor's comma-separated
// --worker_args.)
//
//   PCP_ASSIGN_OR_RETURN(DeltaFault fault, DeltaFault::Parse("scale:1000/negate_scale:10/noise:20"));
//   std::string what = fault.ApplyNext(&delta);   // "scale:1000", then "negate_scale:10", ...
#ifndef PCP_WORKER_DELTA_FAULT_H_
#define PCP_WORKER_DELTA_FAULT_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pcp/tensor/tensor.h"

namespace pcp::worker {

class DeltaFault {
 public:
  // "" = no fault. InvalidArgument naming the bad step otherwise.
  static absl::StatusOr<DeltaFault> Parse(absl::string_view spec);

  bool empty() const { return steps_.empty(); }
  // Applies the next step to `delta` (f32 tensors, modified in place); returns the step as
  // written ("scale:1000"), or "" for none.
  std::string ApplyNext(std::vector<Tensor>* delta);
  // What the header should declare of the Δ the last ApplyNext returned, as a factor of its
  // true norm: 1 but after lie:F (1 / F).
  double declared_norm_factor() const { return declared_norm_factor_; }

 private:
  enum class Kind { kNone, kScale, kNoise, kNan, kLie };
  struct Step {
    Kind kind = Kind::kNone;
    double factor = 1;
    std::string text;
  };
  std::vector<Step> steps_;
  size_t next_ = 0;
  double declared_norm_factor_ = 1;
  std::mt19937_64 rng_{20261124};
};

}  // namespace pcp::worker

#endif  // PCP_WORKER_DELTA_FAULT_H_
