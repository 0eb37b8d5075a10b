#include "pcp/training/round_budget.h"

#include <algorithm>

#include "pcp/training/lr_schedule.h"

namespace pcp {

uint64_t TokensPerStep(const JobConfig& config) {
  return static_cast<uint64_t>(config.training.batch_size) * static_cast<uint64_t>(config.model.block_size);
}

uint64_t JobTokenBudget(const JobConfig& config) {
  const DiLoCoConfig& d = config.diloco;
  return static_cast<uint64_t>(d.rounds) * static_cast<uint64_t>(d.inner_steps) * static_cast<uint64_t>(d.workers) *
         TokensPerStep(config);
}

RoundSteps StepsOfRound(const JobConfig& config, uint64_t round, uint64_t tokens_done) {
  const DiLoCoConfig& d = config.diloco;
  if (!d.time_budget.enabled()) {
    const int64_t steps = d.StepsOfRound(round);
    return {steps, steps};
  }
  RoundSteps s{d.time_budget.min_steps, d.time_budget.max_steps};
  const uint64_t budget = JobTokenBudget(config);
  const uint64_t left = budget > tokens_done ? budget - tokens_done : 0;
  // ⌈left / (workers × tokens per step)⌉ steps each: the round ends the job (or nearly).
  const uint64_t per_round = static_cast<uint64_t>(d.workers) * TokensPerStep(config);
  const auto cap = static_cast<int64_t>(std::max<uint64_t>(1, (left + per_round - 1) / per_round));
  s.max = std::min(s.max, cap);
  s.min = std::min(s.min, s.max);
  return s;
}

std::vector<float> LearningRatesOfRound(const JobConfig& config, uint64_t round, uint64_t tokens_done) {
  const LrSchedule schedule = config.optimizer.Schedule();
  const RoundSteps steps = StepsOfRound(config, round, tokens_done);
  const DiLoCoConfig& d = config.diloco;
  const int64_t first =
      d.time_budget.enabled()
          ? static_cast<int64_t>(tokens_done / (static_cast<uint64_t>(d.workers) * TokensPerStep(config)))
          : d.FirstStep(round);
  std::vector<float> lrs;
  lrs.reserve(static_cast<size_t>(steps.max));
  for (int64_t i = 0; i < steps.max; ++i) lrs.push_back(static_cast<float>(schedule.At(first + i)));
  return lrs;
}

bool JobDone(const JobConfig& config, uint64_t rounds_done, uint64_t tokens_done) {
  if (config.diloco.time_budget.enabled()) return tokens_done >= JobTokenBudget(config);
  return rounds_done >= static_cast<uint64_t>(config.diloco.rounds);
}

}  // namespace pcp
