// The synchronous schedule's "data follows the work" policy (round_schedule_sync.h; pcp/diloco/slot_takeover.h;
// docs/diloco.md, "Data follows the work"): the task of a slot whose worker is quarantined,
// lost or missing is trained in the same round by a worker that has delivered its own.
#include "round_schedule_sync.h"

#include "absl/strings/str_cat.h"
#include "pcp/base/absl_fmt.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {

bool SyncSchedule::takes_over() const {
  const DiLoCoConfig& d = host_.config().diloco;
  return d.orphan_slots == diloco::OrphanSlots::kTakeover && !streaming();
}

std::vector<diloco::SlotTask> SyncSchedule::SlotTasks() const {
  const Round& round = *round_;
  std::vector<diloco::SlotTask> tasks(host_.state().slots.size());
  for (const auto& [key, m] : host_.members()) {
    if (m.slot >= 0 && m.phase != MemberPhase::kFailed && m.phase != MemberPhase::kQuarantined) {
      tasks[static_cast<size_t>(m.slot)].held = true;
    }
  }
  for (size_t s = 0; s < tasks.size(); ++s) {
    const int slot = static_cast<int>(s);
    diloco::SlotTask& t = tasks[s];
    t.in_round = round.running.count(slot) != 0 || round.results.count(slot) != 0 || round.refused.count(slot) != 0;
    t.orphaned = round.held_at_start.count(slot) == 0 || host_.quarantined(host_.state().slots[s].supervisor_id);
    t.rounds_done = host_.state().slots[s].rounds_done;
  }
  return tasks;
}

void SyncSchedule::TakeOverOrphans() {
  if (!takes_over() || !round_.has_value()) return;
  Round& round = *round_;
  auto in_round = [&](int slot) {
    return round.running.count(slot) != 0 || round.results.count(slot) != 0 || round.refused.count(slot) != 0;
  };
  for (auto& [key, m] : host_.members()) {
    // Its new slot's shard is loaded: it trains that slot's task from the slot's cursor.
    if (m.phase == MemberPhase::kReady && m.slot >= 0 && round.taken_over.count(m.slot) != 0 && !in_round(m.slot)) {
      SendRound(m);
    }
  }
  for (auto& [key, m] : host_.members()) {
    // (A worker whose slot's task is not in the round yet is JoinLate's question.)
    if (m.phase != MemberPhase::kReady || m.slot < 0 || !in_round(m.slot)) continue;
    const std::optional<int> slot = diloco::SlotToTakeOver(SlotTasks());
    if (!slot.has_value()) return;
    spdlog::info("job {}: worker {} takes over slot {} (owner {}) in round {}, from its cursor {}", host_.job_id(),
                 m.session->supervisor_id(), *slot, host_.state().slots[static_cast<size_t>(*slot)].supervisor_id,
                 round.number, host_.state().slots[static_cast<size_t>(*slot)].sampler_cursor);
    round.taken_over.insert(*slot);
    m.slot = *slot;
    m.theta_round = 0;  // a new assignment: the worker's replica of θ goes, θ in full follows
    host_.Assign(m);
  }
}

bool SyncSchedule::TakeoverPending() const {
  if (!takes_over() || !round_.has_value()) return false;
  const Round& round = *round_;
  for (const auto& [key, m] : host_.members()) {
    if (m.slot < 0 || round.taken_over.count(m.slot) == 0) continue;
    if (m.phase != MemberPhase::kAssigning && m.phase != MemberPhase::kReady) continue;
    if (round.running.count(m.slot) == 0 && round.results.count(m.slot) == 0 && round.refused.count(m.slot) == 0) {
      return true;
    }
  }
  return false;
}

bool SyncSchedule::WorkerJustLeft(Clock::time_point now, Clock::duration grace) const {
  for (const auto& [slot, left] : slot_left_at_) {
    if (now - left >= grace) continue;
    bool held = false;
    for (const auto& [key, m] : host_.members()) held = held || m.slot == slot;
    if (!held) return true;
  }
  return false;
}

}  // namespace pcp::shepherd
