#include "text_lexer.h"

#include "absl/strings/str_cat.h"

namespace pcp::text_internal {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
// MLIR: bare-id ::= (letter|[_]) (letter|digit|[_$.])*
bool IsBareIdChar(char c) { return IsLetter(c) || IsDigit(c) || c == '_' || c == '$' || c == '.'; }
// MLIR: suffix-id ::= digit+ | (letter|[$._-]) (letter|digit|[$._-])*
bool IsSuffixIdChar(char c) { return IsLetter(c) || IsDigit(c) || c == '$' || c == '.' || c == '_' || c == '-'; }
int HexValue(char c) {
  if (IsDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

std::string Printable(absl::string_view s) {
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7F) {
      out.push_back(c);
    } else {
      static constexpr char kHex[] = "0123456789ABCDEF";
      absl::StrAppend(&out, "\\x", std::string(1, kHex[u >> 4]), std::string(1, kHex[u & 15]));
    }
  }
  return out;
}

}  // namespace

std::string Describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::kEof: return "end of input";
    case TokenKind::kError:  // may run to the end of the input (an unterminated location)
      if (t.text.size() > 40) return absl::StrCat(t.error, " '", Printable(t.text.substr(0, 40)), "...'");
      return absl::StrCat(t.error, " '", Printable(t.text), "'");
    case TokenKind::kString:  // already quoted
      return t.text.size() > 42 ? absl::StrCat(Printable(t.text.substr(0, 40)), "...\"") : Printable(t.text);
    default: {
      absl::string_view text = t.text;
      if (text.size() > 40) return absl::StrCat("'", Printable(text.substr(0, 40)), "...'");
      return absl::StrCat("'", Printable(text), "'");
    }
  }
}

absl::string_view KindName(TokenKind kind) {
  switch (kind) {
    case TokenKind::kEof: return "end of input";
    case TokenKind::kError: return "a valid token";
    case TokenKind::kBareId: return "an identifier";
    case TokenKind::kPercentId: return "an SSA value name";
    case TokenKind::kCaretId: return "a block label";
    case TokenKind::kHashId: return "an attribute";
    case TokenKind::kAtId: return "a symbol name (@name)";
    case TokenKind::kLocation: return "a location";
    case TokenKind::kMetadataBegin: return "'{-#'";
    case TokenKind::kMetadataEnd: return "'#-}'";
    case TokenKind::kString: return "a string";
    case TokenKind::kInteger: return "an integer";
    case TokenKind::kFloat: return "a floating-point literal";
    case TokenKind::kLParen: return "'('";
    case TokenKind::kRParen: return "')'";
    case TokenKind::kLBrace: return "'{'";
    case TokenKind::kRBrace: return "'}'";
    case TokenKind::kLSquare: return "'['";
    case TokenKind::kRSquare: return "']'";
    case TokenKind::kLess: return "'<'";
    case TokenKind::kGreater: return "'>'";
    case TokenKind::kComma: return "','";
    case TokenKind::kColon: return "':'";
    case TokenKind::kEqual: return "'='";
    case TokenKind::kArrow: return "'->'";
    case TokenKind::kMinus: return "'-'";
    case TokenKind::kQuestion: return "'?'";
    case TokenKind::kStar: return "'*'";
  }
  return "a token";
}

std::string DecodeString(const Token& t) {
  std::string out;
  absl::string_view body = t.text.substr(1, t.text.size() >= 2 ? t.text.size() - 2 : 0);
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\' || i + 1 >= body.size()) {
      out.push_back(c);
      continue;
    }
    char e = body[++i];
    switch (e) {
      case 'n': out.push_back('\n'); break;
      case 't': out.push_back('\t'); break;
      case '"':
      case '\\': out.push_back(e); break;
      default:  // two hex digits, validated by the lexer
        if (i + 1 < body.size()) {
          out.push_back(static_cast<char>(HexValue(e) * 16 + HexValue(body[i + 1])));
          ++i;
        }
    }
  }
  return out;
}

std::string SymbolName(const Token& t) {
  if (t.text.size() >= 2 && t.text[1] == '"') {
    Token body = t;
    body.text = t.text.substr(1);
    return DecodeString(body);
  }
  return std::string(t.text.substr(t.text.empty() ? 0 : 1));
}

std::string EscapeString(absl::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '\\') {
      out += "\\\\";
    } else if (u >= 0x20 && u < 0x7F && c != '"') {
      out.push_back(c);
    } else {
      out.push_back('\\');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  return out;
}

Token Lexer::MakeError(size_t start, const char* what) {
  if (pos_ <= start) pos_ = start + 1 <= text_.size() ? start + 1 : text_.size();
  Token t = Make(TokenKind::kError, start);
  t.error = what;
  return t;
}

Token Lexer::Next() {
  // White space and // comments.
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++pos_;
    } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
      while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    } else {
      break;
    }
  }
  size_t start = pos_;
  if (pos_ >= text_.size()) return Make(TokenKind::kEof, start);
  char c = text_[pos_++];
  switch (c) {
    case '(': return Make(TokenKind::kLParen, start);
    case ')': return Make(TokenKind::kRParen, start);
    case '{':
      if (text_.substr(pos_, 2) == "-#") {
        pos_ += 2;
        return Make(TokenKind::kMetadataBegin, start);
      }
      return Make(TokenKind::kLBrace, start);
    case '}': return Make(TokenKind::kRBrace, start);
    case '[': return Make(TokenKind::kLSquare, start);
    case ']': return Make(TokenKind::kRSquare, start);
    case '<': return Make(TokenKind::kLess, start);
    case '>': return Make(TokenKind::kGreater, start);
    case ',': return Make(TokenKind::kComma, start);
    case ':': return Make(TokenKind::kColon, start);
    case '=': return Make(TokenKind::kEqual, start);
    case '?': return Make(TokenKind::kQuestion, start);
    case '*': return Make(TokenKind::kStar, start);
    case '-':
      if (pos_ < text_.size() && text_[pos_] == '>') {
        ++pos_;
        return Make(TokenKind::kArrow, start);
      }
      return Make(TokenKind::kMinus, start);
    case '"': return LexString(start);
    case '%': return LexPrefixedId(start, TokenKind::kPercentId);
    case '^': return LexPrefixedId(start, TokenKind::kCaretId);
    case '@': return LexSymbol(start);
    case '#':
      if (text_.substr(pos_, 2) == "-}") {
        pos_ += 2;
        return Make(TokenKind::kMetadataEnd, start);
      }
      if (pos_ < text_.size() && (IsLetter(text_[pos_]) || text_[pos_] == '_')) {
        while (pos_ < text_.size() && IsBareIdChar(text_[pos_])) ++pos_;
        return Make(TokenKind::kHashId, start);
      }
      return MakeError(start, "invalid attribute name");
    default: break;
  }
  if (IsDigit(c)) return LexNumber(start);
  if (IsLetter(c) || c == '_') {
    while (pos_ < text_.size() && IsBareIdChar(text_[pos_])) ++pos_;
    if (text_.substr(start, pos_ - start) == "loc" && pos_ < text_.size() && text_[pos_] == '(') {
      return LexLocation(start);
    }
    return Make(TokenKind::kBareId, start);
  }
  return MakeError(start, "unexpected character");
}

Token Lexer::LexNumber(size_t start) {
  // pos_ is one past the first digit.
  if (text_[start] == '0' && pos_ < text_.size() && text_[pos_] == 'x') {
    ++pos_;
    size_t digits = pos_;
    while (pos_ < text_.size() && IsHexDigit(text_[pos_])) ++pos_;
    if (pos_ == digits) return MakeError(start, "hexadecimal literal without digits");
    return Make(TokenKind::kInteger, start);
  }
  while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
  if (pos_ >= text_.size() || text_[pos_] != '.') return Make(TokenKind::kInteger, start);
  ++pos_;
  while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
  if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    size_t p = pos_ + 1;
    if (p < text_.size() && (text_[p] == '+' || text_[p] == '-')) ++p;
    if (p < text_.size() && IsDigit(text_[p])) {
      while (p < text_.size() && IsDigit(text_[p])) ++p;
      pos_ = p;
    }
  }
  return Make(TokenKind::kFloat, start);
}

Token Lexer::LexString(size_t start) {
  while (pos_ < text_.size()) {
    char c = text_[pos_++];
    if (c == '"') return Make(TokenKind::kString, start);
    if (c == '\n' || c == '\r') {
      --pos_;
      return MakeError(start, "unterminated string");
    }
    if (c == '\\') {
      if (pos_ >= text_.size()) break;
      char e = text_[pos_];
      if (e == 'n' || e == 't' || e == '"' || e == '\\') {
        ++pos_;
      } else if (pos_ + 1 < text_.size() && IsHexDigit(e) && IsHexDigit(text_[pos_ + 1])) {
        pos_ += 2;
      } else {
        return MakeError(start, "unknown escape in string");
      }
    }
  }
  return MakeError(start, "unterminated string");
}

Token Lexer::LexPrefixedId(size_t start, TokenKind kind) {
  // A value use may pick one result of a multi-result operation: %0#1 is one token.
  auto result_number = [&] {
    if (kind == TokenKind::kPercentId && pos_ + 1 < text_.size() && text_[pos_] == '#' && IsDigit(text_[pos_ + 1])) {
      for (++pos_; pos_ < text_.size() && IsDigit(text_[pos_]);) ++pos_;
    }
  };
  if (pos_ < text_.size() && IsDigit(text_[pos_])) {
    while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
    result_number();
    return Make(kind, start);
  }
  if (pos_ < text_.size() && IsSuffixIdChar(text_[pos_])) {
    while (pos_ < text_.size() && IsSuffixIdChar(text_[pos_])) ++pos_;
    result_number();
    return Make(kind, start);
  }
  return MakeError(start, kind == TokenKind::kPercentId ? "invalid value name" : "invalid block name");
}

Token Lexer::LexSymbol(size_t start) {
  // pos_ is one past the '@'.
  if (pos_ < text_.size() && text_[pos_] == '"') {
    ++pos_;
    Token s = LexString(pos_ - 1);
    if (s.kind == TokenKind::kError) return s;
    return Make(TokenKind::kAtId, start);
  }
  if (pos_ < text_.size() && (IsLetter(text_[pos_]) || text_[pos_] == '_')) {
    while (pos_ < text_.size() && IsBareIdChar(text_[pos_])) ++pos_;
    return Make(TokenKind::kAtId, start);
  }
  return MakeError(start, "invalid symbol name");
}

Token Lexer::LexLocation(size_t start) {
  int depth = 0;
  while (pos_ < text_.size()) {
    char c = text_[pos_++];
    if (c == '(') {
      ++depth;
    } else if (c == ')') {
      if (--depth == 0) return Make(TokenKind::kLocation, start);
    } else if (c == '"') {
      Token s = LexString(pos_ - 1);
      if (s.kind == TokenKind::kError) return s;
    }
  }
  return MakeError(start, "unterminated location");
}

absl::Status Lexer::ScanDimensions(std::vector<int64_t>* dims) {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == '?' || c == '*') {
      return Error(pos_, c == '?' ? "dynamic dimensions are not supported" : "unranked tensors are not supported");
    }
    if (!IsDigit(c)) return absl::OkStatus();
    size_t start = pos_;
    int64_t value = 0;
    while (pos_ < text_.size() && IsDigit(text_[pos_])) {
      value = value * 10 + (text_[pos_] - '0');
      if (value > kMaxDimension) return Error(start, absl::StrCat("dimension exceeds the limit of ", kMaxDimension));
      ++pos_;
    }
    if (pos_ >= text_.size() || text_[pos_] != 'x') {
      return Error(pos_, absl::StrCat("expected 'x' after dimension ", value));
    }
    ++pos_;
    dims->push_back(value);
  }
  return absl::OkStatus();
}

std::string Lexer::Location(size_t offset) const {
  if (offset > text_.size()) offset = text_.size();
  int64_t line = 1, col = 1;
  for (size_t i = 0; i < offset; ++i) {
    if (text_[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return absl::StrCat(source_name_, ":", line, ":", col);
}

absl::Status Lexer::Error(size_t offset, absl::string_view message) const {
  return absl::InvalidArgumentError(absl::StrCat(Location(offset), ": ", message));
}

}  // namespace pcp::text_internal
