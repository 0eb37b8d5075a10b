#include "pcp/auth/token.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "pcp/base/sha256.h"

namespace pcp::auth {

std::string TokenSha256(absl::string_view token) { return Sha256Hex(token); }

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  // Every byte of the longer input is visited whatever the contents, so the time reveals
  // the lengths (public: stored values are all 64 hex digits) but not a matching prefix.
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= x ^ y;
  }
  // volatile: keeps the compiler from turning the loop into an early-exit comparison.
  volatile unsigned char result = diff;
  return result == 0;
}

absl::StatusOr<absl::string_view> BearerToken(absl::string_view authorization) {
  constexpr absl::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size() ||
      !absl::EqualsIgnoreCase(authorization.substr(0, kScheme.size()), kScheme)) {
    return absl::UnauthenticatedError("the 'authorization' metadata is not of the form 'Bearer <token>'");
  }
  absl::string_view token = absl::StripAsciiWhitespace(authorization.substr(kScheme.size()));
  if (token.empty()) return absl::UnauthenticatedError("the 'authorization' metadata has an empty bearer token");
  return token;
}

absl::Status ValidateTokenSha256(absl::string_view hex) {
  bool ok = hex.size() == 64;
  for (char c : hex) ok = ok && (absl::ascii_isdigit(c) || (c >= 'a' && c <= 'f'));
  if (!ok) return absl::InvalidArgumentError("expected the token's SHA-256 as 64 lowercase hex digits");
  return absl::OkStatus();
}

}  // namespace pcp::auth
