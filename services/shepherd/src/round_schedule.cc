#include "round_schedule.h"

#include "round_schedule_async.h"
#include "round_schedule_sync.h"

namespace pcp::shepherd {

std::unique_ptr<RoundSchedule> NewRoundSchedule(RoundHost& host, const diloco::FragmentPlan* fragments) {
  if (host.config().diloco.mode == diloco::RoundMode::kAsync) return std::make_unique<AsyncSchedule>(host);
  return std::make_unique<SyncSchedule>(host, fragments);
}

}  // namespace pcp::shepherd
