// Private: which role may call each method the shepherd serves, declared once. The
// authorization interceptor (pcp/auth/authorization.h) enforces it; handlers only ask
// CallerOf() for the verdict. A new RPC needs a row here, else it is refused while auth is
// on (method_roles_test walks every service's methods to catch a missing row).
//
//   auth::MakeAuthorizationInterceptorFactory({.authenticator = &authn,
//                                              .rules = ShepherdMethodRules(), ...});
#ifndef PCP_SHEPHERD_SRC_METHOD_ROLES_H_
#define PCP_SHEPHERD_SRC_METHOD_ROLES_H_

#include <vector>

#include "pcp/auth/method_rules.h"

namespace pcp::shepherd {

const std::vector<auth::MethodRule>& ShepherdMethodRules();

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_METHOD_ROLES_H_
