// A small JSON value: null, bool, number, string, array, object (keys keep insertion order).
//
//   PCP_ASSIGN_OR_RETURN(Json doc, Json::Parse(text), _ << "reading " << path);
//   if (const Json* step = doc.Find("step"); step != nullptr && step->is_int()) {
//     int64_t s = step->int_value();
//   }
//   Json meta = Json::Object();
//   meta.Set("step", 100);                      // exact int64
//   meta.Set("loss", 2.5);                      // double
//   meta.Set("shape", Json::Array({2, 3}));
//   std::string compact = meta.Serialize();     // {"step":100,"loss":2.5,"shape":[2,3]}
//
// Numbers: a literal written without fraction or exponent that fits in int64 is kept exactly
// (is_int(); int_value()), so byte offsets and step counters above 2^53 survive a round
// trip. Every number also has a double value (number_value()). Serialize() writes integers
// in decimal and doubles in the shortest form that parses back to the same double; NaN and
// infinities, which JSON cannot express, are written as null (as JavaScript does).
//
// Parse() follows RFC 8259 strictly (no comments, no trailing commas, no NaN literals, no
// leading zeros; strings must be valid UTF-8 with no raw control characters and no
// unpaired \u surrogates) and additionally rejects duplicate keys in one object. Errors are
// INVALID_ARGUMENT with a 1-based "line:column: " prefix (column counted in bytes) and say
// what was expected, e.g. "3:14: expected ',' or '}' after an object member, found 'x'".
//
// Accessors of the wrong type (string_value() of a number, ...) are programmer errors:
// they assert in debug builds and return an empty value in release builds. Check the type
// first (is_string(), ...) when handling input. Object lookup (Find) is a linear scan.
#ifndef PCP_BASE_JSON_H_
#define PCP_BASE_JSON_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pcp {

class Json {
 public:
  enum class Type : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };
  using ArrayType = std::vector<Json>;
  using ObjectType = std::vector<std::pair<std::string, Json>>;  // insertion order

  // Null.
  Json() = default;
  Json(std::nullptr_t) {}      // NOLINT: implicit, like the other scalar constructors.
  Json(bool b) : value_(b) {}  // NOLINT
  // Integers are stored exactly (unsigned values above INT64_MAX become doubles).
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Json(T i) {  // NOLINT
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(int64_t)) {
      if (i > static_cast<T>(INT64_MAX)) {
        value_ = static_cast<double>(i);
        return;
      }
    }
    value_ = static_cast<int64_t>(i);
  }
  Json(double d) : value_(d) {}                          // NOLINT
  Json(const char* s) : value_(std::string(s)) {}        // NOLINT
  Json(std::string s) : value_(std::move(s)) {}          // NOLINT
  Json(absl::string_view s) : value_(std::string(s)) {}  // NOLINT

  static Json Array(ArrayType items = {}) { return Json(Tag{}, std::move(items)); }
  static Json Array(std::initializer_list<Json> items) { return Array(ArrayType(items)); }
  static Json Object(ObjectType members = {}) { return Json(Tag{}, std::move(members)); }

  // Parses one JSON text (surrounding whitespace allowed, nothing else after it).
  // Nesting deeper than kMaxDepth arrays/objects is rejected.
  static absl::StatusOr<Json> Parse(absl::string_view text);
  static constexpr int kMaxDepth = 512;

  // Compact text: no whitespace, keys in insertion order, strings escaped (", \ and
  // control characters; other bytes, including UTF-8, are written as they are).
  std::string Serialize() const;

  Type type() const;
  bool is_null() const { return type() == Type::kNull; }
  bool is_bool() const { return type() == Type::kBool; }
  bool is_number() const { return type() == Type::kNumber; }
  // A number held exactly as int64 (an integer literal in range, or built from an integer).
  bool is_int() const { return std::holds_alternative<int64_t>(value_); }
  bool is_string() const { return type() == Type::kString; }
  bool is_array() const { return type() == Type::kArray; }
  bool is_object() const { return type() == Type::kObject; }

  bool bool_value() const;
  // Any number as a double (int64 values beyond 2^53 are rounded).
  double number_value() const;
  // Requires is_int().
  int64_t int_value() const;
  const std::string& string_value() const;
  const ArrayType& array_items() const;
  ArrayType& array_items();
  const ObjectType& object_items() const;
  ObjectType& object_items();

  // Number of array items or object members; 0 for other types.
  size_t size() const;
  // Member `key` of an object, or nullptr if absent or this is not an object.
  const Json* Find(absl::string_view key) const;
  Json* Find(absl::string_view key);
  // Object: replaces member `key` or appends it. Requires is_object() (or null, which
  // becomes an empty object first).
  Json& Set(absl::string_view key, Json value);
  // Array: appends. Requires is_array() (or null, which becomes an empty array first).
  Json& Append(Json value);

  // Structural equality; numbers compare by value (1 == 1.0), object members by order.
  friend bool operator==(const Json& a, const Json& b);

 private:
  struct Tag {};
  Json(Tag, ArrayType items) : value_(std::move(items)) {}
  Json(Tag, ObjectType members) : value_(std::move(members)) {}

  std::variant<std::monostate, bool, int64_t, double, std::string, ArrayType, ObjectType> value_;
};

// "null", "bool", "number", "string", "array", "object" (for error messages).
absl::string_view JsonTypeName(Json::Type type);

}  // namespace pcp

#endif  // PCP_BASE_JSON_H_
