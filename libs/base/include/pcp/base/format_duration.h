// Durations for people, the one formatter every PCP log line and CLI uses.
//
//   FormatDuration(0.25);                         // "250ms"
//   FormatDuration(1.5);                          // "1.5s"
//   FormatDuration(192);                          // "3m12s"
//   FormatDuration(absl::ToDoubleSeconds(d));     // an absl::Duration
//
// Two significant parts at most: "850ms", "1.5s", "42s", "3m12s", "2h05m", "3d04h"; "-" when
// negative or not finite. (No absl::Duration overload: argument-dependent lookup would make
// every unqualified call with one ambiguous with absl::FormatDuration.)
#ifndef PCP_BASE_FORMAT_DURATION_H_
#define PCP_BASE_FORMAT_DURATION_H_

#include <string>

namespace pcp {

std::string FormatDuration(double seconds);

}  // namespace pcp

#endif  // PCP_BASE_FORMAT_DURATION_H_
