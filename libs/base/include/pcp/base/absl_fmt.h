// Lets fmt / spdlog format Debian's absl::string_view (a type of its own, not
// std::string_view), e.g. the message of an absl::Status, without copying it to a string.
//
//   #include "pcp/base/absl_fmt.h"
//   spdlog::warn("job {} failed: {}", job_id, status.message());
//
// Header-only; include it in .cc files that log with spdlog (which brings fmt).
#ifndef PCP_BASE_ABSL_FMT_H_
#define PCP_BASE_ABSL_FMT_H_

#include <fmt/format.h>

#include <string_view>
#include <type_traits>

#include "absl/strings/string_view.h"

#if !defined(ABSL_USES_STD_STRING_VIEW)
template <>
struct fmt::formatter<absl::string_view> : fmt::formatter<fmt::string_view> {
  auto format(absl::string_view s, fmt::format_context& ctx) const {
    return fmt::formatter<fmt::string_view>::format(fmt::string_view(s.data(), s.size()), ctx);
  }
};
#endif

#endif  // PCP_BASE_ABSL_FMT_H_
