#include "pcp/auth/config_fields.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "pcp/auth/token.h"
#include "pcp/base/status_macros.h"

namespace pcp::auth {
namespace {

using yaml_fields::Context;
using yaml_fields::Field;
using yaml_fields::Value;

// `roles: [viewer, admin]`; at least one.
template <typename S>
Field<S> RolesField(absl::string_view key, RoleSet S::*member) {
  return {key,
          [member](const Value& v, Context& ctx, S& out) -> absl::Status {
            PCP_ASSIGN_OR_RETURN(std::vector<std::string> names, yaml_fields::ReadStringList(v, ctx));
            if (names.empty()) return ctx.Error(v.mark, absl::StrCat(v.qkey, ": expected at least one role"));
            RoleSet roles;
            for (const std::string& name : names) {
              absl::StatusOr<Role> role = ParseRole(name);
              if (!role.ok()) return ctx.Error(v.mark, absl::StrCat(v.qkey, ": ", role.status().message()));
              roles.Add(*role);
            }
            out.*member = roles;
            return absl::OkStatus();
          },
          [member](const S& in, int) {
            std::vector<std::string> names;
            for (absl::string_view name : absl::StrSplit((in.*member).ToString(), '|', absl::SkipEmpty())) {
              names.emplace_back(name);
            }
            return yaml_fields::EmitStringList(names);
          }};
}

// The token's SHA-256, checked where it is written.
Field<TokenGrant> Sha256Field() {
  Field<TokenGrant> f = yaml_fields::StringField("sha256", &TokenGrant::sha256, /*allow_empty=*/false);
  auto read = f.parse;
  f.parse = [read](const Value& v, Context& ctx, TokenGrant& out) -> absl::Status {
    PCP_RETURN_IF_ERROR(read(v, ctx, out));
    if (absl::Status s = ValidateTokenSha256(out.sha256); !s.ok()) {
      return ctx.Error(v.mark, absl::StrCat(v.qkey, ": ", s.message()));
    }
    return absl::OkStatus();
  };
  return f;
}

const std::vector<Field<IdentityGrant>>& IdentityFields() {
  static const auto* fields = new std::vector<Field<IdentityGrant>>{
      yaml_fields::StringField("identity", &IdentityGrant::identity, /*allow_empty=*/false),
      RolesField("roles", &IdentityGrant::roles),
  };
  return *fields;
}

const std::vector<Field<TokenGrant>>& TokenFields() {
  static const auto* fields = new std::vector<Field<TokenGrant>>{
      yaml_fields::StringField("name", &TokenGrant::name, /*allow_empty=*/false),
      Sha256Field(),
      RolesField("roles", &TokenGrant::roles),
  };
  return *fields;
}

}  // namespace

const std::vector<Field<TlsFiles>>& TlsFields() {
  static const auto* fields = new std::vector<Field<TlsFiles>>{
      yaml_fields::StringField("ca", &TlsFiles::ca, /*allow_empty=*/true),
      yaml_fields::StringField("cert", &TlsFiles::cert, /*allow_empty=*/true),
      yaml_fields::StringField("key", &TlsFiles::key, /*allow_empty=*/true),
      yaml_fields::IntField("refresh_interval_s", &TlsFiles::refresh_interval_s, yaml_fields::IntRange{1, 86400}),
  };
  return *fields;
}

const std::vector<Field<AuthGrants>>& AuthGrantsFields() {
  static const auto* fields = new std::vector<Field<AuthGrants>>{
      yaml_fields::ListField("identities", &AuthGrants::identities, &IdentityFields()),
      yaml_fields::ListField("tokens", &AuthGrants::tokens, &TokenFields()),
  };
  return *fields;
}

}  // namespace pcp::auth
