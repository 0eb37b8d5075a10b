#include "pcp/netem/emulated_link.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace pcp::netem {
namespace {

absl::Status CheckRate(absl::string_view flag, double mbit) {
  if (mbit == 0 || (std::isfinite(mbit) && mbit >= kMinLinkMbit && mbit <= kMaxLinkMbit)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("%s=%g: must be 0 (unlimited) or from %g to %g Mbit/s", flag, mbit, kMinLinkMbit, kMaxLinkMbit));
}

std::string Rate(double mbit) {
  if (mbit == 0) return "unlimited";
  if (mbit >= 1000) return absl::StrFormat("%g Gbit/s", mbit / 1000);
  return absl::StrFormat("%g Mbit/s", mbit);
}

LinkShape Shape(double mbit, double one_way_ms) {
  return {.rate_bytes_per_s = mbit * 1e6 / 8,
          .delay = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(one_way_ms))};
}

}  // namespace

absl::Status ValidateEmulatedLink(const EmulatedLink& link, absl::string_view flag_prefix) {
  if (absl::Status s = CheckRate(absl::StrCat(flag_prefix, "up_mbit"), link.up_mbit); !s.ok()) return s;
  if (absl::Status s = CheckRate(absl::StrCat(flag_prefix, "down_mbit"), link.down_mbit); !s.ok()) return s;
  if (!(std::isfinite(link.rtt_ms) && link.rtt_ms >= 0 && link.rtt_ms <= kMaxLinkRttMs)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%srtt_ms=%g: must be from 0 (none) to %g ms", flag_prefix, link.rtt_ms, kMaxLinkRttMs));
  }
  return absl::OkStatus();
}

std::string Describe(const EmulatedLink& link) {
  return absl::StrFormat("up %s, down %s, RTT %g ms", Rate(link.up_mbit), Rate(link.down_mbit), link.rtt_ms);
}

RelayOptions ToRelayOptions(const EmulatedLink& link, std::string target) {
  return {.target = std::move(target),
          .up = Shape(link.up_mbit, link.rtt_ms / 2),
          .down = Shape(link.down_mbit, link.rtt_ms / 2)};
}

}  // namespace pcp::netem
