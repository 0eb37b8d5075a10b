#include "pcp/base/backoff.h"

#include <gtest/gtest.h>

namespace pcp {
namespace {

TEST(BackoffTest, GrowsByTheMultiplierUpToTheCap) {
  Backoff backoff({.initial = absl::Milliseconds(100), .multiplier = 2, .max = absl::Milliseconds(700), .jitter = 0});
  EXPECT_EQ(backoff.Next(), absl::Milliseconds(100));
  EXPECT_EQ(backoff.Next(), absl::Milliseconds(200));
  EXPECT_EQ(backoff.Next(), absl::Milliseconds(400));
  EXPECT_EQ(backoff.Next(), absl::Milliseconds(700));
  EXPECT_EQ(backoff.Next(), absl::Milliseconds(700));
  EXPECT_EQ(backoff.attempt(), 5);
}

TEST(BackoffTest, ResetStartsOver) {
  Backoff backoff({.initial = absl::Seconds(1), .multiplier = 3, .max = absl::Seconds(60), .jitter = 0});
  backoff.Next();
  backoff.Next();
  backoff.Reset();
  EXPECT_EQ(backoff.Next(), absl::Seconds(1));
}

TEST(BackoffTest, JitterStaysWithinItsBoundsAndVaries) {
  Backoff backoff({.initial = absl::Seconds(10), .multiplier = 1, .max = absl::Seconds(20), .jitter = 0.25},
                  /*seed=*/42);
  absl::Duration lo = absl::InfiniteDuration(), hi = absl::ZeroDuration();
  for (int i = 0; i < 1000; ++i) {
    absl::Duration d = backoff.Next();
    ASSERT_GE(d, absl::Milliseconds(7500));
    ASSERT_LE(d, absl::Milliseconds(12500));
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  EXPECT_LT(lo, absl::Seconds(8));
  EXPECT_GT(hi, absl::Seconds(12));
}

TEST(BackoffTest, JitterNeverExceedsTheCap) {
  Backoff backoff({.initial = absl::Seconds(1), .multiplier = 10, .max = absl::Seconds(5), .jitter = 0.5}, 7);
  for (int i = 0; i < 200; ++i) ASSERT_LE(backoff.Next(), absl::Seconds(5));
}

TEST(BackoffTest, ManyAttemptsDoNotOverflow) {
  Backoff backoff({.initial = absl::Seconds(1), .multiplier = 10, .max = absl::Minutes(5), .jitter = 0});
  for (int i = 0; i < 5000; ++i) backoff.Next();
  EXPECT_EQ(backoff.Next(), absl::Minutes(5));
}

TEST(BackoffTest, ValidationNamesTheField) {
  EXPECT_TRUE(ValidateBackoffOptions({}, "b").ok());
  absl::Status s = ValidateBackoffOptions({.initial = absl::ZeroDuration()}, "worker.backoff");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("worker.backoff.initial"), absl::string_view::npos) << s;
  s = ValidateBackoffOptions({.multiplier = 0.5}, "b");
  EXPECT_NE(s.message().find("b.multiplier"), absl::string_view::npos) << s;
  s = ValidateBackoffOptions({.initial = absl::Seconds(10), .max = absl::Seconds(1)}, "b");
  EXPECT_NE(s.message().find("b.max"), absl::string_view::npos) << s;
  s = ValidateBackoffOptions({.jitter = 1.0}, "b");
  EXPECT_NE(s.message().find("b.jitter"), absl::string_view::npos) << s;
}

}  // namespace
}  // namespace pcp
