// Bearer tokens: how they are stored (SHA-256 hex of the token, never the token), compared
// (constant time) and read from gRPC metadata ("authorization: Bearer <token>", as
// `grpcurl -H 'authorization: Bearer …'` sends it).
//
//   std::string stored = TokenSha256("s3cret");    // 64 lowercase hex digits, for shepherd.yaml
//   ConstantTimeEquals(TokenSha256(presented), stored);
//   absl::StatusOr<absl::string_view> t = BearerToken("Bearer s3cret");   // "s3cret"
//
// The command line that prints a hash for a token file: `sha256sum < token` gives the same
// digest as long as the file has no trailing newline (`printf %s "$TOKEN" | sha256sum`).
#ifndef PCP_AUTH_TOKEN_H_
#define PCP_AUTH_TOKEN_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pcp::auth {

// SHA-256 of the token as 64 lowercase hex digits.
std::string TokenSha256(absl::string_view token);

// True when a == b; the time taken depends on the lengths only, not on where they differ.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

// The token of an "authorization" metadata value "Bearer <token>" (scheme case-insensitive).
// Unauthenticated for any other form; the message never repeats the value.
absl::StatusOr<absl::string_view> BearerToken(absl::string_view authorization);

// InvalidArgument unless `hex` is 64 lowercase hex digits (a TokenSha256 result).
absl::Status ValidateTokenSha256(absl::string_view hex);

}  // namespace pcp::auth

#endif  // PCP_AUTH_TOKEN_H_
