// A small fork-join pool for the CPU backend: the calling thread plus `threads - 1` workers.
// Inside a SpinScope (one Executable::Run) idle workers spin for a while (200 us) before
// they sleep, so back-to-back parallel loops start in well under a microsecond; outside it
// they sleep on a futex and cost nothing. The caller never waits for a worker that has not
// started: it runs whatever units are left itself. A worker descheduled in the middle of a
// unit (a machine with more runnable threads than cores) does hold the caller up; after
// that the pool runs loops on the caller alone for a while, backing off exponentially.
//
//   ThreadPool pool(2);
//   ThreadPool::SpinScope spin(pool);
//   pool.ParallelFor(units, [&](int64_t unit, int thread) { ... });
//
// Each unit is run exactly once, by some thread; `thread` (in [0, num_threads())) indexes
// per-thread scratch. Units must not depend on which thread runs them, which keeps results
// identical for every thread count.
//
// The caller claims units from the bottom (0, 1, ...) and the workers from the top
// (num_units - 1, ...), until they meet. Kernels cut their work into units in storage order
// (row blocks, batch elements), so with two threads the caller computes the first part of
// each kernel's rows and the worker the last part, loop after loop: what one kernel writes,
// the next one mostly reads on the same core, from its L2, instead of from the other core's
// cache or from L3 (claiming in one order, each thread got every other unit, by chance).
#ifndef PCP_KERNELS_CPU_THREAD_POOL_H_
#define PCP_KERNELS_CPU_THREAD_POOL_H_

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"

namespace pcp::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(unit, thread) for every unit in [0, num_units) and returns when all are done.
  // Not reentrant: fn must not call ParallelFor. One caller at a time.
  void ParallelFor(int64_t num_units, absl::FunctionRef<void(int64_t, int)> fn);

  class SpinScope {
   public:
    explicit SpinScope(ThreadPool& pool);
    ~SpinScope();
    SpinScope(const SpinScope&) = delete;
    SpinScope& operator=(const SpinScope&) = delete;

   private:
    ThreadPool& pool_;
  };

 private:
  // The current job in one word, so that a worker can never claim a unit of a job other
  // than the one whose function it read: job id (20 bits) | end (22) | next unit (22); the
  // units in [next, end) are unclaimed.
  static constexpr int kUnitBits = 22;
  static constexpr uint64_t kUnitMask = (uint64_t{1} << kUnitBits) - 1;
  static constexpr int64_t kMaxUnits = int64_t{1} << kUnitBits;

  void WorkerLoop(int thread);
  // Claims and runs units of the current job until none is left.
  void RunUnits(int thread);
  void Signal();

  std::vector<std::thread> workers_;
  uint64_t job_ = 0;      // the caller's job counter
  int backoff_ = 0;       // loops to run inline after the next slow wait for a worker
  int inline_loops_ = 0;  // loops still to run inline
  std::atomic<const absl::FunctionRef<void(int64_t, int)>*> fn_{nullptr};
  alignas(64) std::atomic<uint64_t> work_{0};
  alignas(64) std::atomic<int64_t> done_{0};     // units of the current job finished
  alignas(64) std::atomic<uint32_t> signal_{0};  // futex word: bumped on every job, spin change and stop
  std::atomic<int> sleepers_{0};
  std::atomic<bool> spinning_{false};
  std::atomic<bool> stop_{false};
};

}  // namespace pcp::cpu

#endif  // PCP_KERNELS_CPU_THREAD_POOL_H_
