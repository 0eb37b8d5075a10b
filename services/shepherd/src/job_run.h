// Private: the DiLoCo round engine for the one running job. Single-threaded: the
// coordinator's thread calls every method.
//
// Workers get a slot (0..workers-1; a supervisor id keeps its slot across reconnects, so its
// shard and data stream stay its own), an Assignment (program sent once per hash, shard
// inline or as a shared path), and then, per round, θ and a StartRound with the τ learning
// rates and the slot's sampler state. A round closes when every participant has reported
// (or left), or at the deadline if at least min_workers have reported; with fewer it waits,
// taking in ready workers that are not in the round. A worker that becomes ready while a round
// is open (e.g. restarted after a crash) joins it late when that is worth the wait
// (pcp/diloco/late_join.h). The Δs are averaged weighted by tokens
// and applied with the outer Nesterov step, after screening (pcp/diloco/screening.h): a Δ
// above the round's norm threshold is rejected or clipped, a worker refused
// diloco.screening.quarantine_after times is quarantined (no more rounds in this job, its slot
// free for another worker; refusal counts and quarantines are persisted with the job's progress
// at once and survive a restart, the norm history goes into checkpoints), and a round whose
// outer step leaves θ or the momentum not finite
// (or whose Δs were all rejected) is rolled back and redone; max_rollbacks in a row fail the
// job. With diloco.screening.trimmed_mean > 0 the Δs are combined by a coordinate-wise
// trimmed mean instead of the average. Val loss every eval_every rounds (estimated in
// the background while the next round runs, and before the job ends), checkpoints every
// checkpoint_every rounds (written in the background too, checkpoint_writer.h; the next outer
// step waits for it) and at the end (before the job completes). Each closed round's RoundRecord goes to the job's
// history (JobManager::RecordRound; its val loss later, RecordValLoss); a resumed job first
// drops the records of the rounds after its checkpoint (they run again).
//
//   PCP_ASSIGN_OR_RETURN(auto run, JobRun::Start(runnable, context));  // slow: builds, resumes
//   run->AddWorker(session);  run->On(event);   // WorkerReady, WorkerResult, ... (worker_event.h)
//   JobRun::Outcome o = run->Advance(now);     // starts / closes rounds; kCompleted at the end
//
// Streaming DiLoCo (diloco.streaming, pcp/diloco/streaming.h): each round is inner_steps / P
// steps and syncs one fragment of θ; workers keep their θ between rounds and get each round's
// StartRound one round ahead, so they train on while the fragment's Δs come in and the outer
// step is applied; the fragment's new values (or encoded update) go to them as the round
// closes, and they merge it overlap_steps steps into the next round. A streaming round that
// would be rolled back is instead skipped (the workers have moved on): counted once as a
// rollback, its fragment and momentum unchanged (the fragment's values go out again), no
// participants in its record, and the data streams of the workers that delivered move on.
//
// The strategies it delegates to, each chosen once from the job: the Δ verdict (screen.h),
// the aggregation rule (aggregator.h), the outer step (outer_step.h); what the world sees of
// a closed round goes through one RoundPublisher (round_publisher.h).
// (job_run_screening.cc holds the refusal bookkeeping and rollbacks; job_run_streaming.cc
// the streaming parts; theta_encoder.h the encoded θ updates and chunked θ;
// job_run_aggregation.cc the choice of aggregation rule; job_run_record.cc the history record.)
#ifndef PCP_SHEPHERD_SRC_JOB_RUN_H_
#define PCP_SHEPHERD_SRC_JOB_RUN_H_

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "aggregator.h"
#include "eval_runner.h"
#include "job_checkpoints.h"
#include "outer_step.h"
#include "pcp/codec/error_feedback.h"
#include "pcp/diloco/async.h"
#include "pcp/diloco/late_join.h"
#include "pcp/diloco/screening.h"
#include "pcp/diloco/slot_takeover.h"
#include "pcp/diloco/streaming.h"
#include "pcp/kernels/backend.h"
#include "pcp/shepherd/checkpoint_store.h"
#include "pcp/shepherd/job_manager.h"
#include "pcp/shepherd/job_program.h"
#include "pcp/shepherd/outer_optimizer.h"
#include "pcp/shepherd/shepherd_config.h"
#include "pcp/training/progress.h"
#include "round_publisher.h"
#include "round_sum.h"
#include "sampling.h"
#include "screen.h"
#include "theta_encoder.h"
#include "worker_event.h"
#include "worker_registry.h"

namespace pcp::shepherd {

using Clock = std::chrono::steady_clock;

struct RunContext {
  const ShepherdConfig* config = nullptr;
  JobManager* jobs = nullptr;
  WorkerRegistry* registry = nullptr;
  // Asks the coordinator to call Advance soon (a background evaluation finished).
  std::function<void()> nudge;
  // Takes θ after the job starts and after every closed round (Admin.Sample reads it), before
  // the round or the job's end is reported to JobManager. Called on the coordinator's thread.
  std::function<void(std::shared_ptr<const ParamsSnapshot>)> publish;
};

class JobRun {
 public:
  enum class Outcome { kRunning, kCompleted, kFailed };

  // Parses the job, loads its data, builds the program, and resumes from the job's latest
  // checkpoint if it has one (else initialises θ from the seed).
  static absl::StatusOr<std::unique_ptr<JobRun>> Start(const RunnableJob& job, RunContext context);

  const std::string& job_id() const { return job_.id; }
  uint32_t workers_in_round() const;

  // A worker's event (worker_event.h): each kind to its handler below.
  void On(WorkerEvent& event);
  void AddWorker(const std::shared_ptr<WorkerSession>& session);
  void RemoveWorker(const std::shared_ptr<WorkerSession>& session);
  void OnReady(const std::shared_ptr<WorkerSession>& session, const v1::AssignmentReady& ready);
  void OnResult(const std::shared_ptr<WorkerSession>& session, uint64_t round, ReceivedDelta delta,
                const v1::RoundResult& result);
  void OnError(const std::shared_ptr<WorkerSession>& session, const v1::Error& error);
  // The worker's θ replica does not match: it is sent θ in full (again, if in the round).
  void OnResync(const std::shared_ptr<WorkerSession>& session, const v1::ResyncRequest& request);

  // Assigns, starts and closes rounds. After kCompleted / kFailed the run is over (the job's
  // state has been recorded; failure() says why).
  Outcome Advance(Clock::time_point now);
  // When Advance should next run even if nothing happens (a deadline or a grace period).
  Clock::time_point NextWakeup() const;
  // Tells every worker to drop the assignment (the job was cancelled or the shepherd stops).
  void Release(const std::string& reason);
  // Writes a checkpoint unless the latest round already has one (shutdown).
  absl::Status CheckpointIfBehind();
  const std::string& failure() const { return failure_; }

 private:
  enum class Phase { kIdle, kAssigning, kReady, kInRound, kFailed, kQuarantined };
  struct Member {
    std::shared_ptr<WorkerSession> session;
    int slot = -1;
    Phase phase = Phase::kIdle;
    Clock::time_point assigned_at;  // when its Assignment went out
    uint64_t theta_round = 0;       // the round whose θ it was last sent (0: none yet)
    // Streaming: the last round whose StartRound it was sent (one ahead of the open round),
    // and the sampler cursor that StartRound carried.
    uint64_t started_round = 0;
    uint64_t started_cursor = 0;
  };
  struct SlotResult {
    std::vector<Tensor> delta;  // buffered aggregation
    v1::RoundResult result;
    std::string supervisor_id;
    double norm = 0;  // Δ's L2 norm (streamed: as declared)
    // Streamed into the round's RoundSum: the verdict it was added (or dropped) with.
    std::optional<diloco::ScreenVerdict> streamed;
  };
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
    // For the round's history record (RoundRecord).
    int64_t start_unix_ms = 0;
    std::set<std::string> sent_to;                                 // supervisor ids
    std::vector<std::pair<std::string, std::string>> refused_ids;  // rejected Δs: supervisor id, reason
    bool skipped = false;  // streaming: rolled back, so none of its Δs went into θ
    // Data follows the work (job_run_takeover.cc): the slots a worker held as the round
    // started, and those a free worker was given to train in it.
    std::set<int> held_at_start;
    std::set<int> taken_over;
  };

  JobRun(RunnableJob job, RunContext context)
      : job_(std::move(job)), ctx_(context), checkpoints_(job_.id, job_.dir, ctx_.jobs) {}
  absl::Status Prepare();
  Member* Find(const std::shared_ptr<WorkerSession>& session);
  int ClaimSlot(const std::string& supervisor_id);
  void Assign(Member& m);
  void StartRound(const std::vector<Member*>& members);
  void SendRound(Member& m);
  // θ of round `r` to m: the update from the θ it holds when that is round r - 1's (encoded
  // and chunked once per round for every stream), else θ in full. False: the session closed.
  bool SendTheta(Member& m, uint64_t r);
  // Sends StartRound `round` with the slot's sampler state from `cursor`; crc 0 = unchecked.
  // The inner learning rates are those of round `schedule_round` (0: `round`).
  void SendStart(Member& m, uint64_t round, uint64_t cursor, uint32_t theta_crc, uint64_t schedule_round = 0);
  // The job's aggregation rule, chosen once (aggregator.h; job_run_aggregation.cc).
  void ChooseAggregation();
  // Tells the worker to expect round `round`'s result: its Δ specs, codec and, with a
  // streamable rule, the round's sink (Aggregator::SinkFor).
  void ExpectResultOf(WorkerSession& s, uint64_t round);
  // Sends the open round to ready workers whose slot has no part in it yet: when the round
  // needs them to reach min_workers, or when joining late is worth it (pcp/diloco/late_join.h:
  // a worker restarted after a crash takes part in the round it was killed in).
  void JoinLate(const std::vector<Member*>& ready, Clock::time_point now);
  // Closes the open round: screening, aggregation, the outer step, θ; then Conclude.
  Outcome CloseRound(Clock::time_point now);
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
  // What follows a closed round: the publisher (metrics, progress, history), evaluation, θ's
  // snapshot, checkpoints, and the next round or the job's end.
  Outcome Conclude(const RoundSummary& summary);
  // ---- Streaming DiLoCo (job_run_streaming.cc; pcp/diloco/streaming.h)
  bool streaming() const { return fragments_.has_value(); }
  // The fragment plan (the outer step per fragment is outer_step.h's).
  absl::Status PrepareStreaming();
  // Round r's StartRound (with θ in full first if the worker's replica is not θ for round r),
  // unless it was sent ahead, and StartRound r + 1 ahead.
  void SendStreamingRound(Member& m);
  // Sends round r's fragment (its update, or its values) to every worker whose replica is θ for
  // round r: their θ for round r + 1.
  void SendFragment(uint64_t r);
  // Results of the round about to open that came before it opened (a worker sent it ahead),
  // taken once it has.
  void TakeEarlyResults();
  // Counts a refused Δ of worker `id` (log, metric, event, progress); quarantines the worker
  // at the job's limit.
  void Refuse(const std::string& id, uint64_t round, const diloco::ScreenVerdict& verdict);
  void Quarantine(const std::string& id, uint64_t round);
  // A resumed job takes back its refusal counts, quarantines and screening totals from its
  // last persisted progress.
  void RestoreScreening(const v1::JobProgress& stored);
  // Discards the open round (θ and momentum unchanged); fails the job after max_rollbacks in
  // a row.
  Outcome RollBack(uint64_t round, const std::string& why);
  // RollBack's bookkeeping (log, event, progress); the job's failure at max_rollbacks in a row.
  // A streaming round is not redone (its workers have moved on): its fragment stays unchanged
  // and the caller closes it as skipped (Round::skipped).
  std::optional<Outcome> CountRollBack(uint64_t round, const std::string& why);
  // Slots whose owner is not quarantined: a round with that many ready workers starts at once.
  size_t ActiveSlots() const;
  // ---- Asynchronous DiLoCo (job_run_async.cc; pcp/diloco/async.h)
  bool async() const { return prepared_->config.diloco.mode == diloco::RoundMode::kAsync; }
  // Δs the job uses in all (diloco.rounds × diloco.workers: the synchronous job's tokens), and
  // so far (the slots' rounds_done).
  uint64_t AsyncTasksTotal() const;
  uint64_t AsyncTasksUsed() const;
  // Applies a group of Δs when it is due, and sends every ready worker its next task from the
  // newest θ.
  Outcome AdvanceAsync(Clock::time_point now);
  void SendAsyncTask(Member& m);
  void OnAsyncResult(Member& m, uint64_t round, ReceivedDelta delta, const v1::RoundResult& result);
  // The group of Δs in: screened, scaled for staleness, averaged and applied; then Conclude.
  Outcome ApplyAsyncGroup(Clock::time_point now);
  // A worker's task is dropped (it left, or asked for θ in full: sent its task again).
  void DropAsyncTask(WorkerSession* key);
  Clock::time_point AsyncWakeup(Clock::time_point fallback) const;
  struct Flight {  // a worker's task in flight
    WorkerSession* key = nullptr;
    uint64_t round = 0;  // as sent: θ after round - 1 outer updates
    uint64_t start_cursor = 0;
    Clock::time_point sent_at;
  };
  struct Arrival {  // a Δ in, not applied yet
    int slot = -1;
    uint64_t round = 0;
    SlotResult res;
  };
  std::map<int, Flight> flights_;        // slot -> its task in flight
  std::vector<Arrival> arrivals_;        // in arrival order
  std::map<int, uint64_t> next_cursor_;  // slot -> where its next task's batches start
  Clock::time_point quorum_since_{};     // when the waiting group reached its quorum
  Clock::time_point last_update_{};      // the last outer update (a group's "round" time)
  int64_t last_update_unix_ms_ = 0;
  bool eval_due_ = false;  // async: evaluate after this update (a round's tokens)

  // ---- Data follows the work (job_run_takeover.cc; pcp/diloco/slot_takeover.h)
  // diloco.orphan_slots: takeover, in a synchronous round that is not streamed.
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

  // The history record of the round being closed (train loss, tokens and θ already updated;
  // the publisher adds the training-stream bytes).
  v1::RoundRecord RecordOf(const Round& round, uint64_t tokens, double round_s, double outer_step_s) const;
  // Takes a finished validation estimate into the job's progress; false if it failed.
  bool ApplyEval(const EvalRunner::Result& result);
  // Writes a checkpoint of the current round (job_checkpoints.h); with `wait`, returns when it
  // is on disk (its error, if any), else at once.
  absl::Status WriteCheckpoint(bool wait);
  void Publish(bool final);
  Outcome Fail(const std::string& why);
  // Sync: diloco.rounds. Async: the outer updates planned, ⌈rounds × workers / quorum⌉ (a
  // group with more Δs than the quorum makes it end sooner).
  uint64_t total_rounds() const {
    const DiLoCoConfig& d = prepared_->config.diloco;
    if (d.mode != diloco::RoundMode::kAsync) return static_cast<uint64_t>(d.rounds);
    return static_cast<uint64_t>((d.rounds * d.workers + d.async.quorum - 1) / d.async.quorum);
  }

  RunnableJob job_;
  RunContext ctx_;
  std::unique_ptr<PreparedJob> prepared_;
  std::vector<Tensor> theta_;
  uint32_t theta_crc_ = 0;  // ListCrc32c(theta_), sent in StartRound
  // θ as the streams send it: in full, or the encoded update (diloco.compression.down).
  std::unique_ptr<ThetaEncoder> theta_encoder_;
  // Streaming: the fragment plan (theta_encoder_ points into it).
  std::optional<diloco::FragmentPlan> fragments_;
  struct EarlyResult {
    std::weak_ptr<WorkerSession> session;
    uint64_t round = 0;
    ReceivedDelta delta;
    v1::RoundResult result;
  };
  std::vector<EarlyResult> early_results_;
  // The outer step: on the whole θ, or per fragment with Streaming DiLoCo.
  std::unique_ptr<OuterStep> outer_step_;
  std::unique_ptr<diloco::DeltaScreen> screen_;
  // How each round's Δs are combined (diloco.aggregation, diloco.screening.trimmed_mean;
  // chosen once per job).
  std::unique_ptr<Aggregator> aggregator_;
  std::unique_ptr<diloco::RefusalLedger> refusals_;
  int64_t rollbacks_in_a_row_ = 0;
  diloco::RoundTimeEstimate round_time_;  // per-worker round times, for late joins
  RunState state_;
  std::unique_ptr<EvalRunner> eval_;
  std::map<WorkerSession*, Member> members_;
  std::map<int, ShardPlan> shards_;
  std::optional<Round> round_;
  Clock::time_point waiting_since_;
  bool closed_a_round_ = false;                    // this run has closed a round: a short job waits no more grace...
  std::map<int, Clock::time_point> slot_left_at_;  // ...except for a worker that just left (slot -> when)
  Clock::time_point started_;
  // Metrics, progress and history of the closed rounds.
  std::unique_ptr<RoundPublisher> publisher_;
  std::string failure_;
  // Last: destroyed first, it finishes a write in flight while the rest is intact.
  JobCheckpoints checkpoints_;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_JOB_RUN_H_
