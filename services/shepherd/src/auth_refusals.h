// Private: counts a refused call in pcp_shepherd_auth_refusals_total{service,reason}, for
// the authorization interceptor (AuthorizationOptions::on_refusal) and for the services'
// own refusals after it (a node credential acting for another supervisor id).
//
//   CountAuthRefusal("Training", auth::kReasonNodeMismatch);
#ifndef PCP_SHEPHERD_SRC_AUTH_REFUSALS_H_
#define PCP_SHEPHERD_SRC_AUTH_REFUSALS_H_

#include "absl/strings/string_view.h"

namespace pcp::shepherd {

// `service`: "Admin", "Training", "Control" (anything else, e.g. the service part of a made-up
// method a caller sent, is counted as "other": the label set is closed); `reason`: a
// pcp/auth/authenticator.h kReason*.
void CountAuthRefusal(absl::string_view service, absl::string_view reason);

// Counts each TLS handshake the server refuses in pcp_shepherd_tls_refusals_total{reason}
// (pcp/auth/tls_failures.h: gRPC reports them only in its log). Once, before the server starts.
void CountTlsRefusals();

// Creates every {service, reason} series at 0 (at start), so that the family is exported and
// rate() works from the first scrape.
void DeclareAuthRefusals();

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_AUTH_REFUSALS_H_
