// Data follows the work: which orphaned slot a free worker trains next, so that the shard of
// a slot whose worker is quarantined, lost or missing is still trained (docs/diloco.md, "Data
// follows the work").
//
// A job has `diloco.workers` slots; each slot is a shard of the training data with its own
// sampler stream (seed, cursor), checkpointed per slot. A round is one task per slot: τ steps
// of that slot's stream from θ. With `diloco.orphan_slots: takeover` (the default) a worker
// that has delivered its own task and finds a slot of the open round that nobody holds takes
// that slot's task too (its shard is sent to it, its cursor goes on from where the slot's
// last used Δ left it), so every slot's data is trained every round and each slot's cursor
// moves only when its Δ is used: nothing is trained twice or skipped. `idle` leaves such a
// slot untrained (the behaviour before).
//
//   std::vector<SlotTask> tasks = ...;               // one per slot, as the open round sees it
//   if (std::optional<int> s = SlotToTakeOver(tasks)) { ...assign slot *s to the free worker... }
#ifndef PCP_DILOCO_SLOT_TAKEOVER_H_
#define PCP_DILOCO_SLOT_TAKEOVER_H_

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace pcp::diloco {

// What happens to a slot whose worker is gone (job YAML diloco.orphan_slots).
enum class OrphanSlots { kTakeover, kIdle };
inline constexpr std::pair<OrphanSlots, absl::string_view> kOrphanSlotsNames[] = {
    {OrphanSlots::kTakeover, "takeover"},
    {OrphanSlots::kIdle, "idle"},
};

// One slot as the open round sees it.
struct SlotTask {
  // A connected worker that is not quarantined holds the slot (its own, or one it took over).
  bool held = false;
  // The slot's task is running, delivered or refused in the open round.
  bool in_round = false;
  // Whether the slot may be taken over in this round: its owner is quarantined, or no worker
  // held it when the round started (a worker that dies mid-round gets the chance to come back
  // and join late first; pcp/diloco/late_join.h).
  bool orphaned = false;
  uint64_t rounds_done = 0;  // Δs of the slot used so far
};

// The slot a free worker should take over in the open round: among the orphaned slots that
// nobody holds and that have no part in the round yet, the one with the fewest rounds done
// (then the lowest index). nullopt when there is none.
std::optional<int> SlotToTakeOver(const std::vector<SlotTask>& tasks);

// Whether the open round still has a slot that SlotToTakeOver would give out: the round must
// not close while a free worker can take it.
bool HasSlotToTakeOver(const std::vector<SlotTask>& tasks);

}  // namespace pcp::diloco

#endif  // PCP_DILOCO_SLOT_TAKEOVER_H_
