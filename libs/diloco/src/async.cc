#include "pcp/diloco/async.h"

namespace pcp::diloco {

double StalenessScale(StalenessRule rule, uint64_t staleness) {
  switch (rule) {
    case StalenessRule::kInverse: return 1.0 / (1.0 + static_cast<double>(staleness));
    case StalenessRule::kNone: return 1.0;
  }
  return 1.0;
}

}  // namespace pcp::diloco
