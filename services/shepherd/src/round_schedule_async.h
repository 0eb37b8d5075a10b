// Private: asynchronous DiLoCo (round_schedule.h; pcp/diloco/async.h; docs/diloco.md,
// "Asynchronous DiLoCo"). Every worker trains from the newest θ and is sent its next task as
// soon as its Δ is in; the Δs are applied in groups of at least diloco.async.quorum (waiting
// up to grace_ms for more once the quorum is in), each scaled for its staleness, with the
// job's outer step. θ version v (RunState::round) is θ after v outer updates; a task sent at
// version v is "round v + 1" on the wire, so the θ update, CRC and Δ streams work as for
// synchronous rounds. A task past diloco.round_deadline_s is cancelled and its batches handed
// out again; a refused Δ's batches are used up. With diloco.time_budget (dynamic local updates,
// Liu et al. 2024) each task runs the steps its worker fits in the budget, so a slow worker's
// Δs are as fresh as the others', and the job ends at the synchronous job's tokens.
#ifndef PCP_SHEPHERD_SRC_ROUND_SCHEDULE_ASYNC_H_
#define PCP_SHEPHERD_SRC_ROUND_SCHEDULE_ASYNC_H_

#include <map>
#include <optional>
#include <vector>

#include "pcp/training/round_budget.h"
#include "round_schedule.h"

namespace pcp::shepherd {

class AsyncSchedule final : public RoundSchedule {
 public:
  explicit AsyncSchedule(RoundHost& host) : host_(host) {}

  uint64_t TotalRounds() const override;
  bool Done() const override;
  RunOutcome Advance(Clock::time_point now) override;
  Clock::time_point NextWakeup() const override;
  void OnResult(Member& m, uint64_t round, ReceivedDelta delta, const v1::RoundResult& result) override;
  void OnResync(Member& m, const v1::ResyncRequest& request) override;
  void Drop(Member& m) override;
  uint32_t WorkersInRound() const override { return static_cast<uint32_t>(flights_.size()); }
  std::optional<uint64_t> OpenRound() const override { return std::nullopt; }
  bool EvalDue(uint64_t) const override { return eval_due_; }

 private:
  // Δs the job uses in all (diloco.rounds × diloco.workers: the synchronous job's tokens), and
  // so far (the slots' rounds_done). With a time budget the job counts tokens instead.
  uint64_t TasksTotal() const;
  uint64_t TasksUsed() const;
  // Whether the Δs in, waiting and in flight (at their fewest steps) fall short of the job.
  bool MoreTasksNeeded() const;
  void SendTask(Member& m);
  // The group of Δs in: screened, scaled for staleness, averaged and applied; then Conclude.
  RunOutcome ApplyGroup(Clock::time_point now);
  // The slot's task is dropped: its batches are handed out again.
  void DropTask(int slot);

  struct Flight {  // a worker's task in flight
    WorkerSession* key = nullptr;
    uint64_t round = 0;  // as sent: θ after round - 1 outer updates
    uint64_t start_cursor = 0;
    RoundSteps steps;  // the steps it may run (τ, or a time budget's bounds)
    Clock::time_point sent_at;
  };
  struct Arrival {  // a Δ in, not applied yet
    int slot = -1;
    uint64_t round = 0;
    SlotResult res;
  };
  RoundHost& host_;
  std::map<int, Flight> flights_;        // slot -> its task in flight
  std::vector<Arrival> arrivals_;        // in arrival order
  std::map<int, uint64_t> next_cursor_;  // slot -> where its next task's batches start
  Clock::time_point quorum_since_{};     // when the waiting group reached its quorum
  Clock::time_point last_update_{};      // the last outer update (a group's "round" time)
  int64_t last_update_unix_ms_ = 0;
  bool eval_due_ = false;  // evaluate after this update (a round's worth of Δs since the last)
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_ROUND_SCHEDULE_ASYNC_H_
