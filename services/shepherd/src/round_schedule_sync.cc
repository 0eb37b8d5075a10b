// Synchronous DiLoCo rounds (round_schedule_sync.h).
#include "round_schedule_sync.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/status_macros.h"
#include "pcp/base/unix_time.h"
#include "pcp/metrics/registry.h"
#include "pcp/training/round_budget.h"
#include "screen.h"
#include "shepherd_metrics.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {
namespace {

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

SyncSchedule::SyncSchedule(RoundHost& host, const diloco::FragmentPlan* fragments)
    : host_(host), fragments_(fragments), waiting_since_(Clock::now()) {}

uint64_t SyncSchedule::TotalRounds() const { return static_cast<uint64_t>(host_.config().diloco.rounds); }

bool SyncSchedule::Done() const { return JobDone(host_.config(), host_.state().round, host_.state().tokens_processed); }

uint32_t SyncSchedule::WorkersInRound() const {
  return round_.has_value() ? static_cast<uint32_t>(round_->running.size() + round_->results.size()) : 0;
}

std::optional<uint64_t> SyncSchedule::OpenRound() const {
  return round_.has_value() ? std::optional<uint64_t>(round_->number) : std::nullopt;
}

bool SyncSchedule::EvalDue(uint64_t r) const {
  return r % static_cast<uint64_t>(std::max<int64_t>(host_.config().diloco.eval_every, 1)) == 0;
}

void SyncSchedule::Drop(Member& m) {
  if (round_.has_value() && m.slot >= 0) {
    auto r = round_->running.find(m.slot);
    if (r != round_->running.end() && r->second == m.session.get()) {
      round_->running.erase(r);
      spdlog::warn("job {}: worker {} left round {} ({} still running, {} results in)", host_.job_id(),
                   m.session->supervisor_id(), round_->number, round_->running.size(), round_->results.size());
    }
  }
  if (m.slot >= 0) slot_left_at_[m.slot] = Clock::now();
}

void SyncSchedule::OnResync(Member& m, const v1::ResyncRequest& request) {
  WorkerSession& session = *m.session;
  if (streaming()) {
    // The worker is inside a round it was sent ahead: θ in full, nothing else.
    const uint64_t r = round_.has_value() ? round_->number : host_.state().round + 1;
    spdlog::warn("job {}: worker {}'s θ does not match the shepherd's ({}); sending it θ for round {} in full",
                 host_.job_id(), session.supervisor_id(), request.reason(), r);
    absl::StatusOr<std::shared_ptr<const ChunkedList>> theta = host_.theta_encoder().Full(host_.theta());
    if (!theta.ok()) return session.Close(theta.status());
    session.SendParameters(r, *std::move(theta));
    m.theta_round = r;
    return;
  }
  const bool in_round = round_.has_value() && round_->number == request.round() && m.slot >= 0 &&
                        round_->running.count(m.slot) != 0 && round_->running[m.slot] == &session;
  spdlog::warn(
      "job {}: worker {}'s θ for round {} does not match the shepherd's ({}; crc32c {:08x}, expected {:08x}); "
      "{}",
      host_.job_id(), session.supervisor_id(), request.round(), request.reason(), request.actual_crc32c(),
      request.expected_crc32c(), in_round ? "sending it θ in full" : "it gets θ in full next round");
  if (in_round) SendRound(m);
}

void SyncSchedule::OnResult(Member& m, uint64_t round, ReceivedDelta delta, const v1::RoundResult& result) {
  WorkerSession& session = *m.session;
  if (streaming() && !round_.has_value() && round == host_.state().round + 1) {
    // Streaming: a worker sent this round ahead finished it before the round opened here.
    early_results_.push_back({m.session, round, std::move(delta), result});
    return;
  }
  if (!round_.has_value() || round != round_->number) return;  // stale
  auto r = round_->running.find(m.slot);
  if (r == round_->running.end() || r->second != &session) return;
  round_->running.erase(r);
  m.phase = MemberPhase::kReady;
  const JobConfig& c = host_.config();
  if (auto sent = round_->sent_at.find(m.slot); sent != round_->sent_at.end() && !delta.abandoned()) {
    host_.round_time().Add(Seconds(Clock::now() - sent->second));
  }
  if (delta.abandoned()) {
    spdlog::warn("job {}: worker {} abandoned round {} after {} steps", host_.job_id(), session.supervisor_id(), round,
                 result.steps());
    return;
  }
  // τ steps, or with a time budget the steps the worker ran within its round's bounds.
  const RoundSteps bounds = StepsOfRound(c, round, host_.state().tokens_processed);
  if (absl::Status ok = CheckRoundResult(result, round, bounds, round_->start_cursor[m.slot], TokensPerStep(c));
      !ok.ok()) {
    // A streamed Δ is already in the round's sum: the round must be redone without it.
    if (delta.streamed) host_.aggregator().Taint(round);
    session.Close(ok);
    return;
  }
  if (delta.streamed.has_value()) {
    // Judged on its header and summed as it came (round_sum.h).
    round_->results[m.slot] = SlotResult{{}, result, session.supervisor_id(), delta.streamed->norm, delta.streamed};
    host_.registry().NoteRoundDelivered(session.supervisor_id(), result);
    return;
  }
  // The norm is taken here, as the Δ arrives; the threshold is known when the round closes.
  const double norm = MeasureDeltaNorm(delta.tensors, result.mean_loss());
  if (!std::isfinite(norm)) {
    round_->refused.insert(m.slot);
    host_.Refuse(session.supervisor_id(), round,
                 Screen(host_.screen(), ArrivalThreshold(host_.screen()), DeltaNorm::Measured(norm)), &*round_);
    return;
  }
  round_->results[m.slot] = SlotResult{std::move(delta.tensors), result, session.supervisor_id(),
                                       host_.screen().JudgedNorm(norm, result.steps())};
  host_.registry().NoteRoundDelivered(session.supervisor_id(), result);
}

void SyncSchedule::SendRound(Member& m) {
  if (streaming()) return SendStreamingRound(m);
  const uint64_t r = round_->number;
  WorkerSession& s = *m.session;
  SlotState& slot = host_.state().slots[m.slot];
  host_.ExpectResultOf(s, r);
  if (!host_.SendTheta(m, r)) return;
  host_.SendStart(m, r, slot.sampler_cursor, host_.theta_crc());
  m.phase = MemberPhase::kInRound;
  round_->running[m.slot] = m.session.get();
  round_->sent_at[m.slot] = Clock::now();
  round_->start_cursor[m.slot] = slot.sampler_cursor;
  round_->sent_to.insert(s.supervisor_id());
  host_.registry().NoteActivity(s.supervisor_id(), host_.job_id(), r);
}

void SyncSchedule::StartRound(const std::vector<Member*>& members) {
  round_.emplace(Round{});  // Round{}: clang-14 refuses emplace() without arguments for it
  round_->number = host_.state().round + 1;
  round_->start = Clock::now();
  round_->start_unix_ms = NowUnixMs();
  round_->deadline = round_->start + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(host_.config().diloco.round_deadline_s));
  metrics::Get(metrics::kShepherdRound, {host_.job_id()}).Set(static_cast<double>(round_->number));
  for (const auto& [key, m] : host_.members()) {
    if (m.slot >= 0 && m.phase != MemberPhase::kFailed) round_->held_at_start.insert(m.slot);
  }
  std::vector<std::string> ids;
  for (Member* m : members) {
    SendRound(*m);
    ids.push_back(m->session->supervisor_id());
  }
  spdlog::info("job {}: round {}/{} started with {} workers ({})", host_.job_id(), round_->number, TotalRounds(),
               members.size(), absl::StrJoin(ids, ", "));
  if (streaming()) TakeEarlyResults();
}

RunOutcome SyncSchedule::Advance(Clock::time_point now) {
  const auto grace = host_.start_grace();
  std::vector<Member*> ready;
  bool preparing = false;  // a worker got its assignment less than the grace period ago
  for (auto& [key, m] : host_.members()) {
    if (m.phase == MemberPhase::kAssigning && now - m.assigned_at < grace) preparing = true;
    if (m.phase == MemberPhase::kReady) ready.push_back(&m);
  }
  const size_t min_workers = static_cast<size_t>(host_.config().diloco.min_workers);
  if (!round_.has_value()) {
    // Start with every slot ready; else wait up to the grace period for missing workers and
    // for ones still compiling, then start with the ready ones (at least min_workers).
    const bool full = ready.size() >= ActiveSlots();
    // Only before the run's first round, or for a worker that just left: after it, a missing
    // worker joins late (and with orphan_slots: takeover its slot is trained by the others).
    const bool grace_over = now - waiting_since_ >= grace || (closed_a_round_ && !WorkerJustLeft(now, grace));
    if (ready.empty() || ready.size() < min_workers) return RunOutcome::kRunning;
    if (!full && (!grace_over || preparing)) return RunOutcome::kRunning;
    StartRound(ready);
    return RunOutcome::kRunning;
  }
  Round& round = *round_;
  TakeOverOrphans();
  JoinLate(ready, now);
  // Everyone still in the round has reported, but too few results: wait for more workers.
  if (round.running.empty() && round.delivered() < min_workers) return RunOutcome::kRunning;
  // A worker is on its way to train an orphaned slot's task.
  if (round.running.empty() && now < round.deadline && TakeoverPending()) return RunOutcome::kRunning;
  if (round.running.empty() || (now >= round.deadline && round.delivered() >= min_workers)) {
    return CloseRound(now);
  }
  return RunOutcome::kRunning;
}

void SyncSchedule::JoinLate(const std::vector<Member*>& ready, Clock::time_point now) {
  Round& round = *round_;
  const size_t min_workers = static_cast<size_t>(host_.config().diloco.min_workers);
  // Everyone still in the round has reported, but too few results: every ready worker is needed.
  const bool needed = round.running.empty() && round.delivered() < min_workers;
  std::vector<std::string> ids;
  for (Member* m : ready) {
    if (m->phase != MemberPhase::kReady) continue;  // given an orphaned slot meanwhile (TakeOverOrphans)
    if (round.results.count(m->slot) != 0 || round.running.count(m->slot) != 0 || round.refused.count(m->slot) != 0) {
      continue;
    }
    const diloco::LateJoinQuestion question{.elapsed_s = Seconds(now - round.start),
                                            .round_s = host_.round_time().Get(),
                                            .others = round.running.size() + round.results.size(),
                                            .until_deadline_s = Seconds(round.deadline - now)};
    if (!needed && !diloco::WorthJoiningLate(question)) continue;
    SendRound(*m);
    ids.push_back(m->session->supervisor_id());
  }
  if (ids.empty()) return;
  spdlog::info("job {}: {} joins round {} late, {:.1f} s after its start ({} results in, {} running)", host_.job_id(),
               absl::StrJoin(ids, ", "), round.number, Seconds(now - round.start), round.delivered(),
               round.running.size() - ids.size());
}

Clock::time_point SyncSchedule::NextWakeup() const {
  if (round_.has_value()) return round_->deadline;
  const auto grace = host_.start_grace();
  Clock::time_point wake = waiting_since_ + grace;
  for (const auto& [key, m] : host_.members()) {
    if (m.phase == MemberPhase::kAssigning) wake = std::max(wake, m.assigned_at + grace);
  }
  return wake;
}

RunOutcome SyncSchedule::CloseRound(Clock::time_point now) {
  Round& round = *round_;
  const uint64_t r = round.number;
  for (auto& [slot, key] : round.running) {
    auto it = host_.members().find(key);
    if (it == host_.members().end()) continue;
    WorkerSession& s = *it->second.session;
    s.AbandonRound(r);
    v1::ShepherdMessage cancel;
    cancel.mutable_cancel()->set_round(r);
    cancel.mutable_cancel()->set_reason(absl::StrCat("round ", r, " closed without you (deadline)"));
    s.Send(std::move(cancel));
    it->second.phase = MemberPhase::kReady;
    spdlog::warn("job {}: round {} closes at its deadline without worker {}", host_.job_id(), r, s.supervisor_id());
  }
  absl::StatusOr<Intake> intake = ScreenRound(round);
  if (!intake.ok()) return host_.Fail(std::string(intake.status().message()));
  Intake& in = *intake;
  if (in.tainted) {
    constexpr const char* kTainted = "a streamed Δ broke its header after some of its chunks were summed";
    if (!streaming()) return RollBack(r, kTainted);
    if (std::optional<RunOutcome> o = host_.CountRollBack(r, kTainted)) return *o;
    round.skipped = true;  // (counted once: the next check is for rounds whose Δs were all refused)
    in.used_slots.clear();
    in.ids.clear();
  } else if (in.used_slots.empty()) {
    if (!streaming()) return RollBack(r, "every Δ of the round was refused");
    if (std::optional<RunOutcome> o = host_.CountRollBack(r, "every Δ of the round was refused")) return *o;
    round.skipped = true;
  }
  const auto outer_start = Clock::now();
  if (!in.used_slots.empty()) {
    absl::StatusOr<bool> stepped = host_.StepTheta(r, /*share=*/1);
    if (!stepped.ok()) return host_.Fail(absl::StrCat("round ", r, ": ", stepped.status().message()));
    if (!*stepped) {
      constexpr const char* kNotFinite = "θ or the outer momentum is not finite after the outer step";
      if (!streaming()) return RollBack(r, kNotFinite);
      if (std::optional<RunOutcome> o = host_.CountRollBack(r, kNotFinite)) return *o;
      round.skipped = true;
      in.used_slots.clear();
      in.ids.clear();
    }
  }
  host_.EndUpdate(r, in.accepted_norms);  // (before SendFragment: round r + 1's sum takes the new history)
  RunState& state = host_.state();
  if (streaming()) {
    if (r < TotalRounds()) SendFragment(r);  // (after the last round no worker merges it)
    // A skipped round is not redone: every worker that delivered has trained on past it (sent
    // the next round ahead), so its slot's data stream moves on whether its Δ was used or not.
    for (const auto& [slot, res] : round.results) state.slots[slot].sampler_cursor = res.result.sampler_cursor();
  }
  for (int slot : in.used_slots) {
    state.slots[slot].sampler_cursor = round.results[slot].result.sampler_cursor();
    ++state.slots[slot].rounds_done;
  }
  state.round = r;
  state.tokens_processed += in.tokens;
  // (A streaming round whose Δs were all refused keeps the last train loss.)
  if (in.weight > 0 || !state.train_loss) state.train_loss = in.weight > 0 ? in.loss_sum / in.weight : 0.0;
  RoundSummary summary{.round = r,
                       .last = JobDone(host_.config(), r, state.tokens_processed),
                       .tokens = in.tokens,
                       .round_s = Seconds(now - round.start),
                       .outer_step_s = Seconds(Clock::now() - outer_start),
                       .workers = std::move(in.ids)};
  summary.record = host_.RecordOf(round, summary.tokens, summary.round_s, summary.outer_step_s);
  round_.reset();
  waiting_since_ = Clock::now();
  closed_a_round_ = true;
  return host_.Conclude(summary);
}

absl::StatusOr<SyncSchedule::Intake> SyncSchedule::ScreenRound(Round& round) {
  const uint64_t r = round.number;
  diloco::DeltaScreen& screen = host_.screen();
  // Every Δ is judged against the round's threshold; a refused one is left out (reject) or
  // scaled down to the threshold (clip) by the aggregator. A streamed Δ was judged on its
  // header and is in the round's sum already (or was dropped); a sender whose chunks broke its
  // header is refused, and the round redone if some of them were added (pcp/diloco/delta_sum.h).
  const RoundSeal seal = host_.aggregator().Seal(r);  // no chunk is added after this
  std::vector<double> norms;
  for (const auto& [slot, res] : round.results) norms.push_back(res.norm);
  const diloco::ScreenThreshold threshold = screen.RoundThreshold(norms);
  for (const std::string& liar : seal.liars) {
    host_.Refuse(liar, r, Screen(screen, seal.threshold, DeltaNorm::BrokeDeclaration()), &round);
  }
  Intake in{.tainted = seal.tainted};
  for (auto& [slot, res] : round.results) {
    // (A streamed Δ was screened as its header arrived.)
    const diloco::ScreenVerdict verdict =
        res.streamed ? *res.streamed : Screen(screen, threshold, DeltaNorm::Measured(res.norm));
    if (Refused(verdict)) host_.Refuse(res.supervisor_id, r, verdict, &round);
    if (!Admitted(verdict)) continue;
    if (verdict.action == diloco::ScreenVerdict::kAccept) in.accepted_norms.push_back(res.norm);
    const double w = static_cast<double>(res.result.tokens_processed());
    if (!res.streamed) {
      absl::Status added = host_.aggregator().Add(r, Contribution{std::move(res.delta), w, verdict,
                                                                  res.result.mean_loss(), res.supervisor_id});
      if (!added.ok()) return Annotate(added, absl::StrCat("round ", r, ": aggregating the deltas"));
    }
    in.weight += w;
    in.loss_sum += w * res.result.mean_loss();
    in.tokens += res.result.tokens_processed();
    in.used_slots.push_back(slot);
    in.ids.push_back(res.supervisor_id);
  }
  return in;
}

RunOutcome SyncSchedule::RollBack(uint64_t round, const std::string& why) {
  std::optional<RunOutcome> failed = host_.CountRollBack(round, why);
  round_.reset();
  waiting_since_ = Clock::now();
  return failed.has_value() ? *failed : host_.Advance(Clock::now());
}

size_t SyncSchedule::ActiveSlots() const {
  size_t n = 0;
  for (const SlotState& slot : host_.state().slots) {
    if (!host_.quarantined(slot.supervisor_id)) ++n;
  }
  return n;
}

}  // namespace pcp::shepherd
