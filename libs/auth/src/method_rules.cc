#include "pcp/auth/method_rules.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace pcp::auth {

const MethodRule* FindMethodRule(absl::Span<const MethodRule> rules, absl::string_view method) {
  const MethodRule* service_rule = nullptr;
  for (const MethodRule& rule : rules) {
    if (rule.method == method) return &rule;
    if (absl::EndsWith(rule.method, "/") && absl::StartsWith(method, rule.method)) service_rule = &rule;
  }
  return service_rule;
}

absl::Status Authorize(const MethodRule* rule, absl::string_view method, const Principal& principal, bool auth_enabled,
                       absl::string_view* reason) {
  if (!auth_enabled || (rule != nullptr && rule->roles.empty())) return absl::OkStatus();
  absl::ConsumePrefix(&method, "/");
  if (rule == nullptr) {
    *reason = kReasonWrongRole;
    return absl::PermissionDeniedError(absl::StrCat(method, " is in no role table of this shepherd"));
  }
  if (rule->roles.Intersects(principal.roles)) return absl::OkStatus();
  *reason = kReasonWrongRole;
  const std::string has = principal.roles.empty() ? "no role" : absl::StrCat("role ", principal.roles.ToString());
  return absl::PermissionDeniedError(absl::StrCat("'", principal.name, "' (", has, ") may not call ", method,
                                                  ": it needs role ", rule->roles.ToString()));
}

absl::string_view ServiceLabel(absl::string_view method) {
  absl::ConsumePrefix(&method, "/");
  const size_t slash = method.find('/');
  if (slash == absl::string_view::npos) return "";
  absl::string_view service = method.substr(0, slash);
  const size_t dot = service.rfind('.');
  return dot == absl::string_view::npos ? service : service.substr(dot + 1);
}

}  // namespace pcp::auth
