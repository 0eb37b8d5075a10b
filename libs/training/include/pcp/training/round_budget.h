// How long each DiLoCo round is and when the job ends, in steps or, with a time budget
// (diloco.time_budget, dynamic local updates), in tokens: every worker trains for the budget
// at its own speed (between min_steps and max_steps steps), and the job ends once it has
// trained the tokens a fixed-τ run of the same job would (diloco.rounds × inner_steps ×
// workers × batch_size × block_size), so runs of uneven workers end at equal total tokens.
//
//   const RoundSteps steps = StepsOfRound(config, round, tokens_done);  // {τ, τ} without a budget
//   std::vector<float> lrs = LearningRatesOfRound(config, round, tokens_done);  // steps.max values
//   if (JobDone(config, rounds_done, tokens_done)) ...
//
// With a budget the learning-rate schedule follows the job's progress in tokens: a round
// starting after T tokens runs its j-th step at schedule step T / (workers × batch × block) + j
// (the steps one of `workers` equal workers would have run by then), so every worker's rates
// decay together and end with the job, whatever its speed. Without a budget the rates are the
// fixed-τ ones (round r's steps FirstStep(r) + j), unchanged. Pure functions: the shepherd
// evaluates them from its checkpointed state (rounds done, tokens trained), so a resumed job
// gets the same rates and bounds.
#ifndef PCP_TRAINING_ROUND_BUDGET_H_
#define PCP_TRAINING_ROUND_BUDGET_H_

#include <cstdint>
#include <vector>

#include "pcp/training/job_config.h"

namespace pcp {

// The steps a worker's round may run: exactly `min` (== max) without a budget.
struct RoundSteps {
  int64_t min = 0;
  int64_t max = 0;
  bool operator==(const RoundSteps&) const = default;
};

// Tokens one inner step of one worker trains: batch_size × block_size.
uint64_t TokensPerStep(const JobConfig& config);

// The tokens the whole job trains: diloco.rounds × inner_steps × workers × TokensPerStep.
uint64_t JobTokenBudget(const JobConfig& config);

// Round `round` (from 1) after `tokens_done` tokens: without a budget the round's fixed steps;
// with one, [min_steps, max_steps], lowered near the end so that `workers` workers running the
// most steps train little more than the tokens left (each at least one step).
RoundSteps StepsOfRound(const JobConfig& config, uint64_t round, uint64_t tokens_done);

// Round `round`'s learning rates, StepsOfRound(...).max of them (see above).
std::vector<float> LearningRatesOfRound(const JobConfig& config, uint64_t round, uint64_t tokens_done);

// Whether the job has ended after `rounds_done` rounds and `tokens_done` tokens: at
// diloco.rounds rounds without a budget, at JobTokenBudget tokens with one.
bool JobDone(const JobConfig& config, uint64_t rounds_done, uint64_t tokens_done);

}  // namespace pcp

#endif  // PCP_TRAINING_ROUND_BUDGET_H_
