#include "round_publisher.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "pcp/base/format_duration.h"
#include "pcp/metrics/registry.h"
#include "shepherd_metrics.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {

RoundPublisher::RoundPublisher(std::string job_id, JobManager* jobs, uint64_t total_rounds, uint64_t inner_steps,
                               const RunState& state)
    : job_id_(std::move(job_id)),
      jobs_(jobs),
      total_rounds_(total_rounds),
      meter_(static_cast<int64_t>(total_rounds - std::min(total_rounds, state.round))) {
  progress_.set_round(state.round);
  progress_.set_total_rounds(total_rounds);
  progress_.set_inner_steps(inner_steps);
  progress_.set_tokens_processed(state.tokens_processed);
  if (state.train_loss) progress_.set_train_loss(*state.train_loss);
  if (state.val_loss) progress_.set_val_loss(*state.val_loss);
  progress_.set_val_round(state.val_round);
  // The job's series exist from its start (a resumed job's with the checkpoint's values).
  metrics::Get(metrics::kShepherdRound, {job_id_}).Set(static_cast<double>(state.round));
  metrics::Get(metrics::kShepherdRoundsCompletedTotal, {job_id_});
  metrics::Get(metrics::kShepherdTokensTotal, {job_id_});
  if (state.train_loss) metrics::Get(metrics::kShepherdTrainLoss, {job_id_}).Set(*state.train_loss);
  if (state.val_loss) metrics::Get(metrics::kShepherdValLoss, {job_id_}).Set(*state.val_loss);
  bytes_sent_mark_ = ThetaBytesSent();
  bytes_received_mark_ = DeltaBytesReceived();
}

void RoundPublisher::Closed(const RoundSummary& s, const RunState& state) {
  const double tokens_per_s = s.round_s > 0 ? static_cast<double>(s.tokens) / s.round_s : 0;
  const double train_loss = state.train_loss.value_or(0.0);
  meter_.Advance(s.round_s * 1000.0);
  metrics::Get(metrics::kShepherdOuterStepDurationSeconds).Observe(s.outer_step_s);
  metrics::Get(metrics::kShepherdRound, {job_id_}).Set(static_cast<double>(s.round));
  metrics::Get(metrics::kShepherdRoundsCompletedTotal, {job_id_}).Increment();
  metrics::Get(metrics::kShepherdTrainLoss, {job_id_}).Set(train_loss);
  metrics::Get(metrics::kShepherdTokensTotal, {job_id_}).Increment(static_cast<double>(s.tokens));
  metrics::Get(metrics::kShepherdTokensPerSecond, {job_id_}).Set(tokens_per_s);
  metrics::Get(metrics::kShepherdRoundDurationSeconds).Observe(s.round_s);
  // Recorded before its val loss is estimated (ValLoss adds it to the record). The counters
  // are read once: the streams keep writing meanwhile (a streaming round's fragment is on its
  // way), and every byte goes to exactly one round's record.
  const double sent = ThetaBytesSent(), received = DeltaBytesReceived();
  v1::RoundRecord record = s.record;
  record.set_bytes_down(static_cast<uint64_t>(std::max(0.0, sent - bytes_sent_mark_)));
  record.set_bytes_up(static_cast<uint64_t>(std::max(0.0, received - bytes_received_mark_)));
  jobs_->RecordRound(job_id_, record);
  bytes_sent_mark_ = sent;
  bytes_received_mark_ = received;
  progress_.set_round(s.round);
  progress_.set_train_loss(train_loss);
  if (state.val_loss) progress_.set_val_loss(*state.val_loss);
  progress_.set_val_round(state.val_round);
  progress_.set_tokens_processed(state.tokens_processed);
  progress_.set_tokens_per_second(tokens_per_s);
  progress_.set_round_time_s(s.round_s);
  progress_.set_eta_s(meter_.EtaSeconds());
  progress_.set_workers_in_last_round(static_cast<uint32_t>(s.workers.size()));
  spdlog::info("job {}: round {}/{} complete: {} workers ({}), train loss {:.4f}, {:.0f} tok/s, round {:.2f} s, ETA {}",
               job_id_, s.round, total_rounds_, s.workers.size(), absl::StrJoin(s.workers, ", "), train_loss,
               tokens_per_s, s.round_s, FormatDuration(progress_.eta_s()));
}

void RoundPublisher::ValLoss(uint64_t round, double val_loss, double seconds) {
  jobs_->RecordValLoss(job_id_, round, val_loss);
  metrics::Get(metrics::kShepherdValLoss, {job_id_}).Set(val_loss);
  progress_.set_val_loss(val_loss);
  progress_.set_val_round(round);
  spdlog::info("job {}: val loss {:.4f} after round {} (estimated in {:.2f} s)", job_id_, val_loss, round, seconds);
}

void RoundPublisher::Report() { jobs_->ReportProgress(job_id_, progress_); }

}  // namespace pcp::shepherd
