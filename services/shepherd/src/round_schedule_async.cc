// Asynchronous DiLoCo (round_schedule_async.h).
#include "round_schedule_async.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/unix_time.h"
#include "pcp/diloco/async.h"
#include "pcp/metrics/registry.h"
#include "screen.h"
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

uint64_t AsyncSchedule::TasksTotal() const {
  const DiLoCoConfig& d = host_.config().diloco;
  return static_cast<uint64_t>(d.rounds) * static_cast<uint64_t>(d.workers);
}

uint64_t AsyncSchedule::TasksUsed() const {
  uint64_t used = 0;
  for (const SlotState& slot : host_.state().slots) used += slot.rounds_done;
  return used;
}

bool AsyncSchedule::Done() const {
  const JobConfig& c = host_.config();
  if (c.diloco.time_budget.enabled()) return host_.state().tokens_processed >= JobTokenBudget(c);
  return TasksUsed() >= TasksTotal();
}

bool AsyncSchedule::MoreTasksNeeded() const {
  const JobConfig& c = host_.config();
  if (!c.diloco.time_budget.enabled()) return TasksUsed() + arrivals_.size() + flights_.size() < TasksTotal();
  uint64_t tokens = host_.state().tokens_processed;
  for (const Arrival& a : arrivals_) tokens += a.res.result.tokens_processed();
  for (const auto& [slot, f] : flights_) tokens += static_cast<uint64_t>(f.steps.min) * TokensPerStep(c);
  return tokens < JobTokenBudget(c);
}

uint64_t AsyncSchedule::TotalRounds() const {
  const DiLoCoConfig& d = host_.config().diloco;
  return static_cast<uint64_t>((d.rounds * d.workers + d.async.quorum - 1) / d.async.quorum);
}

void AsyncSchedule::DropTask(int slot) {
  auto it = flights_.find(slot);
  if (it == flights_.end()) return;
  next_cursor_[slot] = it->second.start_cursor;  // its batches are trained again
  flights_.erase(it);
}

void AsyncSchedule::Drop(Member& m) {
  if (auto it = flights_.find(m.slot); it != flights_.end() && it->second.key == m.session.get()) DropTask(m.slot);
}

void AsyncSchedule::OnResync(Member& m, const v1::ResyncRequest& request) {
  spdlog::warn(
      "job {}: worker {}'s θ for round {} does not match the shepherd's ({}); sending its task again with "
      "θ in full",
      host_.job_id(), m.session->supervisor_id(), request.round(), request.reason());
  Drop(m);
  if (m.phase == MemberPhase::kInRound) m.phase = MemberPhase::kReady;
}

Clock::time_point AsyncSchedule::NextWakeup() const {
  if (quorum_since_ != Clock::time_point{}) {
    return quorum_since_ + std::chrono::milliseconds(host_.config().diloco.async.grace_ms);
  }
  return Clock::now() + std::chrono::seconds(1);
}

RunOutcome AsyncSchedule::Advance(Clock::time_point now) {
  const diloco::AsyncOptions& o = host_.config().diloco.async;
  // Tasks whose worker left, was quarantined or given another slot are not coming back; one
  // past diloco.round_deadline_s (its worker failed it, or stalled) is cancelled.
  const auto deadline = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(host_.config().diloco.round_deadline_s));
  for (auto it = flights_.begin(); it != flights_.end();) {
    auto m = host_.members().find(it->second.key);
    const bool live =
        m != host_.members().end() && m->second.slot == it->first && m->second.phase == MemberPhase::kInRound;
    if (live && now - it->second.sent_at < deadline) {
      ++it;
      continue;
    }
    if (live) {
      spdlog::warn("job {}: worker {}'s task (round {}) passed diloco.round_deadline_s; cancelled", host_.job_id(),
                   m->second.session->supervisor_id(), it->second.round);
      m->second.session->AbandonRound(it->second.round);
      v1::ShepherdMessage cancel;
      cancel.mutable_cancel()->set_round(it->second.round);
      cancel.mutable_cancel()->set_reason("task past the job's round_deadline_s");
      m->second.session->Send(std::move(cancel));
      m->second.phase = MemberPhase::kReady;
    }
    DropTask((it++)->first);
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
      return ApplyGroup(now);
    }
  }
  // Every ready worker trains on from the newest θ, until the job's Δs are planned.
  for (auto& [key, m] : host_.members()) {
    if (!MoreTasksNeeded()) break;
    if (m.phase != MemberPhase::kReady || m.slot < 0 || flights_.count(m.slot) != 0) continue;
    SendTask(m);
  }
  return RunOutcome::kRunning;
}

void AsyncSchedule::SendTask(Member& m) {
  const DiLoCoConfig& d = host_.config().diloco;
  const uint64_t r = host_.state().round + 1;
  WorkerSession& s = *m.session;
  host_.ExpectResultOf(s, r);
  // A worker that holds the previous θ gets the update; anyone else (further behind) θ in full.
  if (!host_.SendTheta(m, r)) return;
  auto next = next_cursor_.find(m.slot);
  const uint64_t cursor = next != next_cursor_.end() ? next->second : host_.state().slots[m.slot].sampler_cursor;
  // The inner learning rates follow the job's progress in tokens: those of the synchronous
  // round that would be running now.
  // (With a time budget they follow the tokens trained, as in synchronous rounds.)
  const uint64_t schedule_round =
      std::min<uint64_t>(static_cast<uint64_t>(d.rounds), TasksUsed() / static_cast<uint64_t>(d.workers) + 1);
  host_.SendStart(m, r, cursor, host_.theta_crc(), schedule_round);
  m.phase = MemberPhase::kInRound;
  flights_[m.slot] = Flight{.key = m.session.get(),
                            .round = r,
                            .start_cursor = cursor,
                            .steps = StepsOfRound(host_.config(), schedule_round, host_.state().tokens_processed),
                            .sent_at = Clock::now()};
  host_.registry().NoteActivity(s.supervisor_id(), host_.job_id(), r);
}

void AsyncSchedule::OnResult(Member& m, uint64_t round, ReceivedDelta delta, const v1::RoundResult& result) {
  auto f = flights_.find(m.slot);
  if (f == flights_.end() || f->second.key != m.session.get() || f->second.round != round) return;  // stale
  const Flight flight = f->second;
  flights_.erase(f);
  m.phase = MemberPhase::kReady;
  const JobConfig& c = host_.config();
  const std::string& id = m.session->supervisor_id();
  if (delta.abandoned()) {
    next_cursor_[m.slot] = flight.start_cursor;
    spdlog::warn("job {}: worker {} abandoned its task (round {}) after {} steps", host_.job_id(), id, round,
                 result.steps());
    return;
  }
  host_.round_time().Add(Seconds(Clock::now() - flight.sent_at));
  // τ steps, or with a time budget the steps the worker ran within the task's bounds.
  if (absl::Status ok = CheckRoundResult(result, round, flight.steps, flight.start_cursor, TokensPerStep(c));
      !ok.ok()) {
    next_cursor_[m.slot] = flight.start_cursor;
    m.session->Close(ok);
    return;
  }
  next_cursor_[m.slot] = result.sampler_cursor();  // the slot's next task starts where this one ended
  const uint64_t staleness = host_.state().round - std::min(host_.state().round, round - 1);
  host_.registry().NoteRoundDelivered(id, result, staleness);
  const double norm = MeasureDeltaNorm(delta.tensors, result.mean_loss());
  if (!std::isfinite(norm)) {
    host_.Refuse(id, round, Screen(host_.screen(), ArrivalThreshold(host_.screen()), DeltaNorm::Measured(norm)),
                 nullptr);
    return;
  }
  arrivals_.push_back(Arrival{.slot = m.slot,
                              .round = round,
                              .res = SlotResult{std::move(delta.tensors), result, id,
                                                host_.screen().JudgedNorm(norm, result.steps())}});
}

RunOutcome AsyncSchedule::ApplyGroup(Clock::time_point now) {
  const JobConfig& c = host_.config();
  const uint64_t r = host_.state().round + 1;  // this outer update
  std::vector<Arrival> group = std::move(arrivals_);
  arrivals_.clear();
  quorum_since_ = Clock::time_point{};
  // The group is the open "round" while it is screened (Refuse lists its rejected Δs) and
  // recorded.
  Round rec;
  rec.number = r;
  rec.start = last_update_;
  rec.start_unix_ms = last_update_unix_ms_;
  rec.deadline = now;
  host_.aggregator().Seal(r);  // (buffered: nothing streamed)
  std::vector<double> norms;
  for (const Arrival& a : group) norms.push_back(a.res.norm);
  const diloco::ScreenThreshold threshold = host_.screen().RoundThreshold(norms);
  const uint64_t used_before = TasksUsed();
  std::vector<double> accepted_norms;
  std::vector<std::string> ids;
  std::vector<int> used_slots;
  std::vector<uint64_t> staleness;
  double weight = 0, loss_sum = 0;
  uint64_t tokens = 0;
  // A group moves θ by its share of a synchronous round (whose average is of `workers` Δs):
  // n Δs are n / workers of a round, each weighed by its tokens against the job's mean Δ so far
  // (fixed τ: all equal), so that a time-budgeted slow worker's short task weighs what it
  // trained. Unscaled, one outer step per Δ would move θ `workers` times a round's per token,
  // with the outer learning rate and momentum tuned for rounds.
  uint64_t admitted_tokens = 0;
  size_t admitted = 0;
  for (const Arrival& a : group) {
    if (Admitted(Screen(host_.screen(), threshold, DeltaNorm::Measured(a.res.norm)))) {
      admitted_tokens += a.res.result.tokens_processed();
      ++admitted;
    }
  }
  const double mean_tokens = static_cast<double>(host_.state().tokens_processed + admitted_tokens) /
                             static_cast<double>(std::max<uint64_t>(1, used_before + admitted));
  const double group_scale =
      static_cast<double>(admitted_tokens) / (static_cast<double>(c.diloco.workers) * mean_tokens);
  for (size_t i = 0; i < group.size(); ++i) {
    Arrival& a = group[i];
    SlotState& slot = host_.state().slots[static_cast<size_t>(a.slot)];
    rec.sent_to.insert(a.res.supervisor_id);
    const diloco::ScreenVerdict verdict = Screen(host_.screen(), threshold, DeltaNorm::Measured(a.res.norm));
    if (Refused(verdict)) host_.Refuse(a.res.supervisor_id, r, verdict, &rec);
    // The task's batches are used up either way: a refused Δ's are not trained again.
    slot.sampler_cursor = std::max(slot.sampler_cursor, a.res.result.sampler_cursor());
    rec.results[static_cast<int>(i)] = SlotResult{{}, a.res.result, a.res.supervisor_id, a.res.norm};
    if (!Admitted(verdict)) continue;
    if (verdict.action == diloco::ScreenVerdict::kAccept) accepted_norms.push_back(a.res.norm);
    const uint64_t s = host_.state().round - std::min(host_.state().round, a.round - 1);
    staleness.push_back(s);
    if (const double k =
            group_scale * diloco::StalenessScale(c.diloco.async.staleness, s, static_cast<uint64_t>(c.diloco.workers));
        k != 1.0) {
      Scale(a.res.delta, k);
    }
    const double w = static_cast<double>(a.res.result.tokens_processed());
    absl::Status added = host_.aggregator().Add(r, Contribution{std::move(a.res.delta), w, verdict,
                                                                a.res.result.mean_loss(), a.res.supervisor_id});
    if (!added.ok()) {
      return host_.Fail(absl::StrCat("outer update ", r, ": aggregating the deltas: ", added.message()));
    }
    weight += w;
    loss_sum += w * a.res.result.mean_loss();
    tokens += a.res.result.tokens_processed();
    used_slots.push_back(a.slot);
    ids.push_back(a.res.supervisor_id);
  }
  if (ids.empty()) {
    std::optional<RunOutcome> failed = host_.CountRollBack(r, "every Δ of the group was refused");
    return failed.has_value() ? *failed : Advance(Clock::now());
  }
  const auto outer_start = Clock::now();
  absl::StatusOr<bool> stepped = host_.StepTheta(r, group_scale);
  if (!stepped.ok()) return host_.Fail(absl::StrCat("outer update ", r, ": ", stepped.status().message()));
  if (!*stepped) {
    std::optional<RunOutcome> failed =
        host_.CountRollBack(r, "θ or the outer momentum is not finite after the outer step");
    return failed.has_value() ? *failed : Advance(Clock::now());
  }
  host_.EndUpdate(r, accepted_norms);
  for (int slot : used_slots) ++host_.state().slots[static_cast<size_t>(slot)].rounds_done;
  host_.state().round = r;
  host_.state().tokens_processed += tokens;
  host_.state().train_loss = loss_sum / weight;
  metrics::Get(metrics::kShepherdRound, {host_.job_id()}).Set(static_cast<double>(r));
  // Evaluated (and counted as a round's worth) every diloco.workers × eval_every Δs used.
  const uint64_t per_eval =
      static_cast<uint64_t>(c.diloco.workers) * static_cast<uint64_t>(std::max<int64_t>(c.diloco.eval_every, 1));
  eval_due_ = TasksUsed() / per_eval != used_before / per_eval;
  const bool last = Done();
  spdlog::info("job {}: outer update {} ({} Δs, {} of {} tokens used): {} Δs of staleness {}", host_.job_id(), r,
               TasksUsed(), host_.state().tokens_processed, JobTokenBudget(c), ids.size(),
               absl::StrJoin(staleness, ","));
  RoundSummary summary{.round = r,
                       .last = last,
                       .tokens = tokens,
                       .round_s = Seconds(now - last_update_),
                       .outer_step_s = Seconds(Clock::now() - outer_start),
                       .workers = std::move(ids)};
  summary.record = host_.RecordOf(rec, summary.tokens, summary.round_s, summary.outer_step_s);
  last_update_ = Clock::now();
  last_update_unix_ms_ = NowUnixMs();
  return host_.Conclude(summary);
}

}  // namespace pcp::shepherd
