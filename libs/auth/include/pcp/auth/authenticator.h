// Who is calling: a certificate identity (the peer's SAN, else its CN, as gRPC reports it)
// or a bearer token, mapped to roles by the shepherd's configuration (shepherd.yaml `auth:`).
//
//   Authenticator authn({.identities = {{.identity = "node-1", .roles = {Role::kNode}}},
//                        .tokens = {{.name = "ops", .sha256 = TokenSha256("s3cret"), .roles = {Role::kAdmin}}}});
//   absl::StatusOr<Principal> p = authn.Authenticate("Bearer s3cret", /*peer_identities=*/{});
//   p->name == "ops";  p->via == Principal::Via::kToken;
//
// Rules: a call that carries an "authorization" value is judged by its token alone (a wrong
// token is UNAUTHENTICATED even with a good certificate); otherwise the first peer identity
// that has a grant wins. A verified certificate without a grant is PERMISSION_DENIED (its
// holder is known, and has no role); no credential at all is UNAUTHENTICATED. Messages
// name what is missing and never a token. Tokens are compared by their SHA-256, in constant
// time, against every grant.
#ifndef PCP_AUTH_AUTHENTICATOR_H_
#define PCP_AUTH_AUTHENTICATOR_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "pcp/auth/role.h"

namespace pcp::auth {

// A certificate identity's roles.
struct IdentityGrant {
  std::string identity;  // SAN (DNS/URI/IP/email) or CN, exactly as in the certificate
  RoleSet roles;
};

// A bearer token's roles; only the token's SHA-256 is kept.
struct TokenGrant {
  std::string name;    // shown in logs and audit lines instead of the token
  std::string sha256;  // TokenSha256(token), 64 lowercase hex digits
  RoleSet roles;
};

// Every grant of a shepherd (shepherd.yaml `auth:`).
struct AuthGrants {
  std::vector<IdentityGrant> identities;
  std::vector<TokenGrant> tokens;
  bool empty() const { return identities.empty() && tokens.empty(); }
};

// The authenticated caller.
struct Principal {
  enum class Via { kNone, kCertificate, kToken };
  std::string name;  // the identity or the token grant's name; "" when auth is off
  RoleSet roles;
  Via via = Via::kNone;
};

// Why a call was refused: the `reason` label of pcp_shepherd_auth_refusals_total.
inline constexpr absl::string_view kReasonNoCredential = "no_credential";
inline constexpr absl::string_view kReasonBadToken = "bad_token";
inline constexpr absl::string_view kReasonUnknownIdentity = "unknown_identity";
inline constexpr absl::string_view kReasonWrongRole = "wrong_role";
inline constexpr absl::string_view kReasonNodeMismatch = "node_mismatch";

class Authenticator {
 public:
  Authenticator() = default;  // no grants: disabled
  explicit Authenticator(AuthGrants grants);

  // False with no grants at all: every caller is let in, as an anonymous principal.
  bool enabled() const { return !grants_.empty(); }

  // `authorization`: the call's "authorization" metadata ("" if none). `peer_identities`:
  // the verified certificate's identities (empty without a client certificate).
  // On refusal, *reason (if given) is set to one of the kReason* constants.
  absl::StatusOr<Principal> Authenticate(absl::string_view authorization, absl::Span<const std::string> peer_identities,
                                         absl::string_view* reason = nullptr) const;

 private:
  AuthGrants grants_;
};

// PERMISSION_DENIED unless a node principal acts for its own supervisor id: the credential
// issued to node-2 cannot claim node-1's slot. OK when auth is off (Via::kNone).
absl::Status CheckNodeIdentity(const Principal& principal, absl::string_view supervisor_id);

}  // namespace pcp::auth

#endif  // PCP_AUTH_AUTHENTICATOR_H_
