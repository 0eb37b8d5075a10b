// Private: synchronous DiLoCo rounds, and Streaming DiLoCo (round_schedule.h).
//
// Per round, every ready worker gets θ and a StartRound with the τ learning rates and its
// slot's sampler state. A round closes when every participant has reported (or left), or at
// the deadline if at least min_workers have reported; with fewer it waits, taking in ready
// workers that are not in the round. A worker that becomes ready while a round is open (e.g.
// restarted after a crash) joins it late when that is worth the wait (pcp/diloco/late_join.h).
// The Δs are screened (a refused one left out or clipped; quarantines by the host), combined by
// the job's aggregation rule and applied with the outer step; a round whose Δs were all refused
// or whose outer step is not finite is rolled back and redone. With diloco.orphan_slots:
// takeover, a slot whose worker is quarantined, lost or missing is trained in the same round by
// a worker that has delivered its own (round_schedule_takeover.cc; pcp/diloco/slot_takeover.h).
//
// Streaming DiLoCo (a fragment plan; round_schedule_streaming.cc; pcp/diloco/streaming.h):
// each round is inner_steps / P steps and syncs one fragment of θ; workers keep their θ
// between rounds and get each round's StartRound one round ahead, so they train on while the
// fragment's Δs come in and the outer step is applied; the fragment's new values (or encoded
// update) go to them as the round closes. A streaming round that would be rolled back is
// instead skipped (the workers have moved on): counted once as a rollback, its fragment and
// momentum unchanged, no participants in its record, and the data streams of the workers that
// delivered move on.
#ifndef PCP_SHEPHERD_SRC_ROUND_SCHEDULE_SYNC_H_
#define PCP_SHEPHERD_SRC_ROUND_SCHEDULE_SYNC_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pcp/diloco/slot_takeover.h"
#include "round_schedule.h"

namespace pcp::shepherd {

class SyncSchedule final : public RoundSchedule {
 public:
  // `fragments`: Streaming DiLoCo's plan (null: whole-θ rounds); outlives the schedule.
  SyncSchedule(RoundHost& host, const diloco::FragmentPlan* fragments);

  uint64_t TotalRounds() const override;
  bool Done() const override;
  RunOutcome Advance(Clock::time_point now) override;
  Clock::time_point NextWakeup() const override;
  void OnResult(Member& m, uint64_t round, ReceivedDelta delta, const v1::RoundResult& result) override;
  void OnResync(Member& m, const v1::ResyncRequest& request) override;
  void Drop(Member& m) override;
  uint32_t WorkersInRound() const override;
  std::optional<uint64_t> OpenRound() const override;
  bool EvalDue(uint64_t r) const override;

 private:
  bool streaming() const { return fragments_ != nullptr; }
  void StartRound(const std::vector<Member*>& members);
  void SendRound(Member& m);
  // Sends the open round to ready workers whose slot has no part in it yet: when the round
  // needs them to reach min_workers, or when joining late is worth it (pcp/diloco/late_join.h:
  // a worker restarted after a crash takes part in the round it was killed in).
  void JoinLate(const std::vector<Member*>& ready, Clock::time_point now);
  // Closes the open round: screening, aggregation, the outer step, θ; then the host's Conclude.
  RunOutcome CloseRound(Clock::time_point now);
  // The round's results screened (refusals counted) and the admitted Δs given to the
  // aggregator; its sums sealed.
  struct Intake {
    bool tainted = false;  // a streamed Δ's refused chunks are in the sum: the round is redone
    std::vector<int> used_slots;
    std::vector<std::string> ids;        // their supervisor ids
    std::vector<double> accepted_norms;  // of the Δs accepted unchanged (screening's history)
    double weight = 0, loss_sum = 0;     // Σ tokens, Σ tokens × mean loss
    uint64_t tokens = 0;
  };
  absl::StatusOr<Intake> ScreenRound(Round& round);
  // Discards the open round (θ and momentum unchanged); the job fails after max_rollbacks in
  // a row.
  RunOutcome RollBack(uint64_t round, const std::string& why);
  // Slots whose owner is not quarantined: a round with that many ready workers starts at once.
  size_t ActiveSlots() const;

  // ---- Streaming DiLoCo (round_schedule_streaming.cc)
  // Round r's StartRound (with θ in full first if the worker's replica is not θ for round r),
  // unless it was sent ahead, and StartRound r + 1 ahead.
  void SendStreamingRound(Member& m);
  // Sends round r's fragment (its update, or its values) to every worker whose replica is θ for
  // round r: their θ for round r + 1.
  void SendFragment(uint64_t r);
  // Results of the round about to open that came before it opened (a worker sent it ahead),
  // taken once it has.
  void TakeEarlyResults();

  // ---- Data follows the work (round_schedule_takeover.cc; pcp/diloco/slot_takeover.h)
  // diloco.orphan_slots: takeover, in a round that is not streamed.
  bool takes_over() const;
  // The open round's slots as SlotToTakeOver sees them.
  std::vector<diloco::SlotTask> SlotTasks() const;
  // Sends the open round to ready workers given an orphaned slot, and gives orphaned slots to
  // ready workers whose own task of the round is done (their new slot's shard goes out first).
  void TakeOverOrphans();
  // A worker was given an orphaned slot of the open round and has not started its task yet:
  // the round waits for it.
  bool TakeoverPending() const;
  // A slot's worker left less than `grace` ago and nobody holds the slot: the next round
  // waits the start grace for it (a restarted worker is back in a second or two).
  bool WorkerJustLeft(Clock::time_point now, Clock::duration grace) const;

  RoundHost& host_;
  const diloco::FragmentPlan* const fragments_;
  std::optional<Round> round_;
  struct EarlyResult {
    std::weak_ptr<WorkerSession> session;
    uint64_t round = 0;
    ReceivedDelta delta;
    v1::RoundResult result;
  };
  std::vector<EarlyResult> early_results_;
  Clock::time_point waiting_since_;
  bool closed_a_round_ = false;                    // this run has closed a round: a short job waits no more grace...
  std::map<int, Clock::time_point> slot_left_at_;  // ...except for a worker that just left (slot -> when)
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_ROUND_SCHEDULE_SYNC_H_
