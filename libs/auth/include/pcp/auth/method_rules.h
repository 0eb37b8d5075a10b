// Which roles may call which gRPC method: a service's table, declared once, and the
// decision for one call.
//
//   constexpr MethodRule kRules[] = {
//       {"/pcp.v1.Admin/GetJob", {Role::kViewer, Role::kAdmin}},
//       {"/pcp.v1.Admin/CancelJob", {Role::kAdmin}, Audit::kYes},
//       {"/grpc.health.v1.Health/", kOpen},          // a trailing '/' covers a whole service
//   };
//   const MethodRule* rule = FindMethodRule(kRules, "/pcp.v1.Admin/GetJob");
//   absl::Status ok = Authorize(rule, "/pcp.v1.Admin/GetJob", principal, /*auth_enabled=*/true, &reason);
//
// A method in no table is refused (PERMISSION_DENIED) while auth is on: a new RPC is closed
// until someone gives it a row.
#ifndef PCP_AUTH_METHOD_RULES_H_
#define PCP_AUTH_METHOD_RULES_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "pcp/auth/authenticator.h"
#include "pcp/auth/role.h"

namespace pcp::auth {

enum class Audit { kNo, kYes };

// No role needed (health checks, reflection).
inline constexpr RoleSet kOpen{};

struct MethodRule {
  absl::string_view method;  // "/package.Service/Method", or "/package.Service/" for all of it
  RoleSet roles;             // any of these; kOpen = anyone, even without a credential
  Audit audit = Audit::kNo;  // one audit line per call (mutations)
};

// The exact rule for `method`, else its service's "/package.Service/" rule, else null.
const MethodRule* FindMethodRule(absl::Span<const MethodRule> rules, absl::string_view method);

// OK when `principal` may call `method` under `rule` (null: no rule). With auth off every
// call passes. On refusal *reason is a kReason* constant (pcp/auth/authenticator.h).
absl::Status Authorize(const MethodRule* rule, absl::string_view method, const Principal& principal, bool auth_enabled,
                       absl::string_view* reason);

// "pcp.v1.Admin/GetJob" -> "Admin" (the `service` label of refusal metrics); "" if malformed.
absl::string_view ServiceLabel(absl::string_view method);

}  // namespace pcp::auth

#endif  // PCP_AUTH_METHOD_RULES_H_
