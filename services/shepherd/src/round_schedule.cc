#include "round_schedule.h"

#include "absl/strings/str_cat.h"
#include "round_schedule_async.h"
#include "round_schedule_sync.h"

namespace pcp::shepherd {

absl::Status CheckRoundResult(const v1::RoundResult& result, uint64_t round, const RoundSteps& bounds,
                              uint64_t start_cursor, uint64_t tokens_per_step) {
  const bool steps_ok =
      result.steps() >= static_cast<uint64_t>(bounds.min) && result.steps() <= static_cast<uint64_t>(bounds.max);
  const uint64_t steps = steps_ok ? result.steps() : static_cast<uint64_t>(bounds.max);
  const uint64_t tokens_expected = steps * tokens_per_step;
  const uint64_t cursor_expected = start_cursor + steps;
  if (steps_ok && result.tokens_processed() == tokens_expected && result.sampler_cursor() == cursor_expected) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("RoundResult for round ", round, ": expected steps ",
                   bounds.min == bounds.max ? absl::StrCat(bounds.min)
                                            : absl::StrCat("in [", bounds.min, ", ", bounds.max, "]"),
                   ", tokens_processed ", tokens_expected, ", sampler_cursor ", cursor_expected, "; got ",
                   result.steps(), ", ", result.tokens_processed(), ", ", result.sampler_cursor()));
}

std::unique_ptr<RoundSchedule> NewRoundSchedule(RoundHost& host, const diloco::FragmentPlan* fragments) {
  if (host.config().diloco.mode == diloco::RoundMode::kAsync) return std::make_unique<AsyncSchedule>(host);
  return std::make_unique<SyncSchedule>(host, fragments);
}

}  // namespace pcp::shepherd
