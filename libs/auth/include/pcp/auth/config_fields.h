// The YAML sections of security settings, declared once for every config file that has
// them (shepherd.yaml: `tls`, `auth`; supervisor.yaml: `tls`), on the shared table-driven
// parser (pcp/config/yaml_fields.h).
//
//   SectionField("tls", &ShepherdConfig::tls, &auth::TlsFields()),
//   SectionField("auth", &ShepherdConfig::auth, &auth::AuthGrantsFields()),
//
//   tls:
//     ca: /etc/pcp/ca.crt            # server: client CA (set = mTLS); client: the shepherd's CA
//     cert: credential:shepherd.crt  # PEM; credential:NAME = $CREDENTIALS_DIRECTORY/NAME
//     key: credential:shepherd.key
//     refresh_interval_s: 10         # re-read the files this often (rotation, no restart)
//   auth:
//     identities:                    # certificate identity (SAN, else CN) -> roles
//       - {identity: node-1, roles: [node]}
//     tokens:                        # bearer tokens, by SHA-256 (pcp/auth/token.h)
//       - {name: ops, sha256: 9f86d0..., roles: [admin]}
#ifndef PCP_AUTH_CONFIG_FIELDS_H_
#define PCP_AUTH_CONFIG_FIELDS_H_

#include <vector>

#include "pcp/auth/authenticator.h"
#include "pcp/auth/tls_credentials.h"
#include "pcp/config/yaml_fields.h"

namespace pcp::auth {

const std::vector<yaml_fields::Field<TlsFiles>>& TlsFields();
const std::vector<yaml_fields::Field<AuthGrants>>& AuthGrantsFields();

}  // namespace pcp::auth

#endif  // PCP_AUTH_CONFIG_FIELDS_H_
