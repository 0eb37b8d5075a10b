// One DiLoCo round on a worker: load θ into the resident inner loop, run τ AdamW steps on
// the worker's shard with the given learning rates, and return Δ = θ_start − θ_end with the
// round's summary. The AdamW moments stay in the loop between rounds (reset_optimizer zeroes
// them, for the first round of an assignment).
//
//   RoundInput in{.round = 3, .theta = theta, .reset_optimizer = false, .learning_rates = lrs,
//                 .sampler_seed = seed, .sampler_cursor = 20, .batch_size = 4, .block_size = 32};
//   PCP_ASSIGN_OR_RETURN(RoundOutput out,
//                        RunRound(*loop, shard, in, [&](uint32_t done) { return !cancelled; }));
//   if (out.complete) { ...send out.delta and out.result... }
#ifndef PCP_WORKER_ROUND_RUNNER_H_
#define PCP_WORKER_ROUND_RUNNER_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "pcp/tensor/tensor.h"
#include "pcp/training/dataset.h"
#include "pcp/training/inner_loop.h"
#include "pcp/v1/training.pb.h"

namespace pcp::worker {

struct RoundInput {
  uint64_t round = 0;
  std::vector<Tensor> theta;  // θ_start, in train_step order; empty: go on from the loop's θ, no Δ
  bool reset_optimizer = false;
  std::vector<float> learning_rates;  // one per inner step (τ values)
  uint64_t sampler_seed = 0;
  uint64_t sampler_cursor = 0;
  int64_t batch_size = 0;
  int64_t block_size = 0;
};

struct RoundOutput {
  bool complete = false;       // all τ steps ran; else (or without θ_start) `delta` is empty
  std::vector<Tensor> delta;   // θ_start − θ_end (f32), in θ's order
  v1::RoundResult result;      // steps, tokens, losses, timing, sampler cursor after the round
};

// `keep_going(steps_done)` is asked before every step; false stops the round early (a
// Cancel, SIGTERM, or a broken stream). Errors: θ that does not fit the loop, a shard
// shorter than block_size + 1, a non-finite loss (the message names the step and lr).
absl::StatusOr<RoundOutput> RunRound(InnerLoop& loop, const TokenSequence& shard, const RoundInput& in,
                                     const std::function<bool(uint32_t steps_done)>& keep_going);

// a − b elementwise, for f32 tensors of equal shapes.
absl::StatusOr<std::vector<Tensor>> Subtract(const std::vector<Tensor>& a, const std::vector<Tensor>& b);

}  // namespace pcp::worker

#endif  // PCP_WORKER_ROUND_RUNNER_H_
