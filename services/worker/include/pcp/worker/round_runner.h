// One DiLoCo round on a worker: load θ into the resident inner loop, run τ AdamW steps on
// the worker's shard with the given learning rates, and return Δ = θ_start − θ_end with the
// round's summary. With a time budget (budget_ms > 0, diloco.time_budget) the round runs
// min_steps steps, then more while the next one fits the budget (at the round's mean step
// time so far), up to one per learning rate. The AdamW moments stay in the loop between rounds (reset_optimizer zeroes
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
  // Time budget of the round's steps, in ms from the round's start; 0 = run every step.
  double budget_ms = 0;
  uint32_t min_steps = 0;  // with a budget: steps run whatever the time
  // TESTING ONLY (--fault_slow_factor): each step takes this many times its own time (the
  // worker sleeps the difference after the step); 1 = natural speed.
  double slow_factor = 1;
};

// With a time budget: whether a round that has run `steps_done` steps in `elapsed_ms` takes
// another, given `max_steps` learning rates: always below min_steps, never at max_steps,
// else if the next step (at the mean so far) ends within budget_ms.
bool TakeAnotherStep(double budget_ms, uint32_t min_steps, uint32_t max_steps, uint32_t steps_done, double elapsed_ms);

struct RoundOutput {
  // All τ steps ran (with a budget: the steps the budget allowed, at least min_steps, and
  // nothing stopped the round); else (or without θ_start) `delta` is empty.
  bool complete = false;
  std::vector<Tensor> delta;  // θ_start − θ_end (f32), in θ's order
  v1::RoundResult result;     // steps, tokens, losses, timing, sampler cursor after the round
  double compute_ms = 0;      // inside the steps themselves (result's step time adds the slowdown)
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
