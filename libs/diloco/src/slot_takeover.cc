#include "pcp/diloco/slot_takeover.h"

namespace pcp::diloco {

std::optional<int> SlotToTakeOver(const std::vector<SlotTask>& tasks) {
  std::optional<int> best;
  for (size_t s = 0; s < tasks.size(); ++s) {
    const SlotTask& t = tasks[s];
    if (t.held || t.in_round || !t.orphaned) continue;
    if (!best.has_value() || t.rounds_done < tasks[static_cast<size_t>(*best)].rounds_done) best = static_cast<int>(s);
  }
  return best;
}

bool HasSlotToTakeOver(const std::vector<SlotTask>& tasks) { return SlotToTakeOver(tasks).has_value(); }

}  // namespace pcp::diloco
