#include "auth_refusals.h"

#include <string>

#include "pcp/auth/authenticator.h"
#include "pcp/metrics/registry.h"

namespace pcp::shepherd {

void CountAuthRefusal(absl::string_view service, absl::string_view reason) {
  metrics::Get(metrics::kShepherdAuthRefusalsTotal, {std::string(service), std::string(reason)}).Increment();
}

void DeclareAuthRefusals() {
  for (const char* service : {"Admin", "Training", "Control"}) {
    for (absl::string_view reason : {auth::kReasonNoCredential, auth::kReasonBadToken, auth::kReasonUnknownIdentity,
                                     auth::kReasonWrongRole, auth::kReasonNodeMismatch}) {
      metrics::Get(metrics::kShepherdAuthRefusalsTotal, {service, std::string(reason)});
    }
  }
}

}  // namespace pcp::shepherd
