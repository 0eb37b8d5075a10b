#include "pcp/diloco/delta_sum.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "pcp/base/sum_of_squares.h"

namespace pcp::diloco {

DeltaSum::DeltaSum(std::vector<absl::Span<float>> sums)
    : sums_(std::move(sums)), stripes_(kStripes), weight_steps_(sums_.size()) {
  int64_t flat = 0;
  for (const absl::Span<float>& s : sums_) {
    base_.push_back(flat);
    flat += static_cast<int64_t>(s.size());
  }
}

std::unique_ptr<DeltaSum::Contribution> DeltaSum::Begin(std::string who, double weight, double scale,
                                                        double declared_norm) {
  return std::unique_ptr<Contribution>(new Contribution(this, std::move(who), weight, scale, declared_norm));
}

std::vector<std::string> DeltaSum::liars() const {
  std::lock_guard<std::mutex> lock(liars_mu_);
  return liars_;
}

namespace {

// SumOfSquares of values wherever they lie.
double SquaresOf(const F32Pieces& values) {
  SquareBytes squares;
  for (absl::string_view piece : values.pieces()) squares.Add(piece.data(), piece.size());
  return squares.Finish();
}

}  // namespace

double DeltaSum::Contribution::norm() const { return std::sqrt(sum_squares_); }

absl::Status DeltaSum::Contribution::Add(size_t tensor, int64_t offset, const F32Pieces& values,
                                         std::optional<double> sum_of_squares) {
  if (failed_) return absl::FailedPreconditionError("this Δ already broke its declared norm");
  if (tensor >= sum_->sums_.size() || offset < 0 ||
      offset + static_cast<int64_t>(values.size()) > static_cast<int64_t>(sum_->sums_[tensor].size())) {
    return absl::InvalidArgumentError(absl::StrCat("values [", offset, ", ",
                                                   offset + static_cast<int64_t>(values.size()), ") of tensor ", tensor,
                                                   " lie outside the Δ"));
  }
  std::shared_lock<std::shared_mutex> open(sum_->close_mu_);
  if (sum_->closed_) return absl::FailedPreconditionError("the round's sum is closed");
  const double squares = sum_of_squares.has_value() ? *sum_of_squares : SquaresOf(values);
  const double total = sum_squares_ + squares;
  // (A NaN or inf anywhere makes `squares` NaN or inf, which fails both comparisons' negation.)
  // (A declaration below 0 or NaN allows nothing.)
  const double bound = declared_norm_ >= 0 ? declared_norm_ * (1 + 1e-6) + 1e-30 : 0;
  if (!(std::isfinite(squares) && total <= bound * bound)) {
    failed_ = true;
    sum_squares_ = std::isfinite(squares) ? total : squares;
    if (elements_ > 0) sum_->tainted_ = true;
    {
      std::lock_guard<std::mutex> lock(sum_->liars_mu_);
      sum_->liars_.push_back(who_);
    }
    return absl::FailedPreconditionError(
        std::isfinite(squares)
            ? absl::StrCat("the Δ's norm reaches ", std::sqrt(total), ", above the declared ", declared_norm_)
            : std::string("the Δ holds values that are not finite"));
  }
  sum_squares_ = total;
  elements_ += static_cast<int64_t>(values.size());
  sum_->Accumulate(tensor, offset, values, static_cast<float>(weight_ * scale_));
  sum_->AddWeight(tensor, offset, offset + static_cast<int64_t>(values.size()), weight_);
  return absl::OkStatus();
}

void DeltaSum::Accumulate(size_t tensor, int64_t offset, const F32Pieces& values, float factor) {
  float* dst = sums_[tensor].data() + offset;
  int64_t k = 0;
  const int64_t n = static_cast<int64_t>(values.size());
  while (k < n) {
    // The run of elements within one stripe.
    const int64_t flat = base_[tensor] + offset + k;
    const int64_t stripe_end = ((flat >> kStripeShift) + 1) << kStripeShift;
    const int64_t run = std::min(n - k, stripe_end - flat);
    std::lock_guard<std::mutex> lock(stripes_[static_cast<size_t>((flat >> kStripeShift) % kStripes)]);
    values.ForEachRun(static_cast<size_t>(k), static_cast<size_t>(k + run),
                      [dst, factor](size_t index, const char* bytes, size_t count) {
                        float* d = dst + index;
                        for (size_t j = 0; j < count; ++j) d[j] += factor * F32Pieces::Load(bytes, j);
                      });
    k += run;
  }
}

void DeltaSum::AddWeight(size_t tensor, int64_t begin, int64_t end, double weight) {
  if (begin == end) return;
  std::lock_guard<std::mutex> lock(weights_mu_);
  std::map<int64_t, Step>& steps = weight_steps_[tensor];
  steps[begin].weight += weight;
  ++steps[begin].count;
  steps[end].weight -= weight;
  --steps[end].count;
}

void DeltaSum::Finish() {
  std::unique_lock<std::shared_mutex> close(close_mu_);
  closed_ = true;
  covered_ = 0;
  for (size_t t = 0; t < sums_.size(); ++t) {
    float* d = sums_[t].data();
    const int64_t n = static_cast<int64_t>(sums_[t].size());
    double weight = 0;
    int64_t count = 0, at = 0;
    auto divide_until = [&](int64_t end) {
      if (count > 0 && weight > 0) {
        const double inv = 1.0 / weight;
        for (int64_t k = at; k < end; ++k) d[k] = static_cast<float>(static_cast<double>(d[k]) * inv);
        covered_ += end - at;
      } else {
        std::fill(d + at, d + end, 0.0f);
      }
      at = end;
    };
    for (const auto& [boundary, change] : weight_steps_[t]) {
      divide_until(std::min(boundary, n));
      weight += change.weight;
      count += change.count;
    }
    divide_until(n);
  }
}

}  // namespace pcp::diloco
