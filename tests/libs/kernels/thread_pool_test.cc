// Direct tests of the CPU backend's fork-join pool (libs/kernels/cpu/src/thread_pool.h, an
// internal class: this test sees its header through an include path of its own).
#include "thread_pool.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace pcp::cpu {
namespace {

TEST(ThreadPoolTest, EveryUnitRunsExactlyOnceForAnyThreadAndUnitCount) {
  for (int threads : {1, 2, 3, 4, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    for (int64_t units : {0, 1, 2, 3, 7, 64, 1000, 100000}) {
      std::vector<std::atomic<int>> runs(static_cast<size_t>(units));
      pool.ParallelFor(units, [&](int64_t u, int) { runs[static_cast<size_t>(u)].fetch_add(1); });
      for (int64_t u = 0; u < units; ++u) {
        ASSERT_EQ(runs[static_cast<size_t>(u)].load(), 1) << threads << " threads, unit " << u << " of " << units;
      }
    }
  }
}

// `thread` indexes per-thread scratch: it is in range, and no two units that run at the
// same time ever get the same index.
TEST(ThreadPoolTest, ThreadIndexIsInRangeAndNeverSharedByConcurrentUnits) {
  constexpr int kThreads = 4;
  ThreadPool pool(kThreads);
  ThreadPool::SpinScope spin(pool);
  std::atomic<bool> busy[kThreads] = {};
  std::atomic<int> out_of_range{0}, shared{0};
  for (int loop = 0; loop < 200; ++loop) {
    pool.ParallelFor(64, [&](int64_t, int thread) {
      if (thread < 0 || thread >= kThreads) {
        out_of_range.fetch_add(1);
        return;
      }
      if (busy[thread].exchange(true)) shared.fetch_add(1);
      volatile double x = 0;  // a little work, so that units overlap
      for (int i = 0; i < 2000; ++i) x = x + i;
      busy[thread].store(false);
    });
  }
  EXPECT_EQ(out_of_range.load(), 0);
  EXPECT_EQ(shared.load(), 0);
}

// The caller claims units from the bottom and the workers from the top, so every unit the
// caller runs comes before every unit a worker runs (whoever gets how many): with two threads
// each thread computes the same end of consecutive kernels' rows.
TEST(ThreadPoolTest, CallerRunsTheFirstUnitsAndWorkersTheLast) {
  for (int threads : {2, 3, 4}) {
    ThreadPool pool(threads);
    ThreadPool::SpinScope spin(pool);
    std::vector<int> by(64);
    for (int loop = 0; loop < 200; ++loop) {
      pool.ParallelFor(64, [&](int64_t u, int thread) {
        by[static_cast<size_t>(u)] = thread;  // each slot: one writer
        volatile double x = 0;                // a little work, so that the workers get some
        for (int i = 0; i < 500; ++i) x = x + i;
      });
      int64_t last_caller = -1, first_worker = 64;
      for (int64_t u = 0; u < 64; ++u) {
        if (by[static_cast<size_t>(u)] == 0) {
          last_caller = u;
        } else {
          first_worker = std::min(first_worker, u);
        }
      }
      ASSERT_LT(last_caller, first_worker) << threads << " threads, loop " << loop;
    }
  }
}

// Back-to-back loops (as a compiled function runs its kernels): a worker must never run a
// unit of an earlier loop after ParallelFor returned, nor of a later one with the old
// function. Each loop writes its own number into its units' slots.
TEST(ThreadPoolTest, ConsecutiveLoopsNeverMix) {
  for (bool spinning : {false, true}) {
    ThreadPool pool(3);
    std::unique_ptr<ThreadPool::SpinScope> spin;
    if (spinning) spin = std::make_unique<ThreadPool::SpinScope>(pool);
    std::vector<std::atomic<int>> slot(37);
    for (int loop = 1; loop <= 3000; ++loop) {
      const int64_t units = 1 + loop % 37;
      pool.ParallelFor(units, [&](int64_t u, int) { slot[static_cast<size_t>(u)].store(loop); });
      for (int64_t u = 0; u < units; ++u) {
        ASSERT_EQ(slot[static_cast<size_t>(u)].load(), loop) << "loop " << loop << " unit " << u;
      }
      // Slots beyond this loop's units keep older loops' numbers: nothing ran them now.
      for (int64_t u = units; u < 37; ++u) ASSERT_LT(slot[static_cast<size_t>(u)].load(), loop);
    }
  }
}

// More units than the job word can count are run in batches, still each exactly once.
TEST(ThreadPoolTest, MoreUnitsThanOneJobHoldsRunExactlyOnce) {
  ThreadPool pool(2);
  const int64_t units = (int64_t{1} << 22) + 77;
  std::vector<uint8_t> runs(static_cast<size_t>(units), 0);
  pool.ParallelFor(units, [&](int64_t u, int) { ++runs[static_cast<size_t>(u)]; });  // each slot: one writer
  EXPECT_EQ(std::count(runs.begin(), runs.end(), uint8_t{1}), units);
}

// One thread: everything runs inline on the caller, as thread 0.
TEST(ThreadPoolTest, OneThreadRunsOnTheCaller) {
  ThreadPool pool(1);
  const std::thread::id caller = std::this_thread::get_id();
  int wrong = 0;
  pool.ParallelFor(100, [&](int64_t, int thread) {
    if (thread != 0 || std::this_thread::get_id() != caller) ++wrong;
  });
  EXPECT_EQ(wrong, 0);
}

// Pools come and go with each backend: destroying one whose workers spin, sleep or have
// just been woken must return (no lost wake-up, no worker left running).
TEST(ThreadPoolTest, DestroyingAPoolInAnyStateReturns) {
  for (int i = 0; i < 100; ++i) {
    ThreadPool pool(1 + i % 4);
    std::unique_ptr<ThreadPool::SpinScope> spin;
    if (i % 2 == 0) spin = std::make_unique<ThreadPool::SpinScope>(pool);
    if (i % 3 != 0) {
      std::atomic<int64_t> sum{0};
      pool.ParallelFor(10, [&](int64_t u, int) { sum.fetch_add(u); });
      ASSERT_EQ(sum.load(), 45);
    }
    spin.reset();
  }
}

}  // namespace
}  // namespace pcp::cpu
