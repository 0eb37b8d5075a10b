#include "pcp/worker/round_runner.h"

#include <chrono>
#include <cmath>
#include <thread>

#include "absl/strings/str_cat.h"
#include "pcp/base/status_macros.h"
#include "pcp/metrics/registry.h"

namespace pcp::worker {

absl::StatusOr<std::vector<Tensor>> Subtract(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return absl::InvalidArgumentError(absl::StrCat(a.size(), " vs ", b.size(), " tensors"));
  std::vector<Tensor> out;
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].dtype() != DType::kF32 || b[i].dtype() != DType::kF32 || a[i].shape() != b[i].shape()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor ", i, ": ", a[i].TypeString(), " minus ", b[i].TypeString()));
    }
    Tensor d(DType::kF32, a[i].shape());
    const float* x = a[i].data<float>();
    const float* y = b[i].data<float>();
    float* z = d.data<float>();
    for (int64_t k = 0; k < d.num_elements(); ++k) z[k] = x[k] - y[k];
    out.push_back(std::move(d));
  }
  return out;
}

bool TakeAnotherStep(double budget_ms, uint32_t min_steps, uint32_t max_steps, uint32_t steps_done, double elapsed_ms) {
  if (steps_done >= max_steps) return false;
  if (budget_ms <= 0 || steps_done < min_steps) return true;
  const double mean_ms = steps_done > 0 ? elapsed_ms / steps_done : 0;
  return elapsed_ms + mean_ms <= budget_ms;
}

absl::StatusOr<RoundOutput> RunRound(InnerLoop& loop, const TokenSequence& shard, const RoundInput& in,
                                     const std::function<bool(uint32_t steps_done)>& keep_going) {
  using Clock = std::chrono::steady_clock;
  if (in.theta.empty()) {
    // Streaming: the loop's θ goes on from the last round.
  } else if (in.reset_optimizer) {
    PCP_RETURN_IF_ERROR(loop.SetParams(in.theta), _ << "loading θ of round " << in.round);
  } else {
    PCP_RETURN_IF_ERROR(loop.LoadParamsKeepOptimizer(in.theta), _ << "loading θ of round " << in.round);
  }
  BatchSampler sampler(in.sampler_seed, in.sampler_cursor);
  static const metrics::Histogram step_seconds = metrics::Get(metrics::kWorkerInnerStepDurationSeconds);
  RoundOutput out;
  double loss_sum = 0, step_ms = 0;
  float last_loss = 0;
  uint32_t steps = 0;
  bool stopped = false;  // keep_going said no
  const auto round_start = Clock::now();
  const auto max_steps = static_cast<uint32_t>(in.learning_rates.size());
  for (float lr : in.learning_rates) {
    const double elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - round_start).count();
    if (!TakeAnotherStep(in.budget_ms, in.min_steps, max_steps, steps, elapsed_ms)) break;
    if (!keep_going(steps)) {
      stopped = true;
      break;
    }
    PCP_ASSIGN_OR_RETURN(Batch batch, sampler.Next(shard, in.batch_size, in.block_size),
                         _ << "drawing batch " << sampler.state().cursor);
    const auto t0 = Clock::now();
    PCP_ASSIGN_OR_RETURN(float loss, loop.Step(batch, lr));
    out.compute_ms += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (in.slow_factor > 1) {
      // A slower machine (testing): the step's own time, stretched.
      std::this_thread::sleep_for((Clock::now() - t0) * (in.slow_factor - 1));
    }
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    step_ms += ms;
    step_seconds.Observe(ms / 1000.0);
    if (!std::isfinite(loss)) {
      return absl::InternalError(
          absl::StrCat("round ", in.round, ": loss became ", loss, " at inner step ", steps, " (lr ", lr, ")"));
    }
    loss_sum += loss;
    last_loss = loss;
    ++steps;
  }
  v1::RoundResult& r = out.result;
  r.set_round(in.round);
  r.set_steps(steps);
  r.set_tokens_processed(static_cast<uint64_t>(steps) * static_cast<uint64_t>(in.batch_size * in.block_size));
  r.set_mean_loss(steps > 0 ? static_cast<float>(loss_sum / steps) : 0.0f);
  r.set_last_loss(last_loss);
  r.set_step_time_ms(steps > 0 ? step_ms / steps : 0);
  r.set_tokens_per_second(step_ms > 0 ? static_cast<double>(r.tokens_processed()) * 1000.0 / step_ms : 0);
  r.set_sampler_cursor(sampler.state().cursor);
  out.complete = !stopped && (steps == max_steps || (in.budget_ms > 0 && steps >= in.min_steps));
  if (out.complete && !in.theta.empty()) {
    PCP_ASSIGN_OR_RETURN(std::vector<Tensor> end, loop.GetParams());
    PCP_ASSIGN_OR_RETURN(out.delta, Subtract(in.theta, end));
  }
  return out;
}

}  // namespace pcp::worker
