#include "thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PCP_CPU_RELAX() _mm_pause()
#else
#define PCP_CPU_RELAX() std::this_thread::yield()
#endif

namespace pcp::cpu {
namespace {

// How long an idle worker spins inside a SpinScope before it sleeps: longer than the gap
// between two parallel kernels, shorter than anything worth a core. After kPoliteSpin it
// yields between polls, so a thread of ours (or anyone's) waiting for the core gets it.
constexpr std::chrono::microseconds kPoliteSpin(50);
constexpr std::chrono::microseconds kMaxIdleSpin(200);
// A wait for a worker this long, and longer than the caller's own share of the job took,
// means the worker was descheduled mid-unit. (A wait as long as one unit is normal: the
// caller ran out of units while the worker was in its last one, and the GPT's product
// units take 100-300 us. Taking those for descheduling put whole steps on one thread.)
constexpr std::chrono::microseconds kSlowWait(150);
constexpr int kMaxBackoff = 256;  // parallel loops run inline after repeated slow waits

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  for (int t = 1; t < num_threads; ++t) workers_.emplace_back([this, t] { WorkerLoop(t); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  Signal();
  for (std::thread& w : workers_) w.join();
}

void ThreadPool::Signal() {
  signal_.fetch_add(1, std::memory_order_release);
  if (sleepers_.load(std::memory_order_acquire) > 0) signal_.notify_all();
}

void ThreadPool::RunUnits(int thread) {
  // The caller takes units from the bottom, the workers from the top (see the header).
  const bool from_top = thread != 0;
  uint64_t w = work_.load(std::memory_order_acquire);
  for (;;) {
    const uint64_t end = (w >> kUnitBits) & kUnitMask, next = w & kUnitMask;
    if (next >= end) return;
    // fn_ belongs to the job in `w`: the caller replaces it only after every unit of that
    // job has been claimed and finished, and then the claim below fails.
    const absl::FunctionRef<void(int64_t, int)>* fn = fn_.load(std::memory_order_relaxed);
    const uint64_t claimed = from_top ? w - (uint64_t{1} << kUnitBits) : w + 1;
    if (work_.compare_exchange_weak(w, claimed, std::memory_order_acq_rel, std::memory_order_acquire)) {
      (*fn)(static_cast<int64_t>(from_top ? end - 1 : next), thread);
      done_.fetch_add(1, std::memory_order_release);
      w = work_.load(std::memory_order_acquire);
    }
  }
}

void ThreadPool::WorkerLoop(int thread) {
  using Clock = std::chrono::steady_clock;
  int idle_spins = 0;
  Clock::time_point idle_since = Clock::now();
  for (;;) {
    const uint32_t signal = signal_.load(std::memory_order_acquire);
    const uint64_t w = work_.load(std::memory_order_acquire);
    if ((w & kUnitMask) < ((w >> kUnitBits) & kUnitMask)) {
      RunUnits(thread);
      idle_spins = 0;
      idle_since = Clock::now();
      continue;
    }
    if (stop_.load(std::memory_order_acquire)) return;
    if (spinning_.load(std::memory_order_relaxed)) {
      // Spin on the job word, but not through a long serial stretch of the caller: after
      // kMaxIdleSpin without work, sleep until the next job like outside a SpinScope.
      for (int i = 0; i < 32; ++i) PCP_CPU_RELAX();
      if (++idle_spins % 64 != 0) continue;
      const auto idle = Clock::now() - idle_since;
      if (idle < kPoliteSpin) continue;
      if (idle < kMaxIdleSpin) {
        std::this_thread::yield();
        continue;
      }
    }
    sleepers_.fetch_add(1, std::memory_order_acq_rel);
    signal_.wait(signal, std::memory_order_acquire);
    sleepers_.fetch_sub(1, std::memory_order_acq_rel);
    idle_spins = 0;
    idle_since = Clock::now();
  }
}

void ThreadPool::ParallelFor(int64_t num_units, absl::FunctionRef<void(int64_t, int)> fn) {
  if (num_units <= 0) return;
  if (workers_.empty() || num_units == 1 || inline_loops_ > 0) {
    if (inline_loops_ > 0) --inline_loops_;
    for (int64_t u = 0; u < num_units; ++u) fn(u, 0);
    return;
  }
  if (num_units >= kMaxUnits) {
    // Too many for the job word: run them in consecutive batches.
    const int64_t batch = (num_units + kMaxUnits - 2) / (kMaxUnits - 1);
    const int64_t batches = (num_units + batch - 1) / batch;
    ParallelFor(batches, [&](int64_t b, int thread) {
      for (int64_t u = b * batch; u < std::min(num_units, (b + 1) * batch); ++u) fn(u, thread);
    });
    return;
  }
  fn_.store(&fn, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  job_ = (job_ + 1) & ((uint64_t{1} << (64 - 2 * kUnitBits)) - 1);
  work_.store((job_ << (2 * kUnitBits)) | (static_cast<uint64_t>(num_units) << kUnitBits), std::memory_order_release);
  Signal();
  const auto run_start = std::chrono::steady_clock::now();
  RunUnits(0);
  // Only units that workers already claimed are waited for; a worker that is slow to wake
  // up finds nothing left and costs nothing. But one that was descheduled in the middle of a
  // unit (a machine with more runnable threads than cores) holds the caller up for a whole
  // time slice: after such a wait, run the next few loops on the caller alone, backing off
  // exponentially while it keeps happening.
  if (done_.load(std::memory_order_acquire) < num_units) {
    const auto wait_start = std::chrono::steady_clock::now();
    for (int spins = 0; done_.load(std::memory_order_acquire) < num_units; ++spins) {
      PCP_CPU_RELAX();
      if (spins > (1 << 14)) std::this_thread::yield();
    }
    const auto wait = std::chrono::steady_clock::now() - wait_start;
    if (wait > kSlowWait && wait > wait_start - run_start) {
      backoff_ = std::min(std::max(1, 2 * backoff_), kMaxBackoff);
      inline_loops_ = backoff_;
      return;
    }
  }
  backoff_ /= 2;
}

ThreadPool::SpinScope::SpinScope(ThreadPool& pool) : pool_(pool) {
  pool_.spinning_.store(true, std::memory_order_release);
  pool_.Signal();
}

ThreadPool::SpinScope::~SpinScope() { pool_.spinning_.store(false, std::memory_order_release); }

}  // namespace pcp::cpu
