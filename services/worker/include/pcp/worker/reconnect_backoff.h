// Delays between a worker's attempts to reach the shepherd: exponential backoff with full
// jitter range [1 - jitter, 1 + jitter], capped, reset after a successful join.
//
//   ReconnectBackoff backoff({.initial_ms = 500, .max_ms = 10000});
//   std::chrono::milliseconds wait = backoff.Next();   // ~0.5 s, ~1 s, ~2 s, ... <= 10 s
//   backoff.Reset();                                   // joined: back to ~0.5 s
//
// (The supervisor restarts worker processes with its own policy, pcp/supervisor/backoff.h;
// this one is the worker's, for its connection.)
#ifndef PCP_WORKER_RECONNECT_BACKOFF_H_
#define PCP_WORKER_RECONNECT_BACKOFF_H_

#include <chrono>
#include <cstdint>
#include <random>

namespace pcp::worker {

struct BackoffPolicy {
  int64_t initial_ms = 500;  // > 0
  double multiplier = 2.0;   // >= 1
  int64_t max_ms = 10000;    // >= initial_ms
  double jitter = 0.2;       // [0, 1)
};

class ReconnectBackoff {
 public:
  explicit ReconnectBackoff(BackoffPolicy policy, uint64_t seed = std::random_device{}())
      : policy_(policy), rng_(seed) {}

  // min(initial * multiplier^n, max) * U[1 - jitter, 1 + jitter], never above max.
  std::chrono::milliseconds Next();
  void Reset() { attempt_ = 0; }
  int attempt() const { return attempt_; }

 private:
  BackoffPolicy policy_;
  int attempt_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace pcp::worker

#endif  // PCP_WORKER_RECONNECT_BACKOFF_H_
