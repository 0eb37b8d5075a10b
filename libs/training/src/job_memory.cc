#include "pcp/training/job_memory.h"

#include <initializer_list>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace pcp {
namespace {

// int64 arithmetic that remembers an overflow instead of wrapping.
class Checked {
 public:
  Checked(int64_t v) : v_(v) {}  // NOLINT(google-explicit-constructor): reads as arithmetic
  Checked operator*(Checked o) const {
    Checked r(0);
    r.overflow_ = overflow_ || o.overflow_ || __builtin_mul_overflow(v_, o.v_, &r.v_);
    return r;
  }
  Checked operator+(Checked o) const {
    Checked r(0);
    r.overflow_ = overflow_ || o.overflow_ || __builtin_add_overflow(v_, o.v_, &r.v_);
    return r;
  }
  std::optional<int64_t> value() const { return overflow_ ? std::nullopt : std::optional<int64_t>(v_); }

 private:
  int64_t v_;
  bool overflow_ = false;
};

// The Δ values the shepherd holds in a round (buffered: every worker's Δ; streaming
// aggregation, pcp/diloco/delta_sum.h: the one sum), each a fragment with Streaming DiLoCo.
Checked DeltaElements(const JobConfig& config, int64_t params) {
  const DiLoCoConfig& d = config.diloco;
  const int64_t fragment = (params + d.streaming.fragments - 1) / d.streaming.fragments;
  const bool streams = diloco::StreamsDeltas(d.aggregation, d.workers, fragment, d.screening.trimmed_mean > 0);
  return Checked(streams ? 1 : d.workers) * Checked(fragment);
}

}  // namespace

std::string FormatBytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024.0 && unit < 6) {
    v /= 1024.0;
    ++unit;
  }
  return unit == 0 ? absl::StrCat(bytes, " B") : absl::StrFormat("%.1f %s", v, kUnits[unit]);
}

absl::StatusOr<JobMemoryEstimate> EstimateJobMemory(const JobConfig& config) {
  const ModelConfig& m = config.model;
  if (m.imported()) {
    // From the imported forward (job_config.h): its parameters, and every value it computes,
    // twice (kept for the backward pass and its gradient).
    const Checked P = m.imported_params, A = m.imported_value_elements;
    const Checked worker = Checked(4) * (Checked(6) * P + Checked(2) * A);
    const Checked shepherd = Checked(4) * (Checked(3) * P + DeltaElements(config, m.imported_params) + A);
    if (!worker.value() || !shepherd.value()) {
      return absl::InvalidArgumentError(absl::StrCat("job '", config.name, "': its sizes overflow 64-bit arithmetic"));
    }
    return JobMemoryEstimate{.job_name = config.name,
                             .parameters = m.imported_params,
                             .worker_bytes = *worker.value(),
                             .shepherd_bytes = *shepherd.value()};
  }
  const Checked V = m.vocab_size > 0 ? m.vocab_size : 1, T = m.block_size, C = m.n_embd, H = m.n_head, L = m.n_layer,
                B = config.training.batch_size;
  // LayerNorm weights (and with bias: every Linear's and LayerNorm's bias) per layer: 2C (13C).
  const Checked per_layer_vectors = m.bias ? 13 : 2, final_ln = m.bias ? 2 : 1;
  const Checked params = V * C + T * C + L * (Checked(12) * C * C + per_layer_vectors * C) + final_ln * C;
  const Checked tokens = B * T;
  const Checked worker =
      Checked(4) *
      (Checked(6) * params + tokens * (L * (Checked(34) * C + Checked(4) * H * T) + Checked(3) * V + Checked(4) * C));
  if (!params.value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("job '", config.name, "': its parameter count overflows 64-bit arithmetic"));
  }
  const Checked shepherd = Checked(4) * (Checked(3) * params + DeltaElements(config, *params.value()) +
                                         tokens * (L * (Checked(17) * C + Checked(2) * H * T) + Checked(2) * V));
  if (!params.value() || !worker.value() || !shepherd.value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("job '", config.name, "': its sizes overflow 64-bit arithmetic (model.n_layer ", m.n_layer,
                     ", model.n_embd ", m.n_embd, ", model.n_head ", m.n_head, ", model.block_size ", m.block_size,
                     ", model.vocab_size ", m.vocab_size, ", training.batch_size ", config.training.batch_size,
                     ", diloco.workers ", config.diloco.workers, "): the estimated memory is over 8 EiB"));
  }
  return JobMemoryEstimate{.job_name = config.name,
                           .parameters = *params.value(),
                           .worker_bytes = *worker.value(),
                           .shepherd_bytes = *shepherd.value()};
}

absl::Status CheckMemoryBudgets(const JobMemoryEstimate& need, const MemoryBudgets& budgets) {
  auto over = [&](absl::string_view where, int64_t estimate, int64_t budget, absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrFormat("job '%s' needs an estimated %s (%d bytes) at %s (%.3g parameters: %s), over the %s memory "
                        "budget of %s (%d bytes)",
                        need.job_name, FormatBytes(estimate), estimate, where, static_cast<double>(need.parameters),
                        what, where == "each worker" ? "worker" : "shepherd", FormatBytes(budget), budget));
  };
  if (budgets.worker_bytes > 0 && need.worker_bytes > budgets.worker_bytes) {
    return over("each worker", need.worker_bytes, budgets.worker_bytes,
                "weights, gradients, AdamW moments, the round's start and Δ, activations of one batch");
  }
  if (budgets.shepherd_bytes > 0 && need.shepherd_bytes > budgets.shepherd_bytes) {
    return over("the shepherd", need.shepherd_bytes, budgets.shepherd_bytes,
                "θ, outer momentum, a snapshot, one Δ per worker (streaming aggregation: one sum), a validation batch");
  }
  return absl::OkStatus();
}

}  // namespace pcp
