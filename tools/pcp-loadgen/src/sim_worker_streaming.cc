// SimWorker's Streaming DiLoCo rounds (sim_worker.h; the worker's side is
// services/worker/src/streaming_rounds.cc, the shepherd's round_schedule_streaming.cc).
//
// The shepherd sends θ in full once, then StartRound r together with StartRound r + 1 (one
// round ahead), and as round r closes the fragment it synced (ParameterChunk.fragment, for
// θ of round r + 1). Round r + 1 runs while round r's Δ is sent and summed; it needs that
// fragment overlap_steps steps in, so the simulated compute stops there until the fragment
// has arrived (what it waited is network wait). No θ is kept: the replica is a round number.
#include "absl/strings/str_cat.h"
#include "pcp/rpc/tensor_fragments.h"
#include "sim_worker.h"
#include "spdlog/spdlog.h"

namespace pcp::loadgen {
namespace {

using Clock = std::chrono::steady_clock;

Clock::duration SecondsOf(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

const SyntheticDelta* SimWorker::DeltaFor(uint64_t round) const {
  if (deltas_.empty()) return nullptr;
  if (!streaming()) return deltas_[0].get();
  if (round == 0) return nullptr;
  const size_t p = static_cast<size_t>(plan_->FragmentOfRound(round));
  return p < deltas_.size() ? deltas_[p].get() : nullptr;
}

bool SimWorker::DeltasReady() const {
  if (deltas_.empty()) return false;
  for (const auto& d : deltas_) {
    if (d == nullptr) return false;
  }
  return true;
}

bool SimWorker::PlanFragments(const v1::Assignment& a, const std::vector<TensorSpec>& specs, codec::Codec up,
                              const std::string& key, uint64_t epoch) {
  std::vector<int64_t> sizes;
  for (const TensorSpec& s : specs) sizes.push_back(NumElements(s.shape));
  absl::StatusOr<diloco::FragmentPlan> plan = diloco::FragmentPlan::Create(sizes, a.streaming().fragments());
  if (!plan.ok()) {
    ctx_->Fail(absl::InvalidArgumentError(absl::StrCat("Assignment.streaming: ", plan.status().message())));
    return false;
  }
  plan_ = *std::move(plan);
  overlap_steps_ = a.streaming().overlap_steps();
  deltas_.assign(static_cast<size_t>(plan_->fragments()), nullptr);
  for (int64_t p = 0; p < plan_->fragments(); ++p) {
    // Each fragment's Δ is made once for all workers, on the source's thread.
    auto done = [this, epoch, p](const DeltaSource::Result& r) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (epoch != assignment_epoch_ || !assignment_ || static_cast<size_t>(p) >= deltas_.size()) return;
        if (!r.ok()) {
          ctx_->Fail(r.status());
          return;
        }
        deltas_[static_cast<size_t>(p)] = *r;
        MaybeReady();
      }
      Pump();
    };
    ctx_->deltas->Request(absl::StrCat(key, "/fragment-", p), FragmentSpecs(*plan_, p, specs), up, chunk_bytes_,
                          [this, done](const DeltaSource::Result& r) {
                            // Never run under mu_: hop to the timer thread.
                            ctx_->timers->After(std::chrono::milliseconds(0), [done, r] { done(r); });
                          });
  }
  return true;
}

bool SimWorker::OnStreamingStart(const v1::StartRound& start) {
  // What pcp-worker checks: θ in full first, then 1 to inner_steps learning rates a round.
  if (held_round_ == 0) {
    ctx_->Fail(absl::FailedPreconditionError(absl::StrCat(id_, ": StartRound ", start.round(), " before θ in full")));
    return true;
  }
  const int inner_steps = static_cast<int>(assignment_->hyperparameters().inner_steps());
  if (start.learning_rates_size() < 1 || start.learning_rates_size() > inner_steps) {
    ctx_->Fail(
        absl::InvalidArgumentError(absl::StrCat(id_, ": StartRound ", start.round(), ": ", start.learning_rates_size(),
                                                " learning rates; a streaming round has 1 to ", inner_steps)));
    return true;
  }
  starts_.push_back(QueuedStart{.round = start.round(),
                                .steps = static_cast<uint32_t>(start.learning_rates_size()),
                                .cursor = start.sampler_cursor()});
  BeginNextRound();
  return false;
}

bool SimWorker::OnStreamingTheta(const v1::ParameterChunk& p) {
  if (p.fragment() == 0) {
    held_round_ = std::max(held_round_, p.round());  // θ in full
  } else if (held_round_ < p.round()) {
    if (held_round_ + 1 != p.round()) {
      ctx_->Fail(absl::FailedPreconditionError(absl::StrCat(id_, ": fragment ", p.fragment() - 1, " for θ of round ",
                                                            p.round(), ", but θ of round ", held_round_, " is held")));
      return true;
    }
    held_round_ = p.round();
  }  // (else θ for that round came in full meanwhile: the fragment is skipped, as pcp-worker does)
  if (drop_at_ == DropAt::kTheta) {  // the message was smaller than the drop point
    drop_at_ = DropAt::kNone;
    ctx_->timeline->Dropped(p.round());
    return true;
  }
  if (merge_wait_ && held_round_ >= round_) {
    merge_wait_ = false;
    network_wait_ms_ += std::chrono::duration<double, std::milli>(Clock::now() - merge_wait_since_).count();
    FinishCompute(generation_, round_, merge_rest_);
  }
  BeginNextRound();
  return false;
}

void SimWorker::BeginNextRound() {
  if (computing_ || starts_.empty() || held_round_ == 0 || !assignment_ || stream_ == nullptr) return;
  const QueuedStart next = starts_.front();
  starts_.pop_front();
  computing_ = true;
  merge_wait_ = false;
  round_ = next.round;
  steps_ = next.steps;
  cursor_ = next.cursor;
  const auto now = Clock::now();
  // Compute idle since the last round's compute (its Δ is sent meanwhile), as pcp-worker counts.
  network_wait_ms_ = compute_end_ ? std::chrono::duration<double, std::milli>(now - *compute_end_).count() : 0;
  const Clock::duration compute = SecondsOf(ctx_->options->compute_s);
  const uint64_t gen = generation_, r = round_;
  Clock::duration before_merge = compute * std::min<int64_t>(overlap_steps_, steps_) / std::max<uint32_t>(steps_, 1);
  merge_rest_ = compute - before_merge;
  if (behaviour_.stall_rounds.count(r) != 0) {
    // Stalled: nothing is read or sent (heartbeats neither) for stall_s, then it computes.
    paused_ = true;
    const Clock::duration stall = SecondsOf(ctx_->options->stall_s);
    ctx_->timers->After(stall, [this, gen] { Resume(gen); });
    before_merge += stall;
  }
  if (drop_at_ == DropAt::kCompute) {
    drop_at_ = DropAt::kNone;
    const auto at = std::chrono::duration_cast<Clock::duration>(compute * drop_fraction_);
    ctx_->timers->After(at, [this, gen] { Drop(gen, "while computing"); });
  }
  ctx_->timers->After(before_merge, [this, gen, r] { MergePoint(gen, r); });
}

void SimWorker::MergePoint(uint64_t generation, uint64_t round) {
  std::lock_guard<std::mutex> lock(mu_);
  if (generation != generation_ || stream_ == nullptr || round != round_ || !computing_) return;
  if (held_round_ >= round) {
    FinishCompute(generation, round, merge_rest_);
    return;
  }
  // The fragment of the round before is late: the compute waits for it (OnStreamingTheta).
  merge_wait_ = true;
  merge_wait_since_ = Clock::now();
}

void SimWorker::FinishCompute(uint64_t generation, uint64_t round, Clock::duration rest) {
  ctx_->timers->After(rest, [this, generation, round] { ComputeDone(generation, round); });
}

void SimWorker::ResetStreaming() {
  plan_.reset();
  overlap_steps_ = 0;
  theta_fragment_ = 0;
  theta_bytes_expected_ = 0;
  held_round_ = 0;
  starts_.clear();
  computing_ = false;
  merge_wait_ = false;
  merge_rest_ = {};
  compute_end_.reset();
}

}  // namespace pcp::loadgen
