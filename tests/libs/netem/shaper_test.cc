// The shaper on made-up times: delays, rate, burst, write quanta. Deterministic.
#include "pcp/netem/shaper.h"

#include <chrono>

#include "gtest/gtest.h"

namespace pcp::netem {
namespace {

using std::chrono::milliseconds;

const Clock::time_point kT0 = Clock::time_point() + std::chrono::hours(1);

// Sends everything pending as soon as the shaper allows; returns when the last byte left.
Clock::time_point Drain(Shaper& s, Clock::time_point t, int* writes = nullptr) {
  while (s.pending() > 0) {
    if (size_t k = s.Sendable(t); k > 0) {
      s.Sent(k);
      if (writes != nullptr) ++*writes;
      continue;
    }
    std::optional<Clock::time_point> next = s.NextChange(t);
    EXPECT_TRUE(next.has_value());
    EXPECT_GT(*next, t);
    if (!next.has_value() || *next <= t) break;
    t = *next;
  }
  return t;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

TEST(ShaperTest, UnshapedPassesAtOnce) {
  Shaper s({}, kT0);
  s.Arrive(100, kT0);
  EXPECT_EQ(s.Sendable(kT0), 100u);
  s.Sent(60);
  EXPECT_EQ(s.pending(), 40u);
  EXPECT_EQ(s.Sendable(kT0), 40u);
  s.Sent(40);
  EXPECT_EQ(s.pending(), 0u);
  EXPECT_FALSE(s.NextChange(kT0).has_value());
}

TEST(ShaperTest, BytesWaitOutTheDelay) {
  Shaper s({.delay = milliseconds(25)}, kT0);
  s.Arrive(100, kT0);
  s.Arrive(50, kT0 + milliseconds(10));
  EXPECT_EQ(s.Sendable(kT0 + milliseconds(24)), 0u);
  EXPECT_EQ(s.NextChange(kT0 + milliseconds(24)), kT0 + milliseconds(25));
  EXPECT_EQ(s.Sendable(kT0 + milliseconds(25)), 100u);  // the second batch is not due yet
  s.Sent(100);
  EXPECT_EQ(s.NextChange(kT0 + milliseconds(25)), kT0 + milliseconds(35));
  EXPECT_EQ(s.Sendable(kT0 + milliseconds(35)), 50u);
}

TEST(ShaperTest, RateHoldsOverASecond) {
  const LinkShape shape{.rate_bytes_per_s = 1e6, .burst_bytes = 16384};
  Shaper s(shape, kT0);
  s.Arrive(1'000'000, kT0);
  int writes = 0;
  const double took = Seconds(Drain(s, kT0, &writes) - kT0);
  // The first 16384 bytes go at once (a full bucket), the rest at 1e6 bytes/s.
  EXPECT_NEAR(took, (1e6 - 16384) / 1e6, 1e-3);
  // In quanta of max(1500 bytes, 1 ms of rate) = 1500, not byte by byte.
  EXPECT_LT(writes, 1000);
  EXPECT_GT(writes, 100);
}

TEST(ShaperTest, DelayAndRateAddUp) {
  Shaper s({.rate_bytes_per_s = 2e6, .delay = milliseconds(50)}, kT0);
  s.Arrive(200'000, kT0);
  const double took = Seconds(Drain(s, kT0) - kT0);
  const double burst = static_cast<double>(DefaultBurstBytes(2e6));
  EXPECT_NEAR(took, 0.050 + (200'000 - burst) / 2e6, 1e-3);
}

TEST(ShaperTest, IdleTimeFillsTheBucketOnlyToTheBurst) {
  Shaper s({.rate_bytes_per_s = 1e6, .burst_bytes = 10'000}, kT0);
  s.Arrive(50'000, kT0 + std::chrono::seconds(10));
  EXPECT_EQ(s.Sendable(kT0 + std::chrono::seconds(10)), 10'000u);
}

TEST(ShaperTest, WaitsForAWholeQuantumNotOneByte) {
  Shaper s({.rate_bytes_per_s = 1e6, .burst_bytes = 16384}, kT0);
  s.Arrive(16384, kT0);
  s.Sent(s.Sendable(kT0));  // the bucket is empty now
  s.Arrive(100, kT0);
  EXPECT_EQ(s.Sendable(kT0), 0u);
  std::optional<Clock::time_point> next = s.NextChange(kT0);
  ASSERT_TRUE(next.has_value());
  EXPECT_NEAR(Seconds(*next - kT0), 100 / 1e6, 2e-6);  // 100 tokens, not 1
  EXPECT_EQ(s.Sendable(*next), 100u);
}

TEST(ShaperTest, DefaultsAreSane) {
  EXPECT_EQ(DefaultBurstBytes(1.25e6), 16384u);   // 10 Mbit/s: 16 KiB
  EXPECT_EQ(DefaultBurstBytes(125e6), 625'000u);  // 1 Gbit/s: 5 ms
  EXPECT_EQ(BufferBytes({}), 16u << 20);          // unlimited
  EXPECT_EQ(BufferBytes({.rate_bytes_per_s = 1.25e6, .delay = milliseconds(25)}), 1u << 20);
  EXPECT_GT(BufferBytes({.rate_bytes_per_s = 125e6, .delay = milliseconds(25)}), 6'250'000u);  // 2 BDP
}

}  // namespace
}  // namespace pcp::netem
