// Private: what the simulated workers saw of each round, from their side, shared by all of
// them (pcp-loadgen): when the round's first θ chunk arrived at any of them, when the last of
// them finished sending its Δ, how many sent one, how many streams were dropped on purpose;
// and the bytes received and sent by all streams together.
//
//   timeline.ThetaArrived(7, now);        // keeps the earliest
//   timeline.DeltaSent(7, now);           // keeps the latest, counts senders
//   RoundTimeline::Marks m = timeline.Get(7);
#ifndef PCP_LOADGEN_SRC_ROUND_TIMELINE_H_
#define PCP_LOADGEN_SRC_ROUND_TIMELINE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

namespace pcp::loadgen {

class RoundTimeline {
 public:
  using Clock = std::chrono::steady_clock;

  struct Marks {
    std::optional<Clock::time_point> first_theta;
    // bytes_in / bytes_out when the first θ chunk arrived (before it was counted).
    int64_t in_at_theta = 0, out_at_theta = 0;
    std::optional<Clock::time_point> last_delta_sent;
    int64_t sent = 0;
    int64_t drops = 0;
  };

  void ThetaArrived(uint64_t round, Clock::time_point t) {
    std::lock_guard<std::mutex> lock(mu_);
    Marks& m = rounds_[round];
    if (!m.first_theta) {
      m.in_at_theta = bytes_in.load();
      m.out_at_theta = bytes_out.load();
    }
    if (!m.first_theta || t < *m.first_theta) m.first_theta = t;
  }
  void DeltaSent(uint64_t round, Clock::time_point t) {
    std::lock_guard<std::mutex> lock(mu_);
    Marks& m = rounds_[round];
    if (!m.last_delta_sent || t > *m.last_delta_sent) m.last_delta_sent = t;
    ++m.sent;
  }
  void Dropped(uint64_t round) {
    std::lock_guard<std::mutex> lock(mu_);
    ++rounds_[round].drops;
  }
  Marks Get(uint64_t round) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = rounds_.find(round);
    return it == rounds_.end() ? Marks{} : it->second;
  }
  // The highest round whose θ has started to arrive; 0 = none yet.
  uint64_t LatestThetaRound() const {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = rounds_.rbegin(); it != rounds_.rend(); ++it) {
      if (it->second.first_theta) return it->first;
    }
    return 0;
  }

  std::atomic<int64_t> bytes_in{0};
  std::atomic<int64_t> bytes_out{0};

 private:
  mutable std::mutex mu_;
  std::map<uint64_t, Marks> rounds_;
};

}  // namespace pcp::loadgen

#endif  // PCP_LOADGEN_SRC_ROUND_TIMELINE_H_
