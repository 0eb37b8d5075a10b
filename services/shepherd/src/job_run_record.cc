// JobRun's per-round history record (job_run.h; the job's history: pcp/shepherd/job_history.h).
#include <algorithm>

#include "job_run.h"
#include "pcp/base/unix_time.h"
#include "pcp/training/round_budget.h"

namespace pcp::shepherd {

v1::RoundRecord JobRun::RecordOf(const Round& round, uint64_t tokens, double round_s, double outer_step_s) const {
  const JobConfig& c = prepared_->config;
  v1::RoundRecord rec;
  rec.set_round(round.number);
  rec.set_start_unix_ms(round.start_unix_ms);
  rec.set_end_unix_ms(NowUnixMs());
  // Refused Δs (rejected by screening) are not the round's participants; clipped ones are.
  std::set<std::string> refused;
  for (const auto& [id, reason] : round.refused_ids) {
    v1::RefusedWorker* w = rec.add_refused();
    w->set_supervisor_id(id);
    w->set_reason(reason);
    refused.insert(id);
  }
  // A skipped round (Streaming DiLoCo, rolled back) has none: no Δ of it went into θ.
  std::set<std::string> participants, delivered;
  for (const auto& [slot, res] : round.results) {
    delivered.insert(res.supervisor_id);
    if (refused.count(res.supervisor_id) == 0 && !round.skipped) participants.insert(res.supervisor_id);
  }
  for (const std::string& id : participants) rec.add_participants(id);
  for (const std::string& id : round.sent_to) {
    if (delivered.count(id) == 0 && refused.count(id) == 0) rec.add_missing(id);
  }
  rec.set_tokens(tokens);
  rec.set_tokens_total(state_.tokens_processed);
  if (state_.train_loss) rec.set_train_loss(*state_.train_loss);
  rec.set_round_s(round_s);
  rec.set_outer_step_s(outer_step_s);
  // The workers' mean wait on the network before this round's compute (none in their first).
  double wait_ms = 0;
  int waits = 0;
  for (const auto& [slot, res] : round.results) {
    if (res.result.network_wait_ms() <= 0) continue;
    wait_ms += res.result.network_wait_ms();
    ++waits;
  }
  if (waits > 0) rec.set_network_wait_s(wait_ms / waits / 1000.0);
  rec.set_outer_lr(c.diloco.outer_lr);
  // The rate of the round's last step (with a time budget: the longest-running worker's); the
  // round's rates were drawn before its tokens were added.
  const std::vector<float> lrs =
      LearningRatesOfRound(c, round.number, state_.tokens_processed >= tokens ? state_.tokens_processed - tokens : 0);
  size_t last = lrs.size();
  if (c.diloco.time_budget.enabled()) {
    last = 0;
    for (const auto& [slot, res] : round.results) last = std::max<size_t>(last, res.result.steps());
    last = std::min(last, lrs.size());
  }
  if (last > 0) rec.set_inner_lr(lrs[last - 1]);
  return rec;
}

}  // namespace pcp::shepherd
