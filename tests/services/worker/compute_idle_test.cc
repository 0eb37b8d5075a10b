// ComputeIdle: the worker's idle time between rounds (pcp_worker_network_wait_seconds and
// RoundResult.network_wait_ms), with explicit time points.
#include "compute_idle.h"

#include <chrono>

#include "gtest/gtest.h"

namespace pcp::worker {
namespace {

using std::chrono::milliseconds;
using Clock = ComputeIdle::Clock;

TEST(ComputeIdleTest, IdleIsFromOneRoundsEndToTheNextRoundsStart) {
  ComputeIdle idle;
  const Clock::time_point t0 = Clock::now();
  // Round 1: nothing before it to wait on.
  EXPECT_EQ(idle.MarkComputeStart(t0), std::nullopt);
  idle.MarkComputeEnd(t0 + milliseconds(900));
  // Round 2 starts 250 ms after round 1's steps ended (Δ sent, θ and StartRound received).
  std::optional<double> wait = idle.MarkComputeStart(t0 + milliseconds(1150));
  ASSERT_TRUE(wait.has_value());
  EXPECT_DOUBLE_EQ(*wait, 0.25);
  idle.MarkComputeEnd(t0 + milliseconds(2000));
  wait = idle.MarkComputeStart(t0 + milliseconds(2010));
  ASSERT_TRUE(wait.has_value());
  EXPECT_NEAR(*wait, 0.010, 1e-12);
}

TEST(ComputeIdleTest, AnEndIsUsedOnceAndResetForgetsIt) {
  ComputeIdle idle;
  const Clock::time_point t0 = Clock::now();
  idle.MarkComputeEnd(t0);
  ASSERT_TRUE(idle.MarkComputeStart(t0 + milliseconds(5)).has_value());
  // A second start without an end in between (a round that never ran its steps) has no wait.
  EXPECT_EQ(idle.MarkComputeStart(t0 + milliseconds(50)), std::nullopt);
  // A new assignment: its first round has nothing to measure against.
  idle.MarkComputeEnd(t0 + milliseconds(60));
  idle.Reset();
  EXPECT_EQ(idle.MarkComputeStart(t0 + milliseconds(70)), std::nullopt);
}

TEST(ComputeIdleTest, NeverNegative) {
  ComputeIdle idle;
  const Clock::time_point t0 = Clock::now();
  idle.MarkComputeEnd(t0 + milliseconds(10));
  std::optional<double> wait = idle.MarkComputeStart(t0);  // a start "before" the end
  ASSERT_TRUE(wait.has_value());
  EXPECT_EQ(*wait, 0.0);
}

}  // namespace
}  // namespace pcp::worker
