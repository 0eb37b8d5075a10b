// Late joins: whether a worker that becomes ready while a round is open (a restarted worker
// back after a crash, a newcomer) should be sent that round now, or wait for the next one.
//
// Joining late delays the round's close: the round then waits for the joiner's τ steps, and
// the workers already in it stand idle meanwhile. It is worth it when the joiner's Δ adds
// more work than the idle time costs, i.e. when
//     others × delay < T,
// with T the time a worker takes for a round (θ down, τ steps, Δ up), `others` the workers
// whose Δ the round gets anyway (running or delivered), and delay = min(elapsed, T) how much
// later than them the joiner finishes. For 2 workers (others = 1) any round still in progress
// qualifies; with 8 the joiner must come within T/7 of the start. The joiner must also be
// able to finish before the round's deadline. Without an estimate of T (no round measured
// yet) nobody joins late.
//
//   RoundTimeEstimate estimate;                      // fed with each delivered round's time
//   estimate.Add(seconds_from_round_sent_to_delta_received);
//   if (WorthJoiningLate({.elapsed_s = 3, .round_s = estimate.Get(), .others = 1,
//                         .until_deadline_s = 590})) { ...send it the round... }
#ifndef PCP_DILOCO_LATE_JOIN_H_
#define PCP_DILOCO_LATE_JOIN_H_

#include <cstddef>
#include <deque>
#include <optional>

namespace pcp::diloco {

struct LateJoinQuestion {
  double elapsed_s = 0;           // since the round started
  std::optional<double> round_s;  // a worker's time for one round (RoundTimeEstimate)
  size_t others = 0;              // workers whose Δ the round gets anyway
  double until_deadline_s = 0;    // until the round's deadline
};

// True when the worker should join the open round now (see the rule above).
bool WorthJoiningLate(const LateJoinQuestion& q);

// The median of the last kRoundTimeSamples per-worker round times, in seconds.
class RoundTimeEstimate {
 public:
  static constexpr size_t kRoundTimeSamples = 8;
  // A worker's round took `seconds` (from the round sent to its Δ received); ignored unless
  // finite and positive.
  void Add(double seconds);
  // nullopt before the first sample.
  std::optional<double> Get() const;

 private:
  std::deque<double> samples_;
};

}  // namespace pcp::diloco

#endif  // PCP_DILOCO_LATE_JOIN_H_
