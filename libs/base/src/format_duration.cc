#include "pcp/base/format_duration.h"

#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace pcp {

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  if (seconds < 1) return absl::StrCat(static_cast<int64_t>(std::lround(seconds * 1000)), "ms");
  if (seconds < 9.95) return absl::StrFormat("%.1fs", seconds);
  auto total = static_cast<int64_t>(std::llround(seconds));
  if (total < 60) return absl::StrCat(total, "s");
  if (total < 3600) return absl::StrFormat("%dm%02ds", total / 60, total % 60);
  if (total < 86400) return absl::StrFormat("%dh%02dm", total / 3600, total % 3600 / 60);
  return absl::StrFormat("%dd%02dh", total / 86400, total % 86400 / 3600);
}

}  // namespace pcp
