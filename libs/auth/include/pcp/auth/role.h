// The roles a caller of the shepherd can hold, and sets of them. Declared once: the enum,
// the names used in shepherd.yaml and in messages all come from PCP_ROLE_LIST.
//
//   absl::StatusOr<Role> r = ParseRole("viewer");        // Role::kViewer
//   RoleSet admin_or_viewer = RoleSet{Role::kViewer, Role::kAdmin};
//   admin_or_viewer.Contains(Role::kAdmin);              // true
//   admin_or_viewer.ToString();                          // "viewer|admin"
//
// What each role may call is the services' business (a MethodRule table, see
// pcp/auth/method_rules.h); the roles themselves carry no permissions.
#ifndef PCP_AUTH_ROLE_H_
#define PCP_AUTH_ROLE_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pcp::auth {

// V(enumerator, name)
#define PCP_ROLE_LIST(V)                                                       \
  V(kNode, "node")     /* a supervisor or worker: Training.Connect, Control */ \
  V(kViewer, "viewer") /* Admin reads */                                       \
  V(kAdmin, "admin")   /* every Admin call */

enum class Role : uint8_t {
#define PCP_ROLE_ENUM(id, name) id,
  PCP_ROLE_LIST(PCP_ROLE_ENUM)
#undef PCP_ROLE_ENUM
};

absl::string_view RoleName(Role role);
// InvalidArgument naming the valid roles for an unknown name.
absl::StatusOr<Role> ParseRole(absl::string_view name);

// A small set of roles (a bit mask).
class RoleSet {
 public:
  constexpr RoleSet() = default;
  constexpr RoleSet(std::initializer_list<Role> roles) {
    for (Role r : roles) bits_ |= Bit(r);
  }
  void Add(Role role) { bits_ |= Bit(role); }
  bool Contains(Role role) const { return (bits_ & Bit(role)) != 0; }
  bool Intersects(RoleSet other) const { return (bits_ & other.bits_) != 0; }
  bool empty() const { return bits_ == 0; }
  // "viewer|admin"; "" for the empty set.
  std::string ToString() const;
  friend bool operator==(RoleSet a, RoleSet b) { return a.bits_ == b.bits_; }

 private:
  static constexpr uint32_t Bit(Role r) { return uint32_t{1} << static_cast<uint32_t>(r); }
  uint32_t bits_ = 0;
};

}  // namespace pcp::auth

#endif  // PCP_AUTH_ROLE_H_
