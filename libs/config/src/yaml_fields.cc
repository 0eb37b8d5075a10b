#include "pcp/config/yaml_fields.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"

namespace pcp::yaml_fields {
namespace {

std::string Interval(const RealRange& r) {
  if (std::isinf(r.max)) {
    return absl::StrCat(r.min_open ? "> " : ">= ", EmitReal(r.min));
  }
  return absl::StrCat("in ", r.min_open ? "(" : "[", EmitReal(r.min), ", ", EmitReal(r.max), r.max_open ? ")" : "]");
}

std::string Interval(const IntRange& r) {
  if (r.max == std::numeric_limits<int64_t>::max()) return absl::StrCat(">= ", r.min);
  return absl::StrCat("in [", r.min, ", ", r.max, "]");
}

}  // namespace

absl::Status Context::Error(const YAML::Mark& mark, absl::string_view message) const {
  if (!positions_) return absl::InvalidArgumentError(absl::StrCat(file_, ": ", message));
  const int line = mark.line < 0 ? 1 : mark.line + 1;
  const int column = mark.column < 0 ? 1 : mark.column + 1;
  return absl::InvalidArgumentError(absl::StrCat(file_, ":", line, ":", column, ": ", message));
}

YAML::Mark Context::ValueMark(std::initializer_list<std::string> qkeys) const {
  for (const std::string& k : qkeys) {
    if (auto it = value_marks_.find(k); it != value_marks_.end()) return it->second;
  }
  for (const std::string& k : qkeys) {
    std::string section = k.substr(0, k.find('.'));
    if (auto it = key_marks_.find(section); it != key_marks_.end()) return it->second;
  }
  return YAML::Mark::null_mark();
}

YAML::Mark Context::KeyMark(const std::string& qkey) const {
  auto it = key_marks_.find(qkey);
  return it == key_marks_.end() ? YAML::Mark::null_mark() : it->second;
}

absl::Status Context::Locate(const absl::Status& status) const {
  if (status.code() != absl::StatusCode::kInvalidArgument) return status;
  const absl::string_view message = status.message();
  const size_t colon = message.find(':');
  if (colon != absl::string_view::npos) {
    if (auto it = value_marks_.find(std::string(message.substr(0, colon))); it != value_marks_.end()) {
      return Error(it->second, message);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(file_, ": ", message));
}

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a sequence";
    case YAML::NodeType::Scalar: {
      const std::string& text = node.Scalar();
      constexpr size_t kMaxShown = 60;  // keep messages one readable line
      if (text.size() <= kMaxShown) return absl::StrCat("'", absl::CHexEscape(text), "'");
      return absl::StrCat("'", absl::CHexEscape(absl::string_view(text).substr(0, kMaxShown)), "...' (", text.size(),
                          " characters)");
    }
    default: return "nothing";
  }
}

absl::StatusOr<std::string> ReadScalar(const Value& v, const Context& ctx, absl::string_view expected) {
  if (v.node.IsScalar()) return v.node.Scalar();
  return ctx.Error(v.mark, absl::StrCat(v.qkey, ": expected ", expected, ", got ", Describe(v.node)));
}

absl::StatusOr<int64_t> ReadInt(const Value& v, const Context& ctx, IntRange range) {
  PCP_ASSIGN_OR_RETURN(std::string text, ReadScalar(v, ctx, "an integer"));
  int64_t value = 0;
  if (!absl::SimpleAtoi(text, &value)) {
    return ctx.Error(v.mark, absl::StrCat(v.qkey, ": expected an integer, got ", Describe(v.node)));
  }
  if (value < range.min || value > range.max) {
    return ctx.Error(v.mark, absl::StrCat(v.qkey, ": must be ", Interval(range), ", got ", value));
  }
  return value;
}

absl::StatusOr<double> ReadReal(const Value& v, const Context& ctx, RealRange range) {
  PCP_ASSIGN_OR_RETURN(std::string text, ReadScalar(v, ctx, "a number"));
  double value = 0;
  if (!absl::SimpleAtod(text, &value) || !std::isfinite(value)) {
    return ctx.Error(v.mark, absl::StrCat(v.qkey, ": expected a (finite) number, got ", Describe(v.node)));
  }
  const bool below = range.min_open ? value <= range.min : value < range.min;
  const bool above = range.max_open ? value >= range.max : value > range.max;
  if (below || above) {
    return ctx.Error(v.mark,
                     absl::StrCat(v.qkey, ": must be ", Interval(range), ", got ", absl::StripAsciiWhitespace(text)));
  }
  return value;
}

absl::StatusOr<bool> ReadBool(const Value& v, const Context& ctx) {
  PCP_ASSIGN_OR_RETURN(std::string text, ReadScalar(v, ctx, "true or false"));
  // YAML 1.1's spellings, as yaml-cpp's own conversion.
  static const char* const kTrue[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
  static const char* const kFalse[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
  for (const char* t : kTrue) {
    if (text == t) return true;
  }
  for (const char* f : kFalse) {
    if (text == f) return false;
  }
  return ctx.Error(v.mark, absl::StrCat(v.qkey, ": expected true or false, got ", Describe(v.node)));
}

absl::StatusOr<std::vector<std::string>> ReadStringList(const Value& v, const Context& ctx) {
  std::vector<std::string> items;
  if (v.node.IsNull()) return items;
  if (!v.node.IsSequence()) {
    return ctx.Error(v.mark, absl::StrCat(v.qkey, ": expected a list of strings, got ", Describe(v.node)));
  }
  for (const YAML::Node& item : v.node) {
    if (!item.IsScalar()) {
      return ctx.Error(item.Mark(),
                       absl::StrCat(v.qkey, ": expected a list of strings, got ", Describe(item), " as an item"));
    }
    items.push_back(item.Scalar());
  }
  return items;
}

std::string EmitStringList(absl::Span<const std::string> items) {
  std::string text = " [";
  for (size_t i = 0; i < items.size(); ++i) {
    absl::StrAppend(&text, i == 0 ? "" : ", ", EmitString(items[i]));
  }
  return text + "]";
}

std::string EmitReal(double x) {
  // Shortest round-trip digits, laid out as Python's repr: plain decimals for
  // 1e-4 <= |x| < 1e16, scientific otherwise.
  const double magnitude = std::fabs(x);
  const auto format = (magnitude == 0.0 || (magnitude >= 1e-4 && magnitude < 1e16)) ? std::chars_format::fixed
                                                                                    : std::chars_format::scientific;
  char buffer[400];  // enough for any double in fixed notation
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), x, format);
  std::string s(buffer, ec == std::errc() ? end : buffer);
  // Keep reals recognisable as such, also to YAML 1.1 readers (PyYAML):
  // "600" -> "600.0", "1e-08" -> "1.0e-08".
  if (s.find('.') == std::string::npos) {
    const size_t e = s.find('e');
    s.insert(e == std::string::npos ? s.size() : e, ".0");
  }
  return s;
}

std::string EmitString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          absl::StrAppend(&out, "\\x", absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
        } else {
          out += c;  // printable ASCII, and UTF-8 bytes unchanged
        }
    }
  }
  out += "\"";
  return out;
}

int EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<int> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string UnknownKeyMessage(absl::string_view key, absl::string_view section,
                              absl::Span<const absl::string_view> valid) {
  std::string message = section.empty()
                            ? absl::StrCat("unknown top-level key '", absl::CHexEscape(key), "'")
                            : absl::StrCat("unknown key '", absl::CHexEscape(key), "' in section '", section, "'");
  int best = 3;
  absl::string_view suggestion;
  for (absl::string_view k : valid) {
    const int d = EditDistance(key, k);
    if (d < best) {
      best = d;
      suggestion = k;
    }
  }
  if (!suggestion.empty()) absl::StrAppend(&message, " (did you mean '", suggestion, "'?)");
  absl::StrAppend(&message, "; valid keys: ");
  for (size_t i = 0; i < valid.size(); ++i) {
    absl::StrAppend(&message, i == 0 ? "" : ", ", valid[i]);
  }
  return message;
}

}  // namespace pcp::yaml_fields
