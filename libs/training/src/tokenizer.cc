#include "pcp/training/tokenizer.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "pcp/base/enum_names.h"

namespace pcp {
namespace {

constexpr absl::string_view kSerialPrefix = "v1:";

// "'a' (byte 0x61)" or "'\n' (byte 0x0a)".
std::string DescribeByte(unsigned char c) {
  return absl::StrCat("'", absl::CHexEscape(absl::string_view(reinterpret_cast<const char*>(&c), 1)), "' (byte 0x",
                      absl::Hex(c, absl::kZeroPad2), ")");
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

absl::string_view TokenizerKindName(TokenizerKind kind) { return NameOf(kTokenizerKindNames, kind); }

Tokenizer::Tokenizer() { id_of_.fill(-1); }

absl::StatusOr<Tokenizer> Tokenizer::BuildChar(absl::string_view corpus) {
  if (corpus.empty()) {
    return absl::InvalidArgumentError("cannot build a char tokenizer from an empty corpus");
  }
  std::array<bool, 256> present{};
  for (char c : corpus) present[static_cast<unsigned char>(c)] = true;
  std::string chars;
  for (int b = 0; b < 256; ++b) {
    if (present[b]) chars.push_back(static_cast<char>(b));
  }
  return FromChars(chars);
}

absl::StatusOr<Tokenizer> Tokenizer::FromChars(absl::string_view chars) {
  if (chars.empty()) {
    return absl::InvalidArgumentError("a char tokenizer needs at least one character");
  }
  Tokenizer t;
  t.kind_ = TokenizerKind::kChar;
  for (size_t i = 0; i < chars.size(); ++i) {
    auto c = static_cast<unsigned char>(chars[i]);
    if (i > 0 && c <= static_cast<unsigned char>(chars[i - 1])) {
      return absl::InvalidArgumentError(absl::StrCat("char tokenizer vocabulary must be strictly increasing bytes; ",
                                                     DescribeByte(c), " at index ", i, " follows ",
                                                     DescribeByte(static_cast<unsigned char>(chars[i - 1]))));
    }
    t.id_of_[c] = static_cast<int16_t>(i);
  }
  t.chars_ = std::string(chars);
  return t;
}

template <typename Id>
absl::StatusOr<std::vector<Id>> Tokenizer::EncodeAs(absl::string_view text) const {
  std::vector<Id> ids(text.size());
  if (kind_ == TokenizerKind::kByte) {
    for (size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
    return ids;
  }
  for (size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    int16_t id = id_of_[c];
    if (id < 0) {
      return absl::InvalidArgumentError(absl::StrCat("character ", DescribeByte(c), " at position ", i,
                                                     " is not in the tokenizer's vocabulary of ", chars_.size(),
                                                     " characters"));
    }
    ids[i] = static_cast<Id>(id);
  }
  return ids;
}

absl::StatusOr<std::vector<int32_t>> Tokenizer::Encode(absl::string_view text) const { return EncodeAs<int32_t>(text); }

absl::StatusOr<std::vector<uint16_t>> Tokenizer::EncodeCompact(absl::string_view text) const {
  return EncodeAs<uint16_t>(text);
}

absl::StatusOr<std::string> Tokenizer::Decode(absl::Span<const int32_t> ids) const {
  std::string text(ids.size(), '\0');
  const int64_t vocab = vocab_size();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab) {
      return absl::InvalidArgumentError(
          absl::StrCat("token id ", ids[i], " at position ", i, " is outside the vocabulary [0, ", vocab, ")"));
    }
    text[i] = kind_ == TokenizerKind::kByte ? static_cast<char>(ids[i]) : chars_[ids[i]];
  }
  return text;
}

std::string Tokenizer::Serialize() const {
  if (kind_ == TokenizerKind::kByte) return absl::StrCat(kSerialPrefix, "byte");
  return absl::StrCat(kSerialPrefix, "char:", absl::BytesToHexString(chars_));
}

absl::StatusOr<Tokenizer> Tokenizer::Deserialize(absl::string_view text) {
  const absl::string_view original = text;
  auto bad = [original](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("bad serialized tokenizer '",
                                                   absl::CHexEscape(original.substr(0, 64)),
                                                   original.size() > 64 ? "..." : "", "': ", why,
                                                   " (expected \"v1:byte\" or \"v1:char:<hex bytes>\")"));
  };
  if (!absl::ConsumePrefix(&text, kSerialPrefix)) return bad("unknown version");
  if (text == "byte") return Tokenizer::Byte();
  if (!absl::ConsumePrefix(&text, "char:")) return bad("unknown kind");
  if (text.empty() || text.size() % 2 != 0) return bad("hex vocabulary of odd or zero length");
  std::string chars;
  for (size_t i = 0; i < text.size(); i += 2) {
    int hi = HexValue(text[i]), lo = HexValue(text[i + 1]);
    if (hi < 0 || lo < 0) return bad(absl::StrCat("non-hex digit at offset ", i));
    chars.push_back(static_cast<char>(hi * 16 + lo));
  }
  absl::StatusOr<Tokenizer> t = FromChars(chars);
  if (!t.ok()) return bad(t.status().message());
  return t;
}

}  // namespace pcp
