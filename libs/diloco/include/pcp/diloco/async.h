// Asynchronous DiLoCo (job YAML diloco.mode: async; docs/diloco.md, "Asynchronous DiLoCo"):
// the shepherd applies Δs as they arrive instead of once per round, so a slow worker costs its
// own share of the work and nothing more.
//
// Every worker trains τ steps from the newest θ it was sent (version v: v outer updates
// applied), sends its Δ, and is at once sent the newest θ and its next task. The shepherd
// applies the Δs in groups: as soon as `quorum` Δs are in, it waits up to `grace_ms` more for
// others, then screens the group, scales each Δ for its staleness s (outer updates applied
// since its θ was sent) and applies their token-weighted average with the outer Nesterov step.
// The job ends when it has used diloco.rounds × diloco.workers Δs: the tokens of the
// synchronous job.
//
//   const double k = StalenessScale(options.staleness, /*staleness=*/2, /*workers=*/3);  // 1/3 for kInverse
//   for (float& x : delta) x *= k;
#ifndef PCP_DILOCO_ASYNC_H_
#define PCP_DILOCO_ASYNC_H_

#include <cstdint>
#include <utility>

#include "absl/strings/string_view.h"

namespace pcp::diloco {

// How rounds are run (job YAML diloco.mode).
//   sync:  every round runs a task per slot and closes when they are in (or at the deadline);
//   async: Δs are applied as they arrive, in groups of at least `quorum` (AsyncOptions).
enum class RoundMode { kSync, kAsync };
inline constexpr std::pair<RoundMode, absl::string_view> kRoundModeNames[] = {
    {RoundMode::kSync, "sync"},
    {RoundMode::kAsync, "async"},
};

// How a stale Δ is weighed (job YAML diloco.async.staleness), s being the outer updates
// applied since its θ was sent.
//   inverse:      Δ × 1 / (1 + s) (Δs computed from an older θ move θ less);
//   beyond_round: Δ × 1 / (1 + max(0, s − (workers − 1))): a synchronous round applies its
//                 `workers` Δs as if one after another, the last workers − 1 updates behind
//                 its θ, so only staleness past that is discounted;
//   none:         every Δ as it is.
enum class StalenessRule { kInverse, kBeyondRound, kNone };
inline constexpr std::pair<StalenessRule, absl::string_view> kStalenessRuleNames[] = {
    {StalenessRule::kInverse, "inverse"},
    {StalenessRule::kBeyondRound, "beyond_round"},
    {StalenessRule::kNone, "none"},
};

// When the outer momentum takes the Δs (job YAML diloco.async.momentum).
//   delayed:     each group moves θ at once by its gradient part, lr·Δ; the momentum takes a
//                round's worth of Δs at a time (Liu et al. 2024's delayed Nesterov), so a stale
//                Δ is not amplified by a momentum it never saw (services/shepherd/src/
//                delayed_nesterov_step.h);
//   every_group: the job's outer step (Nesterov) on every group.
enum class AsyncMomentum { kDelayed, kEveryGroup };
inline constexpr std::pair<AsyncMomentum, absl::string_view> kAsyncMomentumNames[] = {
    {AsyncMomentum::kDelayed, "delayed"},
    {AsyncMomentum::kEveryGroup, "every_group"},
};

struct AsyncOptions {
  int64_t quorum = 1;    // Δs that open a group; [1, workers]
  int64_t grace_ms = 0;  // after the quorum, how long to wait for more Δs of the group
  StalenessRule staleness = StalenessRule::kBeyondRound;
  AsyncMomentum momentum = AsyncMomentum::kDelayed;
  bool operator==(const AsyncOptions&) const = default;
};

// The factor a Δ of the given staleness is scaled by in a job of `workers` slots (1 for
// staleness 0).
double StalenessScale(StalenessRule rule, uint64_t staleness, uint64_t workers);

}  // namespace pcp::diloco

#endif  // PCP_DILOCO_ASYNC_H_
