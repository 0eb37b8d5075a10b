#include "pcp/diloco/replica.h"

#include <cstddef>

namespace pcp::diloco {

void ApplyUpdate(absl::Span<float> theta, absl::Span<const float> update) {
  float* __restrict t = theta.data();
  const float* __restrict u = update.data();
  for (size_t i = 0; i < theta.size(); ++i) t[i] = t[i] + u[i];
}

}  // namespace pcp::diloco
