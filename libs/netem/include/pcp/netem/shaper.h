// One direction of an emulated link, as bookkeeping only (no sockets, no clock of its own, so
// tests drive it with made-up times): a delay line followed by a token bucket.
//
//   - Delay line: bytes that arrive at time t may leave no earlier than t + delay (the
//     one-way propagation delay; RTT/2 for a symmetric link).
//   - Token bucket: leaving bytes spend tokens, which refill at rate_bytes_per_s up to
//     burst_bytes (the bucket starts full). This paces the link at the rate over any stretch
//     longer than burst / rate.
//
// The relay (pcp/netem/relay.h) keeps the bytes themselves in FIFO order; the shaper keeps
// their counts and arrival times and says how many of the oldest ones may be written now.
//
//   Shaper up({.rate_bytes_per_s = 1.25e6, .delay = std::chrono::milliseconds(25)}, now);
//   up.Arrive(n, now);                          // n bytes read from the sender at `now`
//   if (size_t k = up.Sendable(now); k > 0) {   // the oldest k bytes may be written now
//     up.Sent(written);                         // written <= k actually went out
//   }
//   std::optional<Clock::time_point> wake = up.NextChange(now);  // when to ask again
#ifndef PCP_NETEM_SHAPER_H_
#define PCP_NETEM_SHAPER_H_

#include <chrono>
#include <cstddef>
#include <deque>
#include <optional>

namespace pcp::netem {

using Clock = std::chrono::steady_clock;

// The shape of one direction. All zero = a plain pipe.
struct LinkShape {
  double rate_bytes_per_s = 0;  // 0 = unlimited
  Clock::duration delay{};      // one way, added to every byte
  size_t burst_bytes = 0;       // bucket size; 0 = DefaultBurstBytes(rate)
};

// max(16 KiB, 5 ms of the rate): small enough that the rate holds over tens of milliseconds,
// large enough for a TCP segment train.
size_t DefaultBurstBytes(double rate_bytes_per_s);

// How many bytes the relay holds in flight for one direction before it stops reading from
// the sender (who then feels back-pressure through TCP): two bandwidth-delay products plus a
// burst, at least 1 MiB; 16 MiB for an unlimited rate.
size_t BufferBytes(const LinkShape& shape);

class Shaper {
 public:
  Shaper(const LinkShape& shape, Clock::time_point now);

  // `n` bytes arrived at `now` (times never go backwards).
  void Arrive(size_t n, Clock::time_point now);
  // How many of the oldest pending bytes may be written at `now`: 0 until at least
  // min(ready bytes, one write quantum) are both past their delay and covered by tokens, so
  // the relay writes in chunks of at least ~1 ms of the rate (or 1500 bytes), not byte by byte.
  size_t Sendable(Clock::time_point now);
  // `n` bytes, at most the last Sendable(), were written.
  void Sent(size_t n);
  // When Sendable() may next become non-zero; nullopt when nothing is pending or bytes are
  // sendable right now.
  std::optional<Clock::time_point> NextChange(Clock::time_point now);

  size_t pending() const { return pending_; }  // arrived and not yet sent
  const LinkShape& shape() const { return shape_; }

 private:
  struct Batch {
    Clock::time_point ready;  // arrival + delay
    size_t bytes;
  };
  void Refill(Clock::time_point now);
  // Bytes past their delay at `now`; extends the known-ready prefix of batches_.
  size_t ReadyBytes(Clock::time_point now);
  size_t Threshold(size_t ready) const;

  LinkShape shape_;
  double quantum_ = 0;  // smallest write worth waking up for, bytes
  std::deque<Batch> batches_;
  size_t pending_ = 0;
  size_t ready_batches_ = 0;  // batches_[0, ready_batches_) are past their delay
  size_t ready_bytes_ = 0;    // their bytes
  double tokens_ = 0;
  Clock::time_point refilled_;
};

}  // namespace pcp::netem

#endif  // PCP_NETEM_SHAPER_H_
