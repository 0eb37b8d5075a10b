#include "pcp/diloco/trimmed_mean.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace pcp::diloco {

size_t TrimCount(size_t n, double fraction) {
  const size_t trim = static_cast<size_t>(std::floor(fraction * static_cast<double>(n)));
  // fraction < 0.5 keeps at least one value; guard against rounding all the same.
  return 2 * trim >= n ? (n - 1) / 2 : trim;
}

absl::Status TrimmedMean(absl::Span<const absl::Span<const float>> inputs, absl::Span<const double> weights,
                         double fraction, absl::Span<float> out) {
  if (inputs.empty()) return absl::InvalidArgumentError("trimmed mean: no inputs");
  if (weights.size() != inputs.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("trimmed mean: ", inputs.size(), " inputs but ", weights.size(), " weights"));
  }
  if (!(fraction >= 0 && fraction < 0.5)) {
    return absl::InvalidArgumentError(absl::StrCat("trimmed mean: fraction must be in [0, 0.5), got ", fraction));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].size() != out.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("trimmed mean: input ", i, " has ", inputs[i].size(), " values, expected ", out.size()));
    }
    if (!(weights[i] > 0) || !std::isfinite(weights[i])) {
      return absl::InvalidArgumentError(absl::StrCat("trimmed mean: weight ", i, " must be > 0, got ", weights[i]));
    }
  }
  const size_t n = inputs.size();
  const size_t trim = TrimCount(n, fraction);
  std::vector<std::pair<float, double>> column(n);
  for (size_t k = 0; k < out.size(); ++k) {
    for (size_t i = 0; i < n; ++i) column[i] = {inputs[i][k], weights[i]};
    // Ties are broken by weight so the result does not depend on the order of the inputs.
    if (trim > 0) std::sort(column.begin(), column.end());
    double acc = 0, total = 0;
    for (size_t i = trim; i < n - trim; ++i) {
      acc += column[i].second * static_cast<double>(column[i].first);
      total += column[i].second;
    }
    out[k] = static_cast<float>(acc / total);
  }
  return absl::OkStatus();
}

}  // namespace pcp::diloco
