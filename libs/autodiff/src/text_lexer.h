// Private to the text parser: tokens of MLIR's generic and pretty (custom) operation syntax,
// as far as PCP's text form needs them, with positions for "source:line:col" error messages.
//
//   Lexer lexer(text, "step.mlir");
//   for (Token t = lexer.Next(); t.kind != TokenKind::kEof; t = lexer.Next()) { ... }
//
// Lexing never fails: an invalid character or an unterminated string becomes a kError token
// whose Describe() says what is wrong, so the parser's "expected X, got Y" message names it.
// Dimension lists ("4x8xf32") are not tokens; the parser scans them with ScanDimensions.
// Source locations (`loc("file":3:4)`, `loc(#loc1)`, `loc(fused[...])`) are single kLocation
// tokens, which the parser skips: PCP keeps no debug locations.
#ifndef PCP_AUTODIFF_SRC_TEXT_LEXER_H_
#define PCP_AUTODIFF_SRC_TEXT_LEXER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pcp::text_internal {

enum class TokenKind : uint8_t {
  kEof,
  kError,          // text: the offending character(s); message in Token::error
  kBareId,         // f32, tensor, pcp.name, true
  kPercentId,      // %0, %arg1, %x.y, %0#1 (a result of a multi-result op; text includes '%')
  kCaretId,        // ^bb0 (text includes '^')
  kHashId,         // #stablehlo.dot (text includes '#')
  kAtId,           // @main, @"a b" (text includes '@'; see SymbolName)
  kLocation,       // loc(...) with balanced parentheses
  kMetadataBegin,  // {-#  (file metadata: dialect resources)
  kMetadataEnd,    // #-}
  kString,         // "..." (text includes the quotes; see DecodeString)
  kInteger,        // 42, 0x7F800000
  kFloat,          // 1.5, 1.000000e+00, 2.
  kLParen,
  kRParen,
  kLBrace,
  kRBrace,
  kLSquare,
  kRSquare,
  kLess,
  kGreater,
  kComma,
  kColon,
  kEqual,
  kArrow,
  kMinus,
  kQuestion,
  kStar,
};

struct Token {
  TokenKind kind = TokenKind::kEof;
  absl::string_view text;
  size_t offset = 0;
  const char* error = nullptr;  // kError only: what is wrong
};

// "'foo'", "end of input", "unterminated string", ...: the "got Y" of parse errors.
std::string Describe(const Token& token);
// Spelling of a kind for "expected X" messages: "')'", "'->'", "a string", ...
absl::string_view KindName(TokenKind kind);
// The value of a kString token (escapes \\ \" \n \t and \XX hex resolved).
std::string DecodeString(const Token& token);
// The name of a kAtId token: "main" for @main, "a b" for @"a b".
std::string SymbolName(const Token& token);
// MLIR's escaping of a string literal body (llvm::printEscapedString): printable ASCII as is,
// '\\' as "\\\\", everything else (including '"') as \XX with uppercase hex digits.
std::string EscapeString(absl::string_view s);

class Lexer {
 public:
  Lexer(absl::string_view text, absl::string_view source_name) : text_(text), source_name_(source_name) {}

  // Skips white space and // comments, then returns the next token.
  Token Next();
  // Moves the read position (the parser uses this to re-scan after a '<').
  void Seek(size_t offset) { pos_ = offset <= text_.size() ? offset : text_.size(); }
  size_t pos() const { return pos_; }

  // Scans "([0-9]+x)*" at the read position, e.g. "4x8x" of "4x8xf32>", appending to
  // `dims`; the read position ends on the element type. Errors for '?' / '*' dimensions,
  // overflowing or oversized dimensions, and a missing 'x'.
  absl::Status ScanDimensions(std::vector<int64_t>* dims);

  // "source:line:col" of a byte offset (line and column count from 1, columns in bytes).
  std::string Location(size_t offset) const;
  // InvalidArgument "source:line:col: message".
  absl::Status Error(size_t offset, absl::string_view message) const;

 private:
  Token Make(TokenKind kind, size_t start) const { return Token{kind, text_.substr(start, pos_ - start), start}; }
  Token MakeError(size_t start, const char* what);
  Token LexNumber(size_t start);
  Token LexString(size_t start);
  Token LexPrefixedId(size_t start, TokenKind kind);
  Token LexSymbol(size_t start);
  // pos_ is on the '(' after "loc"; skips to the matching ')'.
  Token LexLocation(size_t start);

  absl::string_view text_;
  absl::string_view source_name_;
  size_t pos_ = 0;
};

// Largest dimension size and element count a type may have: far beyond any real tensor, and
// small enough that shape arithmetic in type inference cannot overflow int64.
inline constexpr int64_t kMaxDimension = int64_t{1} << 40;
inline constexpr int64_t kMaxElements = int64_t{1} << 48;

}  // namespace pcp::text_internal

#endif  // PCP_AUTODIFF_SRC_TEXT_LEXER_H_
