#include "pcp/base/json.h"

#include <cassert>
#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pcp/base/utf8.h"

namespace pcp {
namespace {

// ---------------------------------------------------------------------------------------
// Parsing.

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(text) {}

  absl::StatusOr<Json> ParseDocument() {
    Json value;
    absl::Status s = ParseValue(&value, 0);
    if (!s.ok()) return s;
    SkipWhitespace();
    if (pos_ != text_.size()) return Error(pos_, "expected end of input after the JSON value");
    return value;
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return text_[pos_]; }

  void SkipWhitespace() {
    while (!AtEnd() && (Peek() == ' ' || Peek() == '\t' || Peek() == '\n' || Peek() == '\r')) {
      ++pos_;
    }
  }

  // What sits at `pos`, for "found ..." in messages.
  std::string Describe(size_t pos) const {
    if (pos >= text_.size()) return "end of input";
    unsigned char c = static_cast<unsigned char>(text_[pos]);
    if (c >= 0x20 && c < 0x7F) return absl::StrCat("'", absl::string_view(&text_[pos], 1), "'");
    return absl::StrFormat("byte 0x%02X", c);
  }

  // "line:column: message" for the byte at `pos` (both 1-based; column counts bytes).
  absl::Status Error(size_t pos, absl::string_view message) const {
    size_t line = 1, line_start = 0;
    for (size_t i = 0; i < pos && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    return absl::InvalidArgumentError(absl::StrCat(line, ":", pos - line_start + 1, ": ", message));
  }
  absl::Status Expected(absl::string_view what) const {
    return Error(pos_, absl::StrCat("expected ", what, ", found ", Describe(pos_)));
  }

  absl::Status ParseValue(Json* out, int depth) {
    SkipWhitespace();
    if (AtEnd()) return Expected("a value");
    switch (Peek()) {
      case '{': return ParseObject(out, depth + 1);
      case '[': return ParseArray(out, depth + 1);
      case '"': {
        std::string s;
        absl::Status st = ParseString(&s);
        if (st.ok()) *out = Json(std::move(s));
        return st;
      }
      case 't': return ParseLiteral("true", Json(true), out);
      case 'f': return ParseLiteral("false", Json(false), out);
      case 'n': return ParseLiteral("null", Json(), out);
      default:
        if (Peek() == '-' || IsDigit(Peek())) return ParseNumber(out);
        return Expected("a value (object, array, string, number, true, false or null)");
    }
  }

  absl::Status ParseLiteral(absl::string_view word, Json value, Json* out) {
    if (text_.substr(pos_, word.size()) != word) return Expected(absl::StrCat("'", word, "'"));
    pos_ += word.size();
    *out = std::move(value);
    return absl::OkStatus();
  }

  absl::Status CheckDepth(int depth) const {
    if (depth > Json::kMaxDepth) {
      return Error(pos_, absl::StrCat("arrays/objects nested deeper than ", Json::kMaxDepth));
    }
    return absl::OkStatus();
  }

  absl::Status ParseObject(Json* out, int depth) {
    if (absl::Status s = CheckDepth(depth); !s.ok()) return s;
    ++pos_;  // '{'
    Json::ObjectType members;
    std::unordered_set<std::string> keys;
    SkipWhitespace();
    if (!AtEnd() && Peek() == '}') {
      ++pos_;
      *out = Json::Object();
      return absl::OkStatus();
    }
    while (true) {
      SkipWhitespace();
      if (AtEnd() || Peek() != '"') {
        return Expected(members.empty() ? "a string key or '}'" : "a string key");
      }
      size_t key_pos = pos_;
      std::string key;
      if (absl::Status s = ParseString(&key); !s.ok()) return s;
      if (!keys.insert(key).second) return Error(key_pos, absl::StrCat("duplicate key \"", key, "\""));
      SkipWhitespace();
      if (AtEnd() || Peek() != ':') return Expected("':' after an object key");
      ++pos_;
      Json value;
      if (absl::Status s = ParseValue(&value, depth); !s.ok()) return s;
      members.emplace_back(std::move(key), std::move(value));
      SkipWhitespace();
      if (AtEnd()) return Expected("',' or '}' after an object member");
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == '}') {
        ++pos_;
        break;
      }
      return Expected("',' or '}' after an object member");
    }
    *out = Json::Object(std::move(members));
    return absl::OkStatus();
  }

  absl::Status ParseArray(Json* out, int depth) {
    if (absl::Status s = CheckDepth(depth); !s.ok()) return s;
    ++pos_;  // '['
    Json::ArrayType items;
    SkipWhitespace();
    if (!AtEnd() && Peek() == ']') {
      ++pos_;
      *out = Json::Array();
      return absl::OkStatus();
    }
    while (true) {
      Json value;
      if (absl::Status s = ParseValue(&value, depth); !s.ok()) return s;
      items.push_back(std::move(value));
      SkipWhitespace();
      if (AtEnd()) return Expected("',' or ']' after an array element");
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == ']') {
        ++pos_;
        break;
      }
      return Expected("',' or ']' after an array element");
    }
    *out = Json::Array(std::move(items));
    return absl::OkStatus();
  }

  // Reads the 4 hex digits of a \u escape at pos_ (just after "\u").
  absl::Status ParseHex4(uint32_t* out) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      int h = AtEnd() ? -1 : HexValue(Peek());
      if (h < 0) return Expected("4 hex digits after \\u");
      v = v * 16 + static_cast<uint32_t>(h);
      ++pos_;
    }
    *out = v;
    return absl::OkStatus();
  }

  absl::Status ParseString(std::string* out) {
    ++pos_;  // opening quote
    while (true) {
      // Copy the run of plain characters in one go.
      size_t run = pos_;
      while (run < text_.size()) {
        unsigned char c = static_cast<unsigned char>(text_[run]);
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
        ++run;
      }
      out->append(text_.data() + pos_, run - pos_);
      pos_ = run;
      if (AtEnd()) return Expected("'\"' to close the string");
      unsigned char c = static_cast<unsigned char>(Peek());
      if (c == '"') {
        ++pos_;
        return absl::OkStatus();
      }
      if (c < 0x20) {
        return Error(pos_, absl::StrFormat("control character 0x%02X must be escaped inside a string", c));
      }
      if (c >= 0x80) {
        size_t n = Utf8SequenceLength(text_.substr(pos_));
        if (n == 0) return Error(pos_, "invalid UTF-8 in string");
        out->append(text_.data() + pos_, n);
        pos_ += n;
        continue;
      }
      // Backslash escape.
      size_t escape_pos = pos_;
      ++pos_;
      if (AtEnd()) return Expected("an escape character after '\\'");
      char e = Peek();
      ++pos_;
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          uint32_t cp = 0;
          if (absl::Status s = ParseHex4(&cp); !s.ok()) return s;
          if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return Error(escape_pos, "unpaired low surrogate in \\u escape");
          }
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t low = 0;
            if (text_.substr(pos_, 2) != "\\u") {
              return Error(escape_pos, "high surrogate \\u escape not followed by a low one");
            }
            pos_ += 2;
            if (absl::Status s = ParseHex4(&low); !s.ok()) return s;
            if (low < 0xDC00 || low > 0xDFFF) {
              return Error(escape_pos, "high surrogate \\u escape not followed by a low one");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          AppendUtf8(cp, out);
          break;
        }
        default: pos_ = escape_pos + 1; return Expected("one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u after '\\'");
      }
    }
  }

  absl::Status ParseNumber(Json* out) {
    size_t start = pos_;
    if (Peek() == '-') ++pos_;
    if (AtEnd() || !IsDigit(Peek())) return Expected("a digit");
    size_t int_begin = pos_;
    if (Peek() == '0') {
      ++pos_;
      if (!AtEnd() && IsDigit(Peek())) return Error(pos_ - 1, "numbers must not have leading zeros");
    } else {
      while (!AtEnd() && IsDigit(Peek())) ++pos_;
    }
    size_t int_end = pos_;
    bool is_integer = true;
    size_t frac_begin = pos_, frac_end = pos_;
    if (!AtEnd() && Peek() == '.') {
      is_integer = false;
      ++pos_;
      if (AtEnd() || !IsDigit(Peek())) return Expected("a digit after '.'");
      frac_begin = pos_;
      while (!AtEnd() && IsDigit(Peek())) ++pos_;
      frac_end = pos_;
    }
    int64_t exponent = 0;
    if (!AtEnd() && (Peek() == 'e' || Peek() == 'E')) {
      is_integer = false;
      ++pos_;
      bool negative = false;
      if (!AtEnd() && (Peek() == '+' || Peek() == '-')) {
        negative = Peek() == '-';
        ++pos_;
      }
      if (AtEnd() || !IsDigit(Peek())) return Expected("a digit in the exponent");
      while (!AtEnd() && IsDigit(Peek())) {
        exponent = std::min<int64_t>(exponent * 10 + (Peek() - '0'), 1'000'000'000);
        ++pos_;
      }
      if (negative) exponent = -exponent;
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    if (is_integer) {
      int64_t i;
      auto [ptr, ec] = std::from_chars(first, last, i);
      if (ec == std::errc() && ptr == last) {
        *out = Json(i);
        return absl::OkStatus();
      }
      // Out of int64 range: fall through to double.
    }
    double d;
    auto [ptr, ec] = std::from_chars(first, last, d);
    if (ec == std::errc::result_out_of_range) {
      // Underflow becomes (signed) zero, as in other parsers; overflow is an error. The
      // decimal magnitude tells which: digits before the point, or leading zeros after it.
      int64_t magnitude;
      absl::string_view int_digits = text_.substr(int_begin, int_end - int_begin);
      if (int_digits != "0") {
        magnitude = static_cast<int64_t>(int_digits.size());
      } else {
        absl::string_view frac = text_.substr(frac_begin, frac_end - frac_begin);
        size_t zeros = frac.find_first_not_of('0');
        magnitude = -static_cast<int64_t>(zeros == absl::string_view::npos ? frac.size() : zeros);
      }
      if (magnitude + exponent > 0) {
        return Error(start, "number is too large for a double");
      }
      d = text_[start] == '-' ? -0.0 : 0.0;
    } else if (ec != std::errc() || ptr != last) {
      return Error(start, "malformed number");
    }
    *out = Json(d);
    return absl::OkStatus();
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

// ---------------------------------------------------------------------------------------
// Serialization.

void AppendEscaped(absl::string_view s, std::string* out) {
  out->push_back('"');
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        if (c < 0x20) {
          absl::StrAppendFormat(out, "\\u%04x", c);
        } else {
          out->push_back(ch);
        }
    }
  }
  out->push_back('"');
}

void AppendDouble(double d, std::string* out) {
  if (!std::isfinite(d)) {
    out->append("null");
    return;
  }
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d);  // shortest round-trip form
  assert(ec == std::errc());
  absl::string_view text(buf, static_cast<size_t>(end - buf));
  out->append(text.data(), text.size());
  // Keep doubles distinguishable from exact integers when parsed back: "3" -> "3.0".
  if (text.find_first_of(".e") == absl::string_view::npos) out->append(".0");
}

void AppendJson(const Json& v, std::string* out) {
  switch (v.type()) {
    case Json::Type::kNull: out->append("null"); return;
    case Json::Type::kBool: out->append(v.bool_value() ? "true" : "false"); return;
    case Json::Type::kNumber:
      if (v.is_int()) {
        absl::StrAppend(out, v.int_value());
      } else {
        AppendDouble(v.number_value(), out);
      }
      return;
    case Json::Type::kString: AppendEscaped(v.string_value(), out); return;
    case Json::Type::kArray: {
      out->push_back('[');
      bool first = true;
      for (const Json& item : v.array_items()) {
        if (!first) out->push_back(',');
        first = false;
        AppendJson(item, out);
      }
      out->push_back(']');
      return;
    }
    case Json::Type::kObject: {
      out->push_back('{');
      bool first = true;
      for (const auto& [key, value] : v.object_items()) {
        if (!first) out->push_back(',');
        first = false;
        AppendEscaped(key, out);
        out->push_back(':');
        AppendJson(value, out);
      }
      out->push_back('}');
      return;
    }
  }
}

}  // namespace

absl::StatusOr<Json> Json::Parse(absl::string_view text) { return Parser(text).ParseDocument(); }

std::string Json::Serialize() const {
  std::string out;
  AppendJson(*this, &out);
  return out;
}

Json::Type Json::type() const {
  switch (value_.index()) {
    case 0: return Type::kNull;
    case 1: return Type::kBool;
    case 2:
    case 3: return Type::kNumber;
    case 4: return Type::kString;
    case 5: return Type::kArray;
    default: return Type::kObject;
  }
}

bool Json::bool_value() const {
  assert(is_bool());
  const bool* b = std::get_if<bool>(&value_);
  return b != nullptr && *b;
}

double Json::number_value() const {
  assert(is_number());
  if (const int64_t* i = std::get_if<int64_t>(&value_)) return static_cast<double>(*i);
  if (const double* d = std::get_if<double>(&value_)) return *d;
  return 0.0;
}

int64_t Json::int_value() const {
  assert(is_int());
  const int64_t* i = std::get_if<int64_t>(&value_);
  return i != nullptr ? *i : 0;
}

const std::string& Json::string_value() const {
  assert(is_string());
  static const std::string* const kEmpty = new std::string();
  const std::string* s = std::get_if<std::string>(&value_);
  return s != nullptr ? *s : *kEmpty;
}

const Json::ArrayType& Json::array_items() const {
  assert(is_array());
  static const ArrayType* const kEmpty = new ArrayType();
  const ArrayType* a = std::get_if<ArrayType>(&value_);
  return a != nullptr ? *a : *kEmpty;
}

Json::ArrayType& Json::array_items() {
  assert(is_array());
  if (!is_array()) value_ = ArrayType();
  return std::get<ArrayType>(value_);
}

const Json::ObjectType& Json::object_items() const {
  assert(is_object());
  static const ObjectType* const kEmpty = new ObjectType();
  const ObjectType* o = std::get_if<ObjectType>(&value_);
  return o != nullptr ? *o : *kEmpty;
}

Json::ObjectType& Json::object_items() {
  assert(is_object());
  if (!is_object()) value_ = ObjectType();
  return std::get<ObjectType>(value_);
}

size_t Json::size() const {
  if (const ArrayType* a = std::get_if<ArrayType>(&value_)) return a->size();
  if (const ObjectType* o = std::get_if<ObjectType>(&value_)) return o->size();
  return 0;
}

const Json* Json::Find(absl::string_view key) const {
  const ObjectType* o = std::get_if<ObjectType>(&value_);
  if (o == nullptr) return nullptr;
  for (const auto& [k, v] : *o) {
    if (k == key) return &v;
  }
  return nullptr;
}

Json* Json::Find(absl::string_view key) { return const_cast<Json*>(static_cast<const Json*>(this)->Find(key)); }

Json& Json::Set(absl::string_view key, Json value) {
  if (is_null()) value_ = ObjectType();
  if (Json* existing = Find(key)) {
    *existing = std::move(value);
    return *existing;
  }
  ObjectType& members = object_items();
  members.emplace_back(std::string(key), std::move(value));
  return members.back().second;
}

Json& Json::Append(Json value) {
  if (is_null()) value_ = ArrayType();
  ArrayType& items = array_items();
  items.push_back(std::move(value));
  return items.back();
}

bool operator==(const Json& a, const Json& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Json::Type::kNull: return true;
    case Json::Type::kBool: return a.bool_value() == b.bool_value();
    case Json::Type::kNumber:
      if (a.is_int() && b.is_int()) return a.int_value() == b.int_value();
      return a.number_value() == b.number_value();
    case Json::Type::kString: return a.string_value() == b.string_value();
    case Json::Type::kArray: return a.array_items() == b.array_items();
    case Json::Type::kObject: return a.object_items() == b.object_items();
  }
  return false;
}

absl::string_view JsonTypeName(Json::Type type) {
  switch (type) {
    case Json::Type::kNull: return "null";
    case Json::Type::kBool: return "bool";
    case Json::Type::kNumber: return "number";
    case Json::Type::kString: return "string";
    case Json::Type::kArray: return "array";
    case Json::Type::kObject: return "object";
  }
  return "unknown";
}

}  // namespace pcp
