// Where a secret (a bearer token) or a credential file (a TLS key) comes from: never the
// command line. A *source* names it; only the source travels in flags, configs and logs.
//
//   file:/etc/pcp/admin.token    the file's contents (a bare path means the same)
//   env:PCP_TOKEN                an environment variable's value
//   credential:admin.token       $CREDENTIALS_DIRECTORY/admin.token (systemd LoadCredential=)
//
//   PCP_ASSIGN_OR_RETURN(std::string token, LoadSecret("credential:pcp-node.token"));
//   PCP_ASSIGN_OR_RETURN(std::string key_path, ResolveCredentialPath("credential:node.key"));
//
// Trailing whitespace (the newline an editor or `echo` leaves) is stripped; what is left must be
// one token: one line of printable ASCII without spaces, at most kMaxSecretBytes (so it can
// travel in a gRPC header: a second line used to abort the client inside gRPC, printing the
// header with the token in clear). Errors name the source, never the secret; a file source that
// does not exist is not repeated either, since it may be the token given where its path belongs.
#ifndef PCP_AUTH_SECRET_H_
#define PCP_AUTH_SECRET_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pcp::auth {

// Longest token accepted, and the largest token file read (the token plus trailing whitespace).
inline constexpr size_t kMaxSecretBytes = 4096;
inline constexpr size_t kMaxSecretFileBytes = 8192;

// The secret named by `source`. InvalidArgument for an empty secret, one that is not a token
// (CheckToken) or a malformed source, NotFound for a missing file / variable / credentials
// directory.
absl::StatusOr<std::string> LoadSecret(absl::string_view source);

// OK if `token` is one line of printable ASCII without spaces, at most kMaxSecretBytes; the
// error never contains the token.
absl::Status CheckToken(absl::string_view token);

// A file path for `source`: "credential:NAME" -> "$CREDENTIALS_DIRECTORY/NAME",
// "file:PATH" or PATH -> PATH. "env:" is refused (a file is needed, e.g. for a TLS key that
// gRPC re-reads on rotation). "" stays "".
absl::StatusOr<std::string> ResolveCredentialPath(absl::string_view source);

}  // namespace pcp::auth

#endif  // PCP_AUTH_SECRET_H_
