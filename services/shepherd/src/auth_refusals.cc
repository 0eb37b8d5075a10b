#include "auth_refusals.h"

#include <string>

#include "pcp/auth/authenticator.h"
#include "pcp/auth/tls_failures.h"
#include "pcp/metrics/registry.h"

namespace pcp::shepherd {

namespace {

// The services the shepherd serves; a refusal of anything else (a made-up method, a service it
// does not have) counts as "other", so the caller cannot add series.
constexpr absl::string_view kServices[] = {"Admin", "Training", "Control", "other"};

}  // namespace

void CountAuthRefusal(absl::string_view service, absl::string_view reason) {
  absl::string_view label = "other";
  for (absl::string_view known : kServices) {
    if (service == known) label = known;
  }
  metrics::Get(metrics::kShepherdAuthRefusalsTotal, {std::string(label), std::string(reason)}).Increment();
}

void CountTlsRefusals() {
  auth::InstallHandshakeFailureHook([](absl::string_view reason) {
    metrics::Get(metrics::kShepherdTlsRefusalsTotal, {std::string(reason)}).Increment();
  });
}

void DeclareAuthRefusals() {
  for (absl::string_view service : kServices) {
    for (absl::string_view reason : {auth::kReasonNoCredential, auth::kReasonBadToken, auth::kReasonUnknownIdentity,
                                     auth::kReasonWrongRole, auth::kReasonNodeMismatch}) {
      metrics::Get(metrics::kShepherdAuthRefusalsTotal, {std::string(service), std::string(reason)});
    }
  }
}

}  // namespace pcp::shepherd
