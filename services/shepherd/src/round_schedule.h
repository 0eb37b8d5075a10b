// Private: how a job's Δs become outer updates, chosen once from the job (NewRoundSchedule).
//   - Synchronous rounds (round_schedule_sync.cc): every slot trains τ steps (or a time budget)
//     from the same θ; the round closes when every participant has reported (or left), or at
//     its deadline with at least min_workers; late joins (pcp/diloco/late_join.h) and, with
//     diloco.orphan_slots: takeover, slots whose worker is gone trained by the others
//     (round_schedule_takeover.cc).
//   - Streaming DiLoCo (the synchronous schedule with a fragment plan; round_schedule_streaming.cc):
//     one fragment of θ per round, workers sent each round's StartRound one round ahead.
//   - Asynchronous DiLoCo (round_schedule_async.cc): Δs applied as they arrive, in groups of
//     diloco.async.quorum, scaled for staleness; each worker's next task from the newest θ.
// A schedule uses the run through RoundHost (round_host.h); the run hands it its workers'
// results and asks it to advance. A new way of forming updates (e.g. loss-scored or
// trust-weighted groups) is a new implementation here.
#ifndef PCP_SHEPHERD_SRC_ROUND_SCHEDULE_H_
#define PCP_SHEPHERD_SRC_ROUND_SCHEDULE_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "pcp/diloco/streaming.h"
#include "pcp/training/round_budget.h"
#include "round_host.h"
#include "worker_event.h"

namespace pcp::shepherd {

class RoundSchedule {
 public:
  virtual ~RoundSchedule() = default;

  // The outer updates the job plans (its progress's total): diloco.rounds, or asynchronous
  // groups ⌈rounds × workers / quorum⌉ (a group larger than the quorum ends the job sooner).
  virtual uint64_t TotalRounds() const = 0;
  // Every Δ the job plans is in θ (a resumed job may be done before its first round).
  virtual bool Done() const = 0;
  // Starts tasks, closes rounds or applies groups; after the run's own work (RoundHost::Advance).
  virtual RunOutcome Advance(Clock::time_point now) = 0;
  // When Advance should next run even if nothing happens (a deadline or a grace period).
  virtual Clock::time_point NextWakeup() const = 0;
  // A worker's result for `round` (stale ones are ignored).
  virtual void OnResult(Member& m, uint64_t round, ReceivedDelta delta, const v1::RoundResult& result) = 0;
  // m's θ replica does not match: it gets θ in full (and its task again where the schedule
  // redoes it). Its theta_round is already 0.
  virtual void OnResync(Member& m, const v1::ResyncRequest& request) = 0;
  // m leaves the job or is quarantined (its slot is still set): its task is dropped.
  virtual void Drop(Member& m) = 0;
  // Workers with a task in flight (Admin's view of the job).
  virtual uint32_t WorkersInRound() const = 0;
  // The open round (to abandon when the job is released), if any.
  virtual std::optional<uint64_t> OpenRound() const = 0;
  // Whether update `r`, just applied, is followed by a validation estimate (every eval_every
  // rounds; asynchronous: every eval_every rounds' worth of Δs).
  virtual bool EvalDue(uint64_t r) const = 0;
};

// A worker's result for `round` against what its task allowed: steps within `bounds` (τ, or a
// time budget's), tokens_processed = steps × tokens_per_step, sampler_cursor = start_cursor +
// steps. InvalidArgument naming what was expected and what came (the session is closed with it).
absl::Status CheckRoundResult(const v1::RoundResult& result, uint64_t round, const RoundSteps& bounds,
                              uint64_t start_cursor, uint64_t tokens_per_step);

// The job's schedule: asynchronous (diloco.mode: async), else synchronous, streamed when
// `fragments` is given (diloco.streaming).
std::unique_ptr<RoundSchedule> NewRoundSchedule(RoundHost& host, const diloco::FragmentPlan* fragments);

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_ROUND_SCHEDULE_H_
