#include "pcp/diloco/screening.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pcp/base/enum_names.h"

namespace pcp::diloco {

absl::string_view RefusalReasonName(RefusalReason reason) { return NameOf(kRefusalReasonNames, reason); }
absl::string_view ScreenActionName(ScreenAction action) { return NameOf(kScreenActionNames, action); }

void NormAccumulator::Add(absl::Span<const float> chunk) {
  const double sum = SumOfSquares(chunk);
  // NaN or inf in the chunk makes `sum` NaN or inf: one check per chunk, not per element.
  if (!std::isfinite(sum)) finite_ = false;
  sum_squares_ += sum;
}

double NormAccumulator::norm() const {
  return finite_ ? std::sqrt(sum_squares_) : std::numeric_limits<double>::infinity();
}

std::optional<double> Median(absl::Span<const double> values) {
  if (values.empty()) return std::nullopt;
  std::vector<double> v(values.begin(), values.end());
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return lower + (upper - lower) / 2;
}

ScreenThreshold DeltaScreen::RoundThreshold(absl::Span<const double> round_norms) const {
  ScreenThreshold t;
  t.value = std::numeric_limits<double>::infinity();
  std::optional<double> median;
  if (round_norms.size() >= 3) {
    median = Median(round_norms);
    t.basis = "round";
  } else if ((median = PastMedian()).has_value()) {
    t.basis = "past rounds";
  }
  if (median.has_value()) {
    t.median = *median;
    t.value = options_.norm_k * *median;
    t.reason = RefusalReason::kNorm;
  }
  if (options_.max_norm > 0 && options_.max_norm < t.value) {
    t.value = options_.max_norm;
    t.reason = RefusalReason::kMaxNorm;
  }
  return t;
}

double DeltaScreen::JudgedNorm(double norm, uint64_t steps) const {
  if (judged_at_steps_ == 0 || steps == 0) return norm;
  return norm * static_cast<double>(judged_at_steps_) / static_cast<double>(steps);
}

ScreenVerdict DeltaScreen::Judge(double norm, const ScreenThreshold& threshold) const {
  ScreenVerdict v{.norm = norm, .threshold = threshold.value};
  if (!std::isfinite(norm)) {
    v.action = ScreenVerdict::kReject;
    v.reason = RefusalReason::kNonFinite;
    return v;
  }
  if (norm <= threshold.value) return v;
  v.reason = threshold.reason;
  if (options_.action == ScreenAction::kClip) {
    v.action = ScreenVerdict::kClip;
    v.scale = threshold.value / norm;
  } else {
    v.action = ScreenVerdict::kReject;
  }
  return v;
}

void DeltaScreen::EndRound(absl::Span<const double> accepted_norms) {
  std::optional<double> median = Median(accepted_norms);
  if (!median.has_value()) return;
  history_.push_back(*median);
  while (history_.size() > kScreenHistoryRounds) history_.pop_front();
}

std::optional<double> DeltaScreen::PastMedian() const {
  std::vector<double> h(history_.begin(), history_.end());
  return Median(h);
}

absl::Status DeltaScreen::RestoreHistory(absl::Span<const double> medians) {
  for (double m : medians) {
    if (!std::isfinite(m) || m < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("screening history: a round's median norm must be finite and >= 0, not ", m));
    }
  }
  const size_t skip = medians.size() > kScreenHistoryRounds ? medians.size() - kScreenHistoryRounds : 0;
  history_.assign(medians.begin() + static_cast<ptrdiff_t>(skip), medians.end());
  return absl::OkStatus();
}

bool RefusalLedger::Refuse(const std::string& worker) {
  const int64_t n = ++refusals_[worker];
  return quarantine_after_ > 0 && n == quarantine_after_;
}

int64_t RefusalLedger::refusals(const std::string& worker) const {
  auto it = refusals_.find(worker);
  return it == refusals_.end() ? 0 : it->second;
}

void RefusalLedger::Restore(const std::string& worker, int64_t refusals) {
  if (refusals <= 0) return;
  int64_t& n = refusals_[worker];
  n = std::max(n, refusals);
}

bool RefusalLedger::quarantined(const std::string& worker) const {
  return quarantine_after_ > 0 && refusals(worker) >= quarantine_after_;
}

bool AllFinite(absl::Span<const float> values) {
  for (float x : values) {
    if (!std::isfinite(x)) return false;
  }
  return true;
}

}  // namespace pcp::diloco
