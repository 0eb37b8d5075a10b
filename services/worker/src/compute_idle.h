// Private: how long the worker's compute sat idle between rounds, waiting on the network
// (sending Δ, receiving θ, waiting for StartRound): pcp_worker_network_wait_seconds and
// RoundResult.network_wait_ms.
//
//   ComputeIdle idle;                                        // one per assignment
//   std::optional<double> wait_s = idle.MarkComputeStart(Clock::now());   // before the steps
//   ...run the round's inner steps...
//   idle.MarkComputeEnd(Clock::now());                       // after the last step
//   // next round: MarkComputeStart gives the seconds since that MarkComputeEnd
//
// MarkComputeStart gives nothing for the first round, after Reset (a new assignment), or
// when no MarkComputeEnd came since the last start. Not thread-safe.
#ifndef PCP_WORKER_SRC_COMPUTE_IDLE_H_
#define PCP_WORKER_SRC_COMPUTE_IDLE_H_

#include <chrono>
#include <optional>

namespace pcp::worker {

class ComputeIdle {
 public:
  using Clock = std::chrono::steady_clock;

  // Compute stopped at `now` (a round's last inner step is done, or the round ended early).
  void MarkComputeEnd(Clock::time_point now) { last_end_ = now; }
  // Compute starts at `now`: the seconds (>= 0) since the last MarkComputeEnd, which is used
  // up; nothing if there was none.
  std::optional<double> MarkComputeStart(Clock::time_point now);
  // Forgets the last end: the next start is a first one.
  void Reset() { last_end_.reset(); }

 private:
  std::optional<Clock::time_point> last_end_;
};

}  // namespace pcp::worker

#endif  // PCP_WORKER_SRC_COMPUTE_IDLE_H_
