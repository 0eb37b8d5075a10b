#include "pcp/base/sum_of_squares.h"

namespace pcp {

double SumOfSquares(absl::Span<const float> values) {
  const size_t groups = values.size() / kSquareLanes;
  SquareLanes lanes;
  lanes.AddGroups(values.data(), groups);
  return lanes.Finish(values.data() + groups * kSquareLanes, values.size() - groups * kSquareLanes);
}

}  // namespace pcp
