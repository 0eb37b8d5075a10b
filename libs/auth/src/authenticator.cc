#include "pcp/auth/authenticator.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pcp/auth/token.h"

namespace pcp::auth {

Authenticator::Authenticator(AuthGrants grants) : grants_(std::move(grants)) {}

absl::StatusOr<Principal> Authenticator::Authenticate(absl::string_view authorization,
                                                      absl::Span<const std::string> peer_identities,
                                                      absl::string_view* reason) const {
  auto refuse = [reason](absl::string_view why, absl::Status status) {
    if (reason != nullptr) *reason = why;
    return status;
  };
  if (!enabled()) return Principal{};
  if (!authorization.empty()) {
    absl::StatusOr<absl::string_view> token = BearerToken(authorization);
    if (!token.ok()) return refuse(kReasonBadToken, token.status());
    const std::string digest = TokenSha256(*token);
    // Every grant is compared, matched or not, so the time does not tell which one matched.
    const TokenGrant* match = nullptr;
    for (const TokenGrant& grant : grants_.tokens) {
      if (ConstantTimeEquals(digest, grant.sha256) && match == nullptr) match = &grant;
    }
    if (match == nullptr)
      return refuse(kReasonBadToken, absl::UnauthenticatedError("the bearer token is not known to this shepherd"));
    return Principal{.name = match->name, .roles = match->roles, .via = Principal::Via::kToken};
  }
  for (const std::string& id : peer_identities) {
    for (const IdentityGrant& grant : grants_.identities) {
      if (grant.identity == id) return Principal{.name = id, .roles = grant.roles, .via = Principal::Via::kCertificate};
    }
  }
  if (!peer_identities.empty()) {
    return refuse(kReasonUnknownIdentity,
                  absl::PermissionDeniedError(absl::StrCat("certificate identity '",
                                                           absl::StrJoin(peer_identities, "', '"),
                                                           "' has no role on this shepherd (auth.identities)")));
  }
  return refuse(kReasonNoCredential,
                absl::UnauthenticatedError(
                    "no credential: send a client certificate (mTLS) or an 'authorization: Bearer <token>' header"));
}

absl::Status CheckNodeIdentity(const Principal& principal, absl::string_view supervisor_id) {
  if (principal.via == Principal::Via::kNone || principal.name == supervisor_id) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat("credential '", principal.name, "' may not act as supervisor '",
                                                  supervisor_id, "': a node credential is bound to its own id"));
}

}  // namespace pcp::auth
