// Private: the one running job's life cycle. Single-threaded: the coordinator's thread calls
// every method.
//
// Workers get a slot (0..workers-1; a supervisor id keeps its slot across reconnects, so its
// shard and data stream stay its own) and an Assignment (program sent once per hash, shard
// inline or as a shared path). How their Δs become outer updates is the job's RoundSchedule
// (round_schedule.h: synchronous rounds, Streaming DiLoCo, asynchronous groups), which uses
// the run through RoundHost (round_host.h). The run keeps θ and the strategies every schedule
// shares, each chosen once from the job: the Δ verdict (screen.h) and its bookkeeping (a
// worker refused diloco.screening.quarantine_after times is quarantined: no more tasks in this
// job, its slot free for another worker; refusal counts and quarantines are persisted with the
// job's progress at once and survive a restart, the norm history goes into checkpoints;
// max_rollbacks rolled-back updates in a row fail the job), the aggregation rule
// (aggregator.h), the outer step (outer_step.h) and θ's encoding for the streams
// (theta_encoder.h). After each update (Conclude): what the world sees goes through one
// RoundPublisher (round_publisher.h: metrics, progress, history); val loss every eval_every
// rounds (estimated in the background while the next round runs, and before the job ends);
// checkpoints every checkpoint_every rounds (written in the background, checkpoint_writer.h;
// the next outer step waits for it) and at the end (before the job completes). A resumed job
// first drops the history records of the rounds after its checkpoint (they run again).
//
//   PCP_ASSIGN_OR_RETURN(auto run, JobRun::Start(runnable, context));  // slow: builds, resumes
//   run->On(event);                            // WorkerJoined, WorkerResult, ... (worker_event.h)
//   JobRun::Outcome o = run->Advance(now);     // starts / closes rounds; kCompleted at the end
//
// (job_run_screening.cc holds the refusal bookkeeping; job_run_aggregation.cc the choice of
// aggregation rule; job_run_record.cc the history record; job_run_checkpoint.cc checkpoints.)
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
#include "pcp/diloco/late_join.h"
#include "pcp/diloco/screening.h"
#include "pcp/diloco/streaming.h"
#include "pcp/kernels/backend.h"
#include "pcp/shepherd/checkpoint_store.h"
#include "pcp/shepherd/job_manager.h"
#include "pcp/shepherd/job_program.h"
#include "pcp/shepherd/outer_optimizer.h"
#include "pcp/shepherd/shepherd_config.h"
#include "pcp/training/progress.h"
#include "round_host.h"
#include "round_publisher.h"
#include "round_schedule.h"
#include "sampling.h"
#include "screen.h"
#include "theta_encoder.h"
#include "worker_event.h"
#include "worker_registry.h"

namespace pcp::shepherd {

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

class JobRun final : private RoundHost {
 public:
  using Outcome = RunOutcome;

  // Parses the job, loads its data, builds the program, and resumes from the job's latest
  // checkpoint if it has one (else initialises θ from the seed).
  static absl::StatusOr<std::unique_ptr<JobRun>> Start(const RunnableJob& job, RunContext context);

  const std::string& job_id() const override { return job_.id; }
  uint32_t workers_in_round() const { return schedule_->WorkersInRound(); }

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

  // Assigns free slots, takes finished evaluations, and lets the schedule start and close
  // rounds. After kCompleted / kFailed the run is over (the job's state has been recorded;
  // failure() says why).
  Outcome Advance(Clock::time_point now) override;
  // When Advance should next run even if nothing happens (a deadline or a grace period).
  Clock::time_point NextWakeup() const { return schedule_->NextWakeup(); }
  // Tells every worker to drop the assignment (the job was cancelled or the shepherd stops).
  void Release(const std::string& reason);
  // Writes a checkpoint unless the latest round already has one (shutdown).
  absl::Status CheckpointIfBehind();
  const std::string& failure() const { return failure_; }

 private:
  JobRun(RunnableJob job, RunContext context)
      : job_(std::move(job)), ctx_(context), checkpoints_(job_.id, job_.dir, ctx_.jobs) {}
  absl::Status Prepare();
  // Streaming DiLoCo's fragment plan (pcp/diloco/streaming.h), which θ's encoding, the outer
  // step and the schedule share.
  absl::Status PrepareStreaming();
  Member* Find(const std::shared_ptr<WorkerSession>& session);
  int ClaimSlot(const std::string& supervisor_id);
  // The job's aggregation rule, chosen once (aggregator.h; job_run_aggregation.cc).
  void ChooseAggregation();
  void Quarantine(const std::string& id, uint64_t round);
  // A resumed job takes back its refusal counts, quarantines and screening totals from its
  // last persisted progress.
  void RestoreScreening(const v1::JobProgress& stored);
  // Takes a finished validation estimate into the job's progress; false if it failed.
  bool ApplyEval(const EvalRunner::Result& result);
  // Writes a checkpoint of the current round (job_checkpoints.h); with `wait`, returns when it
  // is on disk (its error, if any), else at once.
  absl::Status WriteCheckpoint(bool wait);
  void Publish(bool final);
  // Whether `m` draws θ₀ rather than receiving it: θ is θ₀, the worker can (it declared
  // WORKER_FEATURE_THETA_FROM_INIT) and its draw never mismatched.
  bool DrawsInit(const Member& m) const {
    return theta_is_init_ && !m.init_refused && m.session->HasFeature(v1::WORKER_FEATURE_THETA_FROM_INIT);
  }

  // ---- RoundHost (round_host.h), for the schedule
  const JobConfig& config() const override { return prepared_->config; }
  RunState& state() override { return state_; }
  Members& members() override { return members_; }
  WorkerRegistry& registry() override { return *ctx_.registry; }
  Clock::duration start_grace() const override;
  bool quarantined(const std::string& supervisor_id) const override { return refusals_->quarantined(supervisor_id); }
  diloco::RoundTimeEstimate& round_time() override { return round_time_; }
  void Assign(Member& m) override;
  uint32_t theta_crc() const override { return theta_crc_; }
  ThetaEncoder& theta_encoder() override { return *theta_encoder_; }
  const std::vector<Tensor>& theta() const override { return theta_; }
  void ExpectResultOf(WorkerSession& s, uint64_t round) override;
  bool SendTheta(Member& m, uint64_t r) override;
  void SendStart(Member& m, uint64_t round, uint64_t cursor, uint32_t theta_crc, uint64_t schedule_round) override;
  diloco::DeltaScreen& screen() override { return *screen_; }
  Aggregator& aggregator() override { return *aggregator_; }
  void Refuse(const std::string& id, uint64_t round, const diloco::ScreenVerdict& verdict, Round* record) override;
  std::optional<Outcome> CountRollBack(uint64_t round, const std::string& why) override;
  absl::StatusOr<bool> StepTheta(uint64_t r, double share) override;
  void EndUpdate(uint64_t r, const std::vector<double>& accepted_norms) override;
  v1::RoundRecord RecordOf(const Round& round, uint64_t tokens, double round_s, double outer_step_s) const override;
  Outcome Conclude(const RoundSummary& summary) override;
  Outcome Fail(const std::string& why) override;

  RunnableJob job_;
  RunContext ctx_;
  std::unique_ptr<PreparedJob> prepared_;
  std::vector<Tensor> theta_;
  uint32_t theta_crc_ = 0;  // ListCrc32c(theta_), sent in StartRound
  // theta_ is θ₀ drawn from prepared_->program.init_recipe (a fresh job, until its first outer
  // step): workers draw it themselves (Assignment.init) instead of receiving it.
  bool theta_is_init_ = false;
  // θ as the streams send it: in full, or the encoded update (diloco.compression.down).
  std::unique_ptr<ThetaEncoder> theta_encoder_;
  // Streaming: the fragment plan (theta_encoder_, outer_step_ and schedule_ point into it).
  std::optional<diloco::FragmentPlan> fragments_;
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
  Members members_;
  std::map<int, ShardPlan> shards_;
  // How the workers' Δs become outer updates (round_schedule.h).
  std::unique_ptr<RoundSchedule> schedule_;
  Clock::time_point started_;
  // Metrics, progress and history of the closed rounds.
  std::unique_ptr<RoundPublisher> publisher_;
  std::string failure_;
  // Last: destroyed first, it finishes a write in flight while the rest is intact.
  JobCheckpoints checkpoints_;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_JOB_RUN_H_
