#include "pcp/base/json.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pcp {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

Json ParseOk(absl::string_view text) {
  absl::StatusOr<Json> v = Json::Parse(text);
  EXPECT_TRUE(v.ok()) << text << ": " << v.status();
  return v.ok() ? *v : Json();
}

TEST(JsonTest, ParsesEveryType) {
  Json v = ParseOk(R"( {"n": null, "t": true, "f": false, "i": -42, "d": 2.5,
                        "s": "hi", "a": [1, [2], {}], "o": {"x": []}} )");
  ASSERT_TRUE(v.is_object());
  EXPECT_EQ(v.size(), 8u);
  EXPECT_TRUE(v.Find("n")->is_null());
  EXPECT_TRUE(v.Find("t")->bool_value());
  EXPECT_FALSE(v.Find("f")->bool_value());
  EXPECT_TRUE(v.Find("i")->is_int());
  EXPECT_EQ(v.Find("i")->int_value(), -42);
  EXPECT_FALSE(v.Find("d")->is_int());
  EXPECT_EQ(v.Find("d")->number_value(), 2.5);
  EXPECT_EQ(v.Find("s")->string_value(), "hi");
  EXPECT_EQ(v.Find("a")->size(), 3u);
  EXPECT_TRUE(v.Find("a")->array_items()[2].is_object());
  EXPECT_TRUE(v.Find("o")->Find("x")->is_array());
  EXPECT_EQ(v.Find("missing"), nullptr);
  EXPECT_EQ(v.Find("i")->Find("x"), nullptr);  // not an object
}

TEST(JsonTest, IntegersAreExactBeyondDoublePrecision) {
  Json v = ParseOk(
      "[9007199254740993, 9223372036854775807, -9223372036854775808, "
      "9223372036854775808, 1.0, 1e2, -0]");
  const auto& a = v.array_items();
  EXPECT_EQ(a[0].int_value(), 9007199254740993);  // 2^53 + 1: not representable as double
  EXPECT_EQ(a[1].int_value(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(a[2].int_value(), std::numeric_limits<int64_t>::min());
  EXPECT_FALSE(a[3].is_int());  // out of int64 range: becomes a double
  EXPECT_EQ(a[3].number_value(), 9223372036854775808.0);
  EXPECT_FALSE(a[4].is_int());
  EXPECT_FALSE(a[5].is_int());
  EXPECT_EQ(a[5].number_value(), 100.0);
  EXPECT_TRUE(a[6].is_int());
  EXPECT_EQ(v.Serialize(),
            "[9007199254740993,9223372036854775807,-9223372036854775808,"
            "9223372036854775808.0,1.0,100.0,0]");
}

TEST(JsonTest, DoublesRoundTripExactly) {
  for (double d : {0.1, -1.0 / 3.0, 1e300, 5e-324, 2.2250738585072014e-308, 123456.789, 1e16, -0.0}) {
    Json v(d);
    std::string text = v.Serialize();
    Json back = ParseOk(text);
    EXPECT_FALSE(back.is_int()) << text;
    EXPECT_EQ(back.number_value(), d) << text;
    EXPECT_EQ(std::signbit(back.number_value()), std::signbit(d)) << text;
  }
  EXPECT_EQ(Json(-0.0).Serialize(), "-0.0");
  EXPECT_EQ(Json(0.5).Serialize(), "0.5");
  EXPECT_EQ(Json(std::nan("")).Serialize(), "null");
  EXPECT_EQ(Json(-HUGE_VAL).Serialize(), "null");
  // Underflow is zero, as in other parsers; overflow is an error.
  EXPECT_EQ(ParseOk("1e-400").number_value(), 0.0);
  EXPECT_TRUE(std::signbit(ParseOk("-0.000001e-400").number_value()));
  EXPECT_THAT(std::string(Json::Parse("[1e400]").status().message()), HasSubstr("1:2: number is too large"));
  EXPECT_THAT(std::string(Json::Parse("-123e307").status().message()), HasSubstr("too large"));
}

TEST(JsonTest, BuildsAndSerializesCompactlyInInsertionOrder) {
  Json meta = Json::Object();
  meta.Set("zeta", 1);
  meta.Set("alpha", Json::Array({1, 2.5, "x", nullptr, true}));
  meta.Set("mid", Json::Object({{"k", "v"}}));
  meta.Set("zeta", "replaced");  // keeps its position
  Json list;
  list.Append(uint64_t{18446744073709551615u});
  list.Append(int64_t{-7});
  meta.Set("list", list);
  EXPECT_EQ(meta.Serialize(), R"({"zeta":"replaced","alpha":[1,2.5,"x",null,true],"mid":{"k":"v"},)"
                              R"("list":[18446744073709551616.0,-7]})");
  EXPECT_EQ(ParseOk(meta.Serialize()), meta);
}

TEST(JsonTest, StringEscapesRoundTrip) {
  std::string raw("q\"b\\s/\b\f\n\r\t\x01\x1f\x7f", 14);
  raw.append("\xC3\xA9\xF0\x9F\x98\x80");
  Json v(raw);
  EXPECT_EQ(v.Serialize(), "\"q\\\"b\\\\s/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\xC3\xA9\xF0\x9F\x98\x80\"");
  EXPECT_EQ(ParseOk(v.Serialize()).string_value(), raw);
  // \u escapes, including a surrogate pair, decode to UTF-8.
  EXPECT_EQ(ParseOk(R"("\u00e9\u20AC\ud83d\ude00\/\u0000")").string_value(),
            std::string("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80/\0", 11));
  // NUL inside a string survives serialization.
  EXPECT_EQ(Json(std::string("a\0b", 3)).Serialize(), "\"a\\u0000b\"");
}

TEST(JsonTest, TextRoundTripsThroughParseAndSerialize) {
  const std::string text = R"({"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2,3],)"
                           R"("data_offsets":[0,24]},"e":[],"o":{},"u":"\u0001 \"x\""})";
  EXPECT_EQ(ParseOk(text).Serialize(), text);
}

TEST(JsonTest, EqualityComparesNumbersByValue) {
  EXPECT_EQ(Json(1), Json(1.0));
  EXPECT_FALSE(Json(1) == Json(2));
  EXPECT_FALSE(Json(1) == Json("1"));
  EXPECT_FALSE(ParseOk(R"({"a":1,"b":2})") == ParseOk(R"({"b":2,"a":1})"));
  EXPECT_EQ(ParseOk("[1, {\"a\": null}]"), Json::Array({1, Json::Object({{"a", nullptr}})}));
}

struct ErrorCase {
  std::string text;
  std::string expected;  // substring of the message, starting with line:column
};

TEST(JsonTest, ErrorsGiveLineColumnAndWhatWasExpected) {
  const ErrorCase cases[] = {
      {"", "1:1: expected a value"},
      {"   \n  ", "2:3: expected a value"},
      {"[1,]", "1:4: expected a value"},
      {"[1 2]", "1:4: expected ',' or ']' after an array element, found '2'"},
      {"[1", "1:3: expected ',' or ']' after an array element, found end of input"},
      {"{\"a\":1,}", "1:8: expected a string key, found '}'"},
      {"{a:1}", "1:2: expected a string key or '}', found 'a'"},
      {"{\"a\" 1}", "1:6: expected ':' after an object key, found '1'"},
      {"{\"a\":1 \"b\":2}", "1:8: expected ',' or '}' after an object member"},
      {"{\n  \"a\": tru\n}", "2:8: expected 'true'"},
      {"nul", "1:1: expected 'null'"},
      {"NaN", "1:1: expected a value"},
      {"+1", "1:1: expected a value"},
      {"01", "1:1: numbers must not have leading zeros"},
      {"-", "1:2: expected a digit, found end of input"},
      {"-a", "1:2: expected a digit, found 'a'"},
      {"1.", "1:3: expected a digit after '.'"},
      {".5", "1:1: expected a value"},
      {"1e", "1:3: expected a digit in the exponent"},
      {"1e+", "1:4: expected a digit in the exponent"},
      {"\"abc", "1:5: expected '\"' to close the string, found end of input"},
      {"\"a\x01\"", "1:3: control character 0x01 must be escaped"},
      {"\"a\nb\"", "1:3: control character 0x0A must be escaped"},
      {"\"\\x\"", "1:3: expected one of"},
      {"\"\\u12G4\"", "1:6: expected 4 hex digits after \\u, found 'G'"},
      {"\"\\ud800\"", "1:2: high surrogate \\u escape not followed by a low one"},
      {"\"\\ud800\\u0041\"", "1:2: high surrogate"},
      {"\"\\udc00\"", "1:2: unpaired low surrogate"},
      {"\"\xff\"", "1:2: invalid UTF-8 in string"},
      {"\"\xC0\xAF\"", "1:2: invalid UTF-8"},          // overlong '/'
      {"\"\xED\xA0\x80\"", "1:2: invalid UTF-8"},      // encoded surrogate
      {"\"\xF4\x90\x80\x80\"", "1:2: invalid UTF-8"},  // above U+10FFFF
      {"\"\xE2\x82\"", "1:2: invalid UTF-8"},          // truncated sequence
      {"{\"a\":1,\n \"a\":2}", "2:2: duplicate key \"a\""},
      {"[1] x", "1:5: expected end of input after the JSON value"},
      {"{} {}", "1:4: expected end of input"},
      {"[\x01]",
       "1:2: expected a value (object, array, string, number, true, false or null), "
       "found byte 0x01"},
  };
  for (const ErrorCase& c : cases) {
    absl::StatusOr<Json> v = Json::Parse(c.text);
    ASSERT_FALSE(v.ok()) << "parsed: " << c.text;
    EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(v.status().message()), StartsWith(c.expected)) << "input: " << c.text;
  }
}

TEST(JsonTest, NestingDepthIsLimited) {
  std::string ok(Json::kMaxDepth, '[');
  ok += std::string(Json::kMaxDepth, ']');
  EXPECT_TRUE(Json::Parse(ok).ok());
  std::string deep(100000, '[');  // would overflow the stack without the limit
  absl::StatusOr<Json> v = Json::Parse(deep);
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(std::string(v.status().message()), HasSubstr("1:513: arrays/objects nested deeper than 512"));
}

TEST(JsonTest, TypeNames) {
  EXPECT_EQ(JsonTypeName(Json().type()), "null");
  EXPECT_EQ(JsonTypeName(Json(1).type()), "number");
  EXPECT_EQ(JsonTypeName(Json::Object().type()), "object");
  EXPECT_EQ(JsonTypeName(Json::Array().type()), "array");
  EXPECT_EQ(JsonTypeName(Json("s").type()), "string");
  EXPECT_EQ(JsonTypeName(Json(false).type()), "bool");
}

}  // namespace
}  // namespace pcp
