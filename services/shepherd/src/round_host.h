// Private: what a job's RoundSchedule (round_schedule.h) may use of the JobRun that owns it.
// JobRun keeps the job's life cycle: its workers and their slots and assignments, θ, and the
// strategies every schedule shares, each chosen once from the job (screening, screen.h; the
// aggregation rule, aggregator.h; the outer step, outer_step.h; θ's encoding for the streams,
// theta_encoder.h); and what follows an outer update (metrics, progress, history, evaluation,
// checkpoints: Conclude). A schedule decides which Δs make an outer update and when: it sends
// the tasks, takes the results, screens and aggregates them, and asks the host to step θ.
//
//   host.SendTheta(m, r);  host.SendStart(m, r, cursor, host.theta_crc());   // a task
//   ...results in: host.aggregator().Add(r, contribution) ...
//   PCP_ASSIGN_OR_RETURN(bool stepped, host.StepTheta(r, /*share=*/1));       // θ ← outer step
//   host.EndUpdate(r, accepted_norms);
//   return host.Conclude(summary);                                              // metrics, eval, ...
//
// Coordinator thread only.
#ifndef PCP_SHEPHERD_SRC_ROUND_HOST_H_
#define PCP_SHEPHERD_SRC_ROUND_HOST_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "aggregator.h"
#include "pcp/diloco/late_join.h"
#include "pcp/diloco/screening.h"
#include "pcp/shepherd/job_manager.h"
#include "pcp/training/job_config.h"
#include "pcp/training/progress.h"
#include "round_publisher.h"
#include "theta_encoder.h"
#include "worker_registry.h"
#include "worker_session.h"

namespace pcp::shepherd {

using Clock = std::chrono::steady_clock;

// What Advance and the handlers that close rounds report.
enum class RunOutcome { kRunning, kCompleted, kFailed };

// A worker of the job, as the run and its schedule see it.
enum class MemberPhase { kIdle, kAssigning, kReady, kInRound, kFailed, kQuarantined };
struct Member {
  std::shared_ptr<WorkerSession> session;
  int slot = -1;
  MemberPhase phase = MemberPhase::kIdle;
  Clock::time_point assigned_at;  // when its Assignment went out
  uint64_t theta_round = 0;       // the round whose θ it was last sent (0: none yet)
  // Its draw of θ₀ (StartRound.theta_from_init) did not match the shepherd's (a ResyncRequest):
  // θ₀ goes in full from now on.
  bool init_refused = false;
  // Streaming: the last round whose StartRound it was sent (one ahead of the open round),
  // and the sampler cursor that StartRound carried.
  uint64_t started_round = 0;
  uint64_t started_cursor = 0;
};
using Members = std::map<WorkerSession*, Member>;  // by session

// A Δ in, with what the round needs of its result.
struct SlotResult {
  std::vector<Tensor> delta;  // buffered aggregation
  v1::RoundResult result;
  std::string supervisor_id;
  double norm = 0;  // the Δ's L2 norm as screened (DeltaScreen::JudgedNorm; streamed: as declared)
  // Streamed into the round's RoundSum: the verdict it was added (or dropped) with.
  std::optional<diloco::ScreenVerdict> streamed;
};

// An open round (an asynchronous group while it is applied), and what its history record
// (RoundHost::RecordOf) is made of.
struct Round {
  uint64_t number = 0;
  Clock::time_point start, deadline;
  std::map<int, WorkerSession*> running;     // slot -> member key
  std::map<int, Clock::time_point> sent_at;  // slot -> when its θ and StartRound went out
  std::map<int, uint64_t> start_cursor;      // slot -> the sampler cursor its StartRound carried
  std::map<int, SlotResult> results;
  std::set<int> refused;  // slots whose Δ was refused as it arrived (not finite)
  // Results in, refused or not: what min_workers counts.
  size_t delivered() const { return results.size() + refused.size(); }
  int64_t start_unix_ms = 0;
  std::set<std::string> sent_to;                                 // supervisor ids
  std::vector<std::pair<std::string, std::string>> refused_ids;  // rejected Δs: supervisor id, reason
  bool skipped = false;  // streaming: rolled back, so none of its Δs went into θ
  // Data follows the work (round_schedule_takeover.cc): the slots a worker held as the round
  // started, and those a free worker was given to train in it.
  std::set<int> held_at_start;
  std::set<int> taken_over;
};

class RoundHost {
 public:
  // ---- The job and its workers
  virtual const std::string& job_id() const = 0;
  virtual const JobConfig& config() const = 0;
  // Rounds done, tokens, the slots' sampler state and rounds (checkpointed).
  virtual RunState& state() = 0;
  virtual Members& members() = 0;
  virtual WorkerRegistry& registry() = 0;
  // How long a new round waits for missing workers (shepherd's round_start_grace_ms).
  virtual Clock::duration start_grace() const = 0;
  virtual bool quarantined(const std::string& supervisor_id) const = 0;
  // Per-worker round times, for late joins.
  virtual diloco::RoundTimeEstimate& round_time() = 0;
  // Sends m its slot's Assignment (shard, program) again; it becomes ready later.
  virtual void Assign(Member& m) = 0;

  // ---- Sending a task
  virtual uint32_t theta_crc() const = 0;
  virtual ThetaEncoder& theta_encoder() = 0;
  virtual const std::vector<Tensor>& theta() const = 0;
  // Tells the worker to expect round `round`'s result: its Δ specs, codec and, with a
  // streamable rule, the round's sink (Aggregator::SinkFor).
  virtual void ExpectResultOf(WorkerSession& s, uint64_t round) = 0;
  // θ of round `r` to m: nothing while θ is the job's θ₀ (the worker draws it, unless
  // Member::init_refused), the update from the θ it holds when that is round r - 1's (encoded and
  // chunked once per round for every stream), else θ in full. False: the session closed.
  virtual bool SendTheta(Member& m, uint64_t r) = 0;
  // Sends StartRound `round` with the slot's sampler state from `cursor`; crc 0 = unchecked.
  // The inner learning rates are those of round `schedule_round` (0: `round`).
  virtual void SendStart(Member& m, uint64_t round, uint64_t cursor, uint32_t theta_crc,
                         uint64_t schedule_round = 0) = 0;

  // ---- Screening and aggregation
  virtual diloco::DeltaScreen& screen() = 0;
  virtual Aggregator& aggregator() = 0;
  // Counts a refused Δ of worker `id` (log, metric, event, progress; a rejected one in
  // `record`'s refused_ids when given); quarantines the worker at the job's limit, which drops
  // its task (RoundSchedule::Drop).
  virtual void Refuse(const std::string& id, uint64_t round, const diloco::ScreenVerdict& verdict, Round* record) = 0;
  // A rolled-back update (θ and momentum unchanged): counted, reported; the job's failure
  // after diloco.screening.max_rollbacks in a row.
  virtual std::optional<RunOutcome> CountRollBack(uint64_t round, const std::string& why) = 0;

  // ---- The outer update
  // θ ← the outer step of update `r`'s combined Δ (the aggregator's Finish), which holds
  // `share` of a round's worth of Δs (Combined::share), and the update encoded for the streams.
  // False: θ' or the momentum would not be finite, nothing changed. An error fails the job
  // ("averaging the deltas: ...", "outer step: ...").
  virtual absl::StatusOr<bool> StepTheta(uint64_t r, double share) = 0;
  // After update `r` (stepped or skipped): θ is chunked afresh, the round's sums dropped, and
  // screening's history takes the accepted norms.
  virtual void EndUpdate(uint64_t r, const std::vector<double>& accepted_norms) = 0;
  // The history record of the update being concluded (train loss, tokens and θ already
  // updated; the publisher adds the training-stream bytes).
  virtual v1::RoundRecord RecordOf(const Round& round, uint64_t tokens, double round_s, double outer_step_s) const = 0;
  // What follows an update: metrics, progress, history, evaluation, θ's snapshot, checkpoints,
  // and Advance (the next round) or the job's end.
  virtual RunOutcome Conclude(const RoundSummary& summary) = 0;
  // The run's Advance: takes a finished evaluation, assigns free slots, then the schedule's.
  virtual RunOutcome Advance(Clock::time_point now) = 0;
  virtual RunOutcome Fail(const std::string& why) = 0;

 protected:
  ~RoundHost() = default;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_ROUND_HOST_H_
