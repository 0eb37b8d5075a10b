#include "pcp/auth/role.h"

#include <array>

#include "absl/strings/str_cat.h"

namespace pcp::auth {
namespace {

struct RoleInfo {
  Role role;
  absl::string_view name;
};

constexpr std::array kRoles = {
#define PCP_ROLE_INFO(id, name) RoleInfo{Role::id, name},
    PCP_ROLE_LIST(PCP_ROLE_INFO)
#undef PCP_ROLE_INFO
};

}  // namespace

absl::string_view RoleName(Role role) {
  for (const RoleInfo& r : kRoles) {
    if (r.role == role) return r.name;
  }
  return "?";
}

absl::StatusOr<Role> ParseRole(absl::string_view name) {
  std::string valid;
  for (const RoleInfo& r : kRoles) {
    if (r.name == name) return r.role;
    absl::StrAppend(&valid, valid.empty() ? "" : ", ", r.name);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown role '", name, "'; valid roles: ", valid));
}

std::string RoleSet::ToString() const {
  std::string out;
  for (const RoleInfo& r : kRoles) {
    if (Contains(r.role)) absl::StrAppend(&out, out.empty() ? "" : "|", r.name);
  }
  return out;
}

}  // namespace pcp::auth
