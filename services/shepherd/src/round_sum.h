// Private: one round's streamed Δ sum (diloco.aggregation streaming, pcp/diloco/delta_sum.h)
// with what its Δs are checked against, shared by the job's round engine and the worker
// sessions that feed it (each holds it while it may still receive chunks for the round, so the
// buffers outlive every writer).
//
//   auto sum = RoundSum::Create(specs, *screen_, screen_->RoundThreshold({}), steps, tokens);
//   session->ExpectResult(round, specs, codec, sum);   // the session judges each header and adds chunks
//   ...
//   sum->sum.Finish();                                  // as the round closes
//   std::vector<Tensor> avg = sum->sums;                // the weighted average
#ifndef PCP_SHEPHERD_SRC_ROUND_SUM_H_
#define PCP_SHEPHERD_SRC_ROUND_SUM_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "pcp/diloco/delta_sum.h"
#include "pcp/diloco/screening.h"
#include "pcp/rpc/tensor_proto.h"
#include "pcp/tensor/tensor.h"

namespace pcp::shepherd {

struct RoundSum {
  // Zeroed f32 sums of `specs`' shapes. `screen` and `threshold` judge each Δ's declared norm;
  // a header must announce `steps` and `tokens` (steps 0: any, time-budgeted rounds).
  static std::shared_ptr<RoundSum> Create(const std::vector<TensorSpec>& specs, const diloco::DeltaScreen& screen,
                                          const diloco::ScreenThreshold& threshold, uint32_t steps, uint64_t tokens);

  RoundSum(std::vector<Tensor> buffers, const diloco::DeltaScreen& screen, const diloco::ScreenThreshold& threshold,
           uint32_t steps, uint64_t tokens);

  std::vector<Tensor> sums;  // the weighted average once sum.Finish() ran
  diloco::DeltaSum sum;      // writes into `sums`
  const diloco::DeltaScreen screen;
  const diloco::ScreenThreshold threshold;
  const uint32_t steps;
  const uint64_t tokens;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_ROUND_SUM_H_
