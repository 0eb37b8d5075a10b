#include "pcp/diloco/async.h"

namespace pcp::diloco {

double StalenessScale(StalenessRule rule, uint64_t staleness, uint64_t workers) {
  switch (rule) {
    case StalenessRule::kInverse: return 1.0 / (1.0 + static_cast<double>(staleness));
    case StalenessRule::kBeyondRound: {
      const uint64_t in_round = workers > 0 ? workers - 1 : 0;
      return 1.0 / (1.0 + static_cast<double>(staleness > in_round ? staleness - in_round : 0));
    }
    case StalenessRule::kNone: return 1.0;
  }
  return 1.0;
}

}  // namespace pcp::diloco
