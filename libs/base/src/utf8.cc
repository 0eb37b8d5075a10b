#include "pcp/base/utf8.h"

namespace pcp {

size_t Utf8SequenceLength(absl::string_view s) {
  if (s.empty()) return 0;
  auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  auto cont = [&](size_t i) { return i < s.size() && (byte(i) & 0xC0) == 0x80; };
  const unsigned char c = byte(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && byte(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && byte(1) >= 0xA0) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && byte(1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && byte(1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

std::string ToValidUtf8(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  while (!s.empty()) {
    const size_t n = Utf8SequenceLength(s);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      s.remove_prefix(1);
    } else {
      out.append(s.data(), n);
      s.remove_prefix(n);
    }
  }
  return out;
}

}  // namespace pcp
