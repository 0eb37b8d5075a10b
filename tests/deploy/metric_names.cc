#include "metric_names.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace pcp::testing {
namespace {

bool IsNameStart(char c) { return absl::ascii_isalpha(c) || c == '_' || c == ':'; }
bool IsNameChar(char c) { return absl::ascii_isalnum(c) || c == '_' || c == ':'; }

}  // namespace

std::set<std::string> PcpMetricNames(absl::string_view promql) {
  std::set<std::string> names;
  size_t i = 0;
  while (i < promql.size()) {
    const char c = promql[i];
    if (c == '"' || c == '\'' || c == '`') {  // skip a string literal (backslash escapes)
      for (++i; i < promql.size() && promql[i] != c; ++i) {
        if (promql[i] == '\\' && c != '`') ++i;
      }
      ++i;
      continue;
    }
    if (IsNameStart(c)) {
      size_t end = i;
      while (end < promql.size() && IsNameChar(promql[end])) ++end;
      absl::string_view word = promql.substr(i, end - i);
      if (absl::StartsWith(word, "pcp_")) names.emplace(word);
      i = end;
      continue;
    }
    // A number such as 1e3 or a duration such as 15m: skip so "e3"/"m" are not names.
    if (absl::ascii_isdigit(c)) {
      while (i < promql.size() && IsNameChar(promql[i])) ++i;
      continue;
    }
    ++i;
  }
  return names;
}

ExposedMetrics ParseExposition(absl::string_view text) {
  ExposedMetrics out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    if (absl::ConsumePrefix(&line, "#")) {
      std::vector<absl::string_view> parts = absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (parts.size() >= 3 && parts[0] == "TYPE") out.families[std::string(parts[1])] = std::string(parts[2]);
      continue;
    }
    size_t end = 0;
    while (end < line.size() && IsNameChar(line[end])) ++end;
    if (end > 0) out.samples.emplace(line.substr(0, end));
  }
  return out;
}

bool ExposedMetrics::Covers(const std::string& name) const {
  if (samples.count(name) == 0) return false;
  if (auto it = families.find(name); it != families.end()) {
    return it->second != "histogram" && it->second != "summary";
  }
  for (absl::string_view suffix : {"_bucket", "_sum", "_count"}) {
    absl::string_view base = name;
    if (!absl::ConsumeSuffix(&base, suffix)) continue;
    auto it = families.find(std::string(base));
    if (it == families.end()) continue;
    if (it->second == "histogram" || (it->second == "summary" && suffix != "_bucket")) return true;
  }
  return false;
}

}  // namespace pcp::testing
