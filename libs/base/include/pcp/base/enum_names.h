// Lookups over the (enum, name) tables that spell an enum's values once, e.g.
//
//   inline constexpr std::pair<LrScheduleKind, absl::string_view> kLrScheduleNames[] = {
//       {LrScheduleKind::kCosine, "cosine"}, {LrScheduleKind::kConstant, "constant"}};
//   NameOf(kLrScheduleNames, LrScheduleKind::kCosine) == "cosine"
#ifndef PCP_BASE_ENUM_NAMES_H_
#define PCP_BASE_ENUM_NAMES_H_

#include <utility>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace pcp {

// The name of `value` in `table`, or "?" if the table lacks it.
template <typename E>
absl::string_view NameOf(absl::Span<const std::pair<E, absl::string_view>> table, E value) {
  for (const auto& [e, name] : table) {
    if (e == value) return name;
  }
  return "?";
}
template <typename E, size_t N>
absl::string_view NameOf(const std::pair<E, absl::string_view> (&table)[N], E value) {
  return NameOf(absl::MakeConstSpan(table), value);
}

}  // namespace pcp

#endif  // PCP_BASE_ENUM_NAMES_H_
