// Character- and byte-level tokenizers, as nanoGPT's shakespeare_char data preparation.
//
//   PCP_ASSIGN_OR_RETURN(Tokenizer tok, Tokenizer::BuildChar(corpus));   // 65 for Shakespeare
//   PCP_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tok.Encode("hello"));
//   PCP_ASSIGN_OR_RETURN(std::string text, tok.Decode(ids));
//   std::string saved = tok.Serialize();                                 // "v1:char:0a2021..."
//   PCP_ASSIGN_OR_RETURN(Tokenizer again, Tokenizer::Deserialize(saved));
//
// A "character" is one byte: the char vocabulary is the sorted set of distinct bytes of the
// corpus, so token id i is the i-th smallest byte. For an ASCII corpus this is exactly
// nanoGPT's `chars = sorted(list(set(data)))` (which works on Unicode code points).
// The byte tokenizer is the identity on bytes (vocabulary 256).
#ifndef PCP_TRAINING_TOKENIZER_H_
#define PCP_TRAINING_TOKENIZER_H_

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace pcp {

enum class TokenizerKind { kChar, kByte };

// Every kind with its name ("char", "byte"): the one place the names are spelled.
inline constexpr std::pair<TokenizerKind, absl::string_view> kTokenizerKindNames[] = {
    {TokenizerKind::kChar, "char"},
    {TokenizerKind::kByte, "byte"},
};
absl::string_view TokenizerKindName(TokenizerKind kind);

class Tokenizer {
 public:
  // The byte tokenizer (vocabulary 256, id == byte value).
  Tokenizer();
  static Tokenizer Byte() { return Tokenizer(); }
  // The char tokenizer of `corpus`: its distinct bytes in increasing order. Error if empty.
  static absl::StatusOr<Tokenizer> BuildChar(absl::string_view corpus);
  // A char tokenizer with the given vocabulary (id order); must be strictly increasing bytes.
  static absl::StatusOr<Tokenizer> FromChars(absl::string_view chars);

  TokenizerKind kind() const { return kind_; }
  int64_t vocab_size() const { return kind_ == TokenizerKind::kByte ? 256 : static_cast<int64_t>(chars_.size()); }
  // The char vocabulary in id order (empty for the byte tokenizer).
  const std::string& chars() const { return chars_; }

  // Token ids of `text`. A byte outside a char vocabulary is an error naming the byte and
  // its (0-based byte) position. Ids are always < 256, so they fit uint16.
  absl::StatusOr<std::vector<int32_t>> Encode(absl::string_view text) const;
  absl::StatusOr<std::vector<uint16_t>> EncodeCompact(absl::string_view text) const;
  // Text of `ids`; an id outside [0, vocab_size) is an error naming it and its position.
  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids) const;

  // A printable, single-line string, suitable for checkpoint metadata:
  //   "v1:byte"                 the byte tokenizer
  //   "v1:char:<hex>"           char tokenizer; <hex> = the vocabulary bytes in id order, two
  //                             lowercase hex digits each ("0a20" = {'\n', ' '})
  std::string Serialize() const;
  // Inverse of Serialize (hex digits of either case); anything else is InvalidArgument.
  static absl::StatusOr<Tokenizer> Deserialize(absl::string_view text);

  bool operator==(const Tokenizer& other) const { return kind_ == other.kind_ && chars_ == other.chars_; }

 private:
  template <typename Id>
  absl::StatusOr<std::vector<Id>> EncodeAs(absl::string_view text) const;

  TokenizerKind kind_ = TokenizerKind::kByte;
  std::string chars_;                 // char kind: vocabulary in id order
  std::array<int16_t, 256> id_of_{};  // char kind: byte -> id, or -1
};

}  // namespace pcp

#endif  // PCP_TRAINING_TOKENIZER_H_
