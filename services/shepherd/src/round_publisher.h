// Private: what the world sees of a job's rounds. JobRun hands each closed round's
// RoundSummary to the one RoundPublisher, which turns it into the job's metrics series
// (pcp/metrics/names.h), its progress (JobManager::ReportProgress, Admin.GetJob), its history
// record (JobManager::RecordRound) and the round's log line. The checkpoints stay with JobRun
// (they hold θ and the momentum); the publisher only counts their metrics via JobManager.
//
//   RoundPublisher pub(job_id, jobs, total_rounds, inner_steps, state);  // the job's series exist now
//   pub.progress().set_deltas_refused(...);                                // screening's bookkeeping
//   pub.Closed(RoundSummary{.round = r, ...}, state);                      // state already counts round r
//   pub.ValLoss(r, 1.8115, seconds);
//   pub.Report();                                                          // persists the progress
//
// Coordinator thread only.
#ifndef PCP_SHEPHERD_SRC_ROUND_PUBLISHER_H_
#define PCP_SHEPHERD_SRC_ROUND_PUBLISHER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pcp/shepherd/checkpoint_store.h"
#include "pcp/shepherd/job_manager.h"
#include "pcp/training/progress.h"
#include "pcp/v1/admin.pb.h"

namespace pcp::shepherd {

// One outer update (a closed round, or an asynchronous group), as its RoundSchedule leaves it.
struct RoundSummary {
  uint64_t round = 0;
  bool last = false;                 // the job's last round
  uint64_t tokens = 0;               // processed by the Δs that went into θ
  double round_s = 0;                // from its start to its close, seconds
  double outer_step_s = 0;           // the outer step (with θ's encoding), seconds
  std::vector<std::string> workers;  // supervisor ids whose Δs went into θ
  // Its history record (JobRun::RecordOf); the publisher fills in the training-stream bytes.
  v1::RoundRecord record;
};

class RoundPublisher {
 public:
  // A job of `total_rounds` rounds of up to `inner_steps` steps starting from `state` (a
  // resumed job's checkpoint, else the empty state): its progress and metrics series start
  // from there.
  RoundPublisher(std::string job_id, JobManager* jobs, uint64_t total_rounds, uint64_t inner_steps,
                 const RunState& state);

  // Round `summary.round` closed; `state` already counts it (round, tokens, train loss).
  void Closed(const RoundSummary& summary, const RunState& state);
  // A validation estimate of round `round`'s θ, taken `seconds` to compute.
  void ValLoss(uint64_t round, double val_loss, double seconds);
  // Persists the job's progress.
  void Report();

  // The job's progress, for the bookkeeping that adds to it (refusals, rollbacks).
  v1::JobProgress& progress() { return progress_; }

 private:
  const std::string job_id_;
  JobManager* const jobs_;
  const uint64_t total_rounds_;
  ProgressMeter meter_;
  v1::JobProgress progress_;
  // The training-stream byte counters when the last round closed (or the job started): the
  // next round's record counts from there (a streaming worker's Δ may come before its round
  // opens).
  double bytes_sent_mark_ = 0, bytes_received_mark_ = 0;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_ROUND_PUBLISHER_H_
