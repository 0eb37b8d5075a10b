// Coordinate-wise trimmed mean: a robust alternative to the token-weighted average of the
// workers' Δs. For each coordinate, the floor(fraction × n) smallest and as many largest of
// the n values are dropped and the rest averaged, weighted (by tokens, as the plain average
// is). With fraction 0, or too few inputs to drop any, it is the weighted average.
//
//   std::vector<absl::Span<const float>> inputs = {a, b, c, d, e};   // equal lengths
//   std::vector<double> weights = {1024, 1024, 1024, 1024, 512};
//   std::vector<float> out(a.size());
//   PCP_RETURN_IF_ERROR(TrimmedMean(inputs, weights, /*fraction=*/0.2, absl::MakeSpan(out)));
//
// Cost: a sort of n values per coordinate (O(|θ| · n log n)); bench/aggregation_bench.cc
// measures it against the plain average.
#ifndef PCP_DILOCO_TRIMMED_MEAN_H_
#define PCP_DILOCO_TRIMMED_MEAN_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace pcp::diloco {

// How many values a trimmed mean of n values drops at each end.
size_t TrimCount(size_t n, double fraction);

// InvalidArgument for no inputs, lengths that differ from out's, a weight that is not
// finite and positive, or a fraction outside [0, 0.5).
absl::Status TrimmedMean(absl::Span<const absl::Span<const float>> inputs, absl::Span<const double> weights,
                         double fraction, absl::Span<float> out);

}  // namespace pcp::diloco

#endif  // PCP_DILOCO_TRIMMED_MEAN_H_
