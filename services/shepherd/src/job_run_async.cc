// JobRun's asynchronous rounds (job_run.h; pcp/diloco/async.h; docs/diloco.md,
// "Asynchronous DiLoCo"): every worker trains from the newest θ and is sent its next task as
// soon as its Δ is in; the Δs are applied in groups of at least diloco.async.quorum, each
// scaled for its staleness, with the job's outer step. θ version v (state_.round) is the θ
// after v outer updates; a task sent at version v is "round v + 1" on the wire, so the θ
// update, CRC and Δ streams work as for synchronous rounds.
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "job_run.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/unix_time.h"
#include "pcp/metrics/registry.h"
#include "shepherd_metrics.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {
namespace {

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

void Scale(std::vector<Tensor>& delta, double k) {
  const float f = static_cast<float>(k);
  for (Tensor& t : delta) {
    float* x = t.data<float>();
    for (int64_t i = 0; i < t.num_elements(); ++i) x[i] *= f;
  }
}

}  // namespace

uint64_t JobRun::AsyncTasksTotal() const {
  const DiLoCoConfig& d = prepared_->config.diloco;
  return static_cast<uint64_t>(d.rounds) * static_cast<uint64_t>(d.workers);
}

uint64_t JobRun::AsyncTasksUsed() const {
  uint64_t used = 0;
  for (const SlotState& slot : state_.slots) used += slot.rounds_done;
  return used;
}

void JobRun::DropAsyncTask(WorkerSession* key) {
  for (auto it = flights_.begin(); it != flights_.end();) {
    if (it->second.key != key) {
      ++it;
      continue;
    }
    next_cursor_[it->first] = it->second.start_cursor;  // its batches are trained again
    it = flights_.erase(it);
  }
}

Clock::time_point JobRun::AsyncWakeup(Clock::time_point fallback) const {
  if (quorum_since_ != Clock::time_point{}) {
    return quorum_since_ + std::chrono::milliseconds(prepared_->config.diloco.async.grace_ms);
  }
  return std::max(fallback, Clock::now() + std::chrono::seconds(1));
}

JobRun::Outcome JobRun::AdvanceAsync(Clock::time_point now) {
  const diloco::AsyncOptions& o = prepared_->config.diloco.async;
  // Tasks whose worker left, was quarantined or given another slot are not coming back; one
  // past diloco.round_deadline_s (its worker failed it, or stalled) is cancelled.
  const auto deadline = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(prepared_->config.diloco.round_deadline_s));
  for (auto it = flights_.begin(); it != flights_.end();) {
    auto m = members_.find(it->second.key);
    const bool live = m != members_.end() && m->second.slot == it->first && m->second.phase == Phase::kInRound;
    if (live && now - it->second.sent_at < deadline) {
      ++it;
      continue;
    }
    if (live) {
      spdlog::warn("job {}: worker {}'s task (round {}) passed diloco.round_deadline_s; cancelled", job_.id,
                   m->second.session->supervisor_id(), it->second.round);
      m->second.session->AbandonRound(it->second.round);
      v1::ShepherdMessage cancel;
      cancel.mutable_cancel()->set_round(it->second.round);
      cancel.mutable_cancel()->set_reason("task past the job's round_deadline_s");
      m->second.session->Send(std::move(cancel));
      m->second.phase = Phase::kReady;
    }
    next_cursor_[it->first] = it->second.start_cursor;
    it = flights_.erase(it);
  }
  if (last_update_ == Clock::time_point{}) {
    last_update_ = now;
    last_update_unix_ms_ = NowUnixMs();
  }
  if (!arrivals_.empty()) {
    // The quorum, or every Δ there is to wait for.
    const bool quorum = arrivals_.size() >= static_cast<size_t>(o.quorum) || flights_.empty();
    if (quorum && quorum_since_ == Clock::time_point{}) quorum_since_ = now;
    if (quorum && (flights_.empty() || now - quorum_since_ >= std::chrono::milliseconds(o.grace_ms))) {
      return ApplyAsyncGroup(now);
    }
  }
  // Every ready worker trains on from the newest θ, until the job's Δs are planned.
  uint64_t planned = AsyncTasksUsed() + arrivals_.size() + flights_.size();
  for (auto& [key, m] : members_) {
    if (planned >= AsyncTasksTotal()) break;
    if (m.phase != Phase::kReady || m.slot < 0 || flights_.count(m.slot) != 0) continue;
    SendAsyncTask(m);
    ++planned;
  }
  return Outcome::kRunning;
}

void JobRun::SendAsyncTask(Member& m) {
  const DiLoCoConfig& d = prepared_->config.diloco;
  const uint64_t r = state_.round + 1;
  WorkerSession& s = *m.session;
  ExpectResultOf(s, r);
  // A worker that holds the previous θ gets the update; anyone else (further behind) θ in full.
  if (!SendTheta(m, r)) return;
  auto next = next_cursor_.find(m.slot);
  const uint64_t cursor = next != next_cursor_.end() ? next->second : state_.slots[m.slot].sampler_cursor;
  // The inner learning rates follow the job's progress in tokens: those of the synchronous
  // round that would be running now.
  const uint64_t schedule_round =
      std::min<uint64_t>(static_cast<uint64_t>(d.rounds), AsyncTasksUsed() / static_cast<uint64_t>(d.workers) + 1);
  SendStart(m, r, cursor, theta_crc_, schedule_round);
  m.phase = Phase::kInRound;
  flights_[m.slot] = Flight{.key = m.session.get(), .round = r, .start_cursor = cursor, .sent_at = Clock::now()};
  next_cursor_[m.slot] = cursor + static_cast<uint64_t>(d.inner_steps);
  ctx_.registry->NoteActivity(s.supervisor_id(), job_.id, r);
}

void JobRun::OnAsyncResult(Member& m, uint64_t round, ReceivedDelta delta, const v1::RoundResult& result) {
  auto f = flights_.find(m.slot);
  if (f == flights_.end() || f->second.key != m.session.get() || f->second.round != round) return;  // stale
  const Flight flight = f->second;
  flights_.erase(f);
  m.phase = Phase::kReady;
  const JobConfig& c = prepared_->config;
  const std::string& id = m.session->supervisor_id();
  if (delta.abandoned()) {
    next_cursor_[m.slot] = flight.start_cursor;
    spdlog::warn("job {}: worker {} abandoned its task (round {}) after {} steps", job_.id, id, round, result.steps());
    return;
  }
  round_time_.Add(Seconds(Clock::now() - flight.sent_at));
  const uint64_t steps = static_cast<uint64_t>(c.diloco.inner_steps);
  const uint64_t tokens_expected =
      steps * static_cast<uint64_t>(c.training.batch_size) * static_cast<uint64_t>(c.model.block_size);
  const uint64_t cursor_expected = flight.start_cursor + steps;
  if (result.steps() != steps || result.tokens_processed() != tokens_expected ||
      result.sampler_cursor() != cursor_expected) {
    next_cursor_[m.slot] = flight.start_cursor;
    m.session->Close(absl::InvalidArgumentError(
        absl::StrCat("RoundResult for round ", round, ": expected steps ", steps, ", tokens_processed ",
                     tokens_expected, ", sampler_cursor ", cursor_expected, "; got ", result.steps(), ", ",
                     result.tokens_processed(), ", ", result.sampler_cursor())));
    return;
  }
  const uint64_t staleness = state_.round - std::min(state_.round, round - 1);
  ctx_.registry->NoteRoundDelivered(id, result, staleness);
  double norm = 0;
  if (std::isfinite(result.mean_loss())) {
    diloco::NormAccumulator acc;
    for (const Tensor& t : delta.tensors) {
      acc.Add(absl::MakeConstSpan(t.data<float>(), static_cast<size_t>(t.num_elements())));
    }
    norm = acc.norm();
  } else {
    norm = std::numeric_limits<double>::infinity();
  }
  if (!std::isfinite(norm)) {
    Refuse(id, round, Screen(*screen_, ArrivalThreshold(*screen_), DeltaNorm::Measured(norm)));
    return;
  }
  arrivals_.push_back(
      Arrival{.slot = m.slot, .round = round, .res = SlotResult{std::move(delta.tensors), result, id, norm}});
}

JobRun::Outcome JobRun::ApplyAsyncGroup(Clock::time_point now) {
  const JobConfig& c = prepared_->config;
  const uint64_t r = state_.round + 1;  // this outer update
  std::vector<Arrival> group = std::move(arrivals_);
  arrivals_.clear();
  quorum_since_ = Clock::time_point{};
  // The group is the open "round" while it is screened (Refuse lists its rejected Δs) and
  // recorded.
  round_.emplace(Round{});
  Round& rec = *round_;
  rec.number = r;
  rec.start = last_update_;
  rec.start_unix_ms = last_update_unix_ms_;
  rec.deadline = now;
  aggregator_->Seal(r);  // (buffered: nothing streamed)
  std::vector<double> norms;
  for (const Arrival& a : group) norms.push_back(a.res.norm);
  const diloco::ScreenThreshold threshold = screen_->RoundThreshold(norms);
  const uint64_t used_before = AsyncTasksUsed();
  std::vector<double> accepted_norms;
  std::vector<std::string> ids;
  std::vector<int> used_slots;
  std::vector<uint64_t> staleness;
  double weight = 0, loss_sum = 0;
  uint64_t tokens = 0;
  // A group of n Δs moves θ by n / workers of a synchronous round (whose average is of
  // `workers` Δs): with one outer step per Δ, the unscaled steps would be `workers` times a
  // round's per token, with the outer learning rate and momentum tuned for rounds.
  size_t admitted = 0;
  for (const Arrival& a : group) {
    admitted += Admitted(Screen(*screen_, threshold, DeltaNorm::Measured(a.res.norm))) ? 1 : 0;
  }
  const double group_scale = static_cast<double>(admitted) / static_cast<double>(c.diloco.workers);
  for (size_t i = 0; i < group.size(); ++i) {
    Arrival& a = group[i];
    SlotState& slot = state_.slots[static_cast<size_t>(a.slot)];
    rec.sent_to.insert(a.res.supervisor_id);
    const diloco::ScreenVerdict verdict = Screen(*screen_, threshold, DeltaNorm::Measured(a.res.norm));
    if (Refused(verdict)) Refuse(a.res.supervisor_id, r, verdict);
    // The task's batches are used up either way: a refused Δ's are not trained again.
    slot.sampler_cursor = std::max(slot.sampler_cursor, a.res.result.sampler_cursor());
    rec.results[static_cast<int>(i)] = SlotResult{{}, a.res.result, a.res.supervisor_id, a.res.norm};
    if (!Admitted(verdict)) continue;
    if (verdict.action == diloco::ScreenVerdict::kAccept) accepted_norms.push_back(a.res.norm);
    const uint64_t s = state_.round - std::min(state_.round, a.round - 1);
    staleness.push_back(s);
    if (const double k = group_scale * diloco::StalenessScale(c.diloco.async.staleness, s); k != 1.0) {
      Scale(a.res.delta, k);
    }
    const double w = static_cast<double>(a.res.result.tokens_processed());
    absl::Status added = aggregator_->Add(r, Contribution{std::move(a.res.delta), w, verdict, a.res.result.mean_loss(),
                                                          a.res.supervisor_id});
    if (!added.ok()) {
      round_.reset();
      return Fail(absl::StrCat("outer update ", r, ": aggregating the deltas: ", added.message()));
    }
    weight += w;
    loss_sum += w * a.res.result.mean_loss();
    tokens += a.res.result.tokens_processed();
    used_slots.push_back(a.slot);
    ids.push_back(a.res.supervisor_id);
  }
  if (ids.empty()) {
    std::optional<Outcome> failed = CountRollBack(r, "every Δ of the group was refused");
    round_.reset();
    return failed.has_value() ? *failed : AdvanceAsync(Clock::now());
  }
  checkpoints_.Collect();  // the outer step modifies the momentum in place
  const auto outer_start = Clock::now();
  std::vector<Tensor> next = theta_;
  absl::StatusOr<Combined> avg = aggregator_->Finish(r);
  if (!avg.ok()) {
    round_.reset();
    return Fail(absl::StrCat("outer update ", r, ": averaging the deltas: ", avg.status().message()));
  }
  absl::StatusOr<bool> stepped = outer_step_->Apply(r, *std::move(avg), &next);
  if (!stepped.ok()) {
    round_.reset();
    return Fail(absl::StrCat("outer update ", r, ": outer step: ", stepped.status().message()));
  }
  if (!*stepped) {
    std::optional<Outcome> failed = CountRollBack(r, "θ or the outer momentum is not finite after the outer step");
    round_.reset();
    return failed.has_value() ? *failed : AdvanceAsync(Clock::now());
  }
  rollbacks_in_a_row_ = 0;
  if (absl::Status s = theta_encoder_->EncodeRound(r, theta_, &next); !s.ok()) {
    round_.reset();
    return Fail(absl::StrCat("outer update ", r, ": encoding the θ update: ", s.message()));
  }
  theta_ = std::move(next);
  theta_crc_ = ListCrc32c(theta_);
  theta_encoder_->Reset();
  aggregator_->DropThrough(r);
  screen_->EndRound(accepted_norms);
  for (int slot : used_slots) ++state_.slots[static_cast<size_t>(slot)].rounds_done;
  state_.round = r;
  state_.tokens_processed += tokens;
  state_.train_loss = loss_sum / weight;
  metrics::Get(metrics::kShepherdRound, {job_.id}).Set(static_cast<double>(r));
  // Evaluated (and counted as a round's worth) every diloco.workers × eval_every Δs used.
  const uint64_t per_eval =
      static_cast<uint64_t>(c.diloco.workers) * static_cast<uint64_t>(std::max<int64_t>(c.diloco.eval_every, 1));
  eval_due_ = AsyncTasksUsed() / per_eval != used_before / per_eval;
  const bool last = AsyncTasksUsed() >= AsyncTasksTotal();
  spdlog::info("job {}: outer update {} ({} of {} Δs used): {} Δs of staleness {}", job_.id, r, AsyncTasksUsed(),
               AsyncTasksTotal(), ids.size(), absl::StrJoin(staleness, ","));
  RoundSummary summary{.round = r,
                       .last = last,
                       .tokens = tokens,
                       .round_s = Seconds(now - last_update_),
                       .outer_step_s = Seconds(Clock::now() - outer_start),
                       .workers = std::move(ids)};
  summary.record = RecordOf(rec, summary.tokens, summary.round_s, summary.outer_step_s);
  round_.reset();
  last_update_ = Clock::now();
  last_update_unix_ms_ = NowUnixMs();
  return Conclude(summary);
}

}  // namespace pcp::shepherd
