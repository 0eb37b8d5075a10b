// JobRun's Δ screening bookkeeping (job_run.h): refusals, their persistence across restarts,
// and rolled-back rounds. The quarantine itself (which releases the worker) is in job_run.cc.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "job_run.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/metrics/registry.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {

void JobRun::Refuse(const std::string& id, uint64_t round, const diloco::ScreenVerdict& verdict, Round* record) {
  v1::JobProgress& progress = publisher_->progress();
  const absl::string_view reason = diloco::RefusalReasonName(verdict.reason);
  const bool clipped = verdict.action == diloco::ScreenVerdict::kClip;
  const bool quarantine = refusals_->Refuse(id);
  // A rejected Δ is listed in the round's history record (a clipped one took part).
  if (!clipped && record != nullptr) record->refused_ids.emplace_back(id, std::string(reason));
  const int64_t count = refusals_->refusals(id);
  metrics::Get(metrics::kShepherdDeltasRefusedTotal, {reason}).Increment();
  progress.set_deltas_refused(progress.deltas_refused() + 1);
  v1::ScreenedWorker* screened = nullptr;
  for (v1::ScreenedWorker& w : *progress.mutable_screened_workers()) {
    if (w.supervisor_id() == id) screened = &w;
  }
  if (screened == nullptr) {
    screened = progress.add_screened_workers();
    screened->set_supervisor_id(id);
  }
  screened->set_refusals(static_cast<uint32_t>(count));
  screened->set_last_reason(std::string(reason));
  screened->set_last_round(round);
  const int64_t limit = prepared_->config.diloco.screening.quarantine_after;
  // (With a time budget norms are judged at τ steps: DeltaScreen::JudgedNorm.)
  const uint64_t steps = screen_->judged_at_steps();
  const std::string at = steps > 0 ? absl::StrCat(" at ", steps, " steps") : std::string();
  spdlog::warn("job {}: worker {}'s Δ for round {} {} ({}): norm{} {:.4g}, threshold {:.4g}; refusal {}{}", job_.id, id,
               round, clipped ? "clipped to the threshold" : "rejected", reason, at, verdict.norm, verdict.threshold,
               count, limit > 0 ? absl::StrCat(" of ", limit, " before quarantine") : std::string());
  v1::ScreeningEvent event;
  event.set_kind(clipped ? v1::ScreeningEvent::DELTA_CLIPPED : v1::ScreeningEvent::DELTA_REJECTED);
  event.set_round(round);
  event.set_supervisor_id(id);
  event.set_reason(std::string(reason));
  event.set_norm(verdict.norm);
  event.set_threshold(verdict.threshold);
  event.set_refusals(static_cast<uint32_t>(count));
  ctx_.jobs->ReportScreening(job_.id, event);
  if (quarantine) {
    screened->set_quarantined(true);
    Quarantine(id, round);
  }
  // Persisted now, not with the round: a refusal or quarantine outlives a shepherd restart
  // even when this round is rolled back or never closes.
  publisher_->Report();
}

void JobRun::RestoreScreening(const v1::JobProgress& stored) {
  v1::JobProgress& progress = publisher_->progress();
  progress.set_deltas_refused(stored.deltas_refused());
  progress.set_rounds_rolled_back(stored.rounds_rolled_back());
  *progress.mutable_screened_workers() = stored.screened_workers();
  std::vector<std::string> quarantined;
  for (const v1::ScreenedWorker& w : stored.screened_workers()) {
    refusals_->Restore(w.supervisor_id(), static_cast<int64_t>(w.refusals()));
    if (refusals_->quarantined(w.supervisor_id())) quarantined.push_back(w.supervisor_id());
  }
  if (stored.screened_workers_size() > 0) {
    spdlog::info("job {}: screening resumed: {} Δs refused so far, {} workers refused{}", job_.id,
                 stored.deltas_refused(), stored.screened_workers_size(),
                 quarantined.empty() ? std::string()
                                     : absl::StrCat(", quarantined: ", absl::StrJoin(quarantined, ", ")));
  }
}

std::optional<JobRun::Outcome> JobRun::CountRollBack(uint64_t round, const std::string& why) {
  v1::JobProgress& progress = publisher_->progress();
  aggregator_->Drop(round);  // a redone round aggregates afresh
  ++rollbacks_in_a_row_;
  progress.set_rounds_rolled_back(progress.rounds_rolled_back() + 1);
  const int64_t limit = prepared_->config.diloco.screening.max_rollbacks;
  spdlog::error("job {}: round {} rolled back ({}): {}; {} of {} in a row", job_.id, round, why,
                fragments_.has_value() ? "its fragment and momentum stay as they were"
                                       : "θ and the outer momentum are as before it",
                rollbacks_in_a_row_, limit);
  v1::ScreeningEvent event;
  event.set_kind(v1::ScreeningEvent::ROUND_ROLLED_BACK);
  event.set_round(round);
  event.set_reason(why);
  ctx_.jobs->ReportScreening(job_.id, event);
  // Before a failure too: the failed job's progress counts the rollback that failed it.
  publisher_->Report();
  if (rollbacks_in_a_row_ >= limit) {
    return Fail(absl::StrCat(rollbacks_in_a_row_, " rounds in a row rolled back (diloco.screening.max_rollbacks ",
                             limit, "); the last, round ", round, ": ", why));
  }
  return std::nullopt;
}

}  // namespace pcp::shepherd
