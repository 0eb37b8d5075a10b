// Exponential backoff with jitter, for restarting a worker process and for reconnecting to
// the shepherd.
//
//   Backoff backoff({.initial = absl::Seconds(1), .multiplier = 2, .max = absl::Seconds(30),
//                    .jitter = 0.2});
//   absl::Duration wait = backoff.Next();   // ~1 s, then ~2 s, ~4 s, ... capped at 30 s
//   ...
//   backoff.Reset();                        // after a healthy period: back to ~1 s
//
// The n-th delay (n = 0, 1, ...) is min(initial * multiplier^n, max) scaled by a random
// factor drawn uniformly from [1 - jitter, 1 + jitter], and never more than max. Jitter
// keeps many supervisors that lost the shepherd at once from all reconnecting in the same
// instant. Not thread-safe: each user owns its own Backoff.
#ifndef PCP_BASE_BACKOFF_H_
#define PCP_BASE_BACKOFF_H_

#include <cstdint>
#include <random>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace pcp {

struct BackoffOptions {
  absl::Duration initial = absl::Seconds(1);  // first delay, > 0
  double multiplier = 2.0;                    // growth per attempt, >= 1
  absl::Duration max = absl::Seconds(30);     // cap, >= initial
  double jitter = 0.2;                        // relative spread, in [0, 1)
};

// INVALID_ARGUMENT naming the offending field (prefixed by `what`, e.g. "worker_backoff")
// when the options are out of range.
[[nodiscard]] absl::Status ValidateBackoffOptions(const BackoffOptions& options, absl::string_view what);

class Backoff {
 public:
  // `seed` makes the jitter reproducible in tests; 0 seeds from std::random_device.
  explicit Backoff(BackoffOptions options, uint64_t seed = 0);

  // The delay before the next attempt; each call advances to the next, larger delay.
  absl::Duration Next();
  // Back to the initial delay (after a success or a healthy period).
  void Reset() { attempt_ = 0; }
  // Attempts since the last Reset.
  int attempt() const { return attempt_; }
  const BackoffOptions& options() const { return options_; }

 private:
  BackoffOptions options_;
  int attempt_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace pcp

#endif  // PCP_BASE_BACKOFF_H_
