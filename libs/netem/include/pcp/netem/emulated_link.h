// An emulated link as users give it (Mbit/s each way, round-trip time in ms): validation
// with messages that name the flag, a one-line description, and the relay's options.
//
//   EmulatedLink link{.up_mbit = 10, .down_mbit = 10, .rtt_ms = 50};
//   PCP_RETURN_IF_ERROR(ValidateEmulatedLink(link, "--link_"));   // "--link_up_mbit=-1: ..."
//   if (link.enabled()) {
//     PCP_ASSIGN_OR_RETURN(auto relay, Relay::Create(ToRelayOptions(link, "shepherd:7070")));
//     LOG(INFO) << Describe(link);   // "up 10 Mbit/s, down 10 Mbit/s, RTT 50 ms"
//   }
//
// Mbit means 10^6 bits, as link speeds are quoted. The RTT is split evenly: RTT/2 each way.
#ifndef PCP_NETEM_EMULATED_LINK_H_
#define PCP_NETEM_EMULATED_LINK_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "pcp/netem/relay.h"

namespace pcp::netem {

inline constexpr double kMinLinkMbit = 0.01;     // 10 kbit/s
inline constexpr double kMaxLinkMbit = 100'000;  // 100 Gbit/s
inline constexpr double kMaxLinkRttMs = 10'000;  // 10 s

struct EmulatedLink {
  double up_mbit = 0;    // client → target, Mbit/s; 0 = unlimited
  double down_mbit = 0;  // target → client, Mbit/s; 0 = unlimited
  double rtt_ms = 0;     // added round-trip time, ms; 0 = none
  bool enabled() const { return up_mbit != 0 || down_mbit != 0 || rtt_ms != 0; }
};

// InvalidArgument naming the field as `flag_prefix` + its name (e.g. "--link_up_mbit=-1: must
// be 0 (unlimited) or from 0.01 to 100000 Mbit/s"): rates 0 or in [kMinLinkMbit,
// kMaxLinkMbit], RTT in [0, kMaxLinkRttMs], nothing NaN or infinite.
absl::Status ValidateEmulatedLink(const EmulatedLink& link, absl::string_view flag_prefix);

// "up 10 Mbit/s, down 1 Gbit/s, RTT 50 ms"; "unlimited" / "RTT 0 ms" for zeros.
std::string Describe(const EmulatedLink& link);

// The relay's options for `link` to `target` (HOST:PORT); `link` must be valid.
RelayOptions ToRelayOptions(const EmulatedLink& link, std::string target);

}  // namespace pcp::netem

#endif  // PCP_NETEM_EMULATED_LINK_H_
