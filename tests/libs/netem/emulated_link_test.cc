#include "pcp/netem/emulated_link.h"

#include <cmath>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pcp::netem {
namespace {

using ::testing::HasSubstr;

TEST(EmulatedLinkTest, OffByDefault) {
  EXPECT_FALSE(EmulatedLink{}.enabled());
  EXPECT_TRUE(ValidateEmulatedLink({}, "--link_").ok());
  EXPECT_TRUE((EmulatedLink{.rtt_ms = 50}).enabled());
}

TEST(EmulatedLinkTest, BadValuesNameTheFlag) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    EmulatedLink link;
    const char* expected;
  };
  for (const Case& c :
       {Case{{.up_mbit = -1}, "--link_up_mbit=-1: must be 0 (unlimited) or from 0.01 to 100000"},
        Case{{.down_mbit = 0.001}, "--link_down_mbit=0.001"}, Case{{.down_mbit = 1e6}, "--link_down_mbit=1e+06"},
        Case{{.up_mbit = nan}, "--link_up_mbit=nan"},
        Case{{.up_mbit = 10, .rtt_ms = -5}, "--link_rtt_ms=-5: must be from 0 (none) to 10000 ms"},
        Case{{.rtt_ms = inf}, "--link_rtt_ms=inf"}}) {
    absl::Status s = ValidateEmulatedLink(c.link, "--link_");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr(c.expected));
  }
}

TEST(EmulatedLinkTest, Describes) {
  EXPECT_EQ(Describe({.up_mbit = 10, .down_mbit = 10, .rtt_ms = 50}), "up 10 Mbit/s, down 10 Mbit/s, RTT 50 ms");
  EXPECT_EQ(Describe({.up_mbit = 1000, .down_mbit = 0, .rtt_ms = 0}), "up 1 Gbit/s, down unlimited, RTT 0 ms");
  EXPECT_EQ(Describe({.up_mbit = 2.5}), "up 2.5 Mbit/s, down unlimited, RTT 0 ms");
}

TEST(EmulatedLinkTest, RelayOptionsSplitTheRtt) {
  RelayOptions o = ToRelayOptions({.up_mbit = 10, .down_mbit = 1000, .rtt_ms = 50}, "shepherd:7070");
  EXPECT_EQ(o.target, "shepherd:7070");
  EXPECT_DOUBLE_EQ(o.up.rate_bytes_per_s, 1.25e6);
  EXPECT_DOUBLE_EQ(o.down.rate_bytes_per_s, 125e6);
  EXPECT_EQ(o.up.delay, std::chrono::milliseconds(25));
  EXPECT_EQ(o.down.delay, std::chrono::milliseconds(25));
  EXPECT_EQ(ToRelayOptions({.rtt_ms = 1}, "h:1").up.delay, std::chrono::microseconds(500));
}

}  // namespace
}  // namespace pcp::netem
