#include "auth_refusals.h"

#include <string>

#include "pcp/metrics/registry.h"

namespace pcp::shepherd {

void CountAuthRefusal(absl::string_view service, absl::string_view reason) {
  metrics::Get(metrics::kShepherdAuthRefusalsTotal, {std::string(service), std::string(reason)}).Increment();
}

}  // namespace pcp::shepherd
