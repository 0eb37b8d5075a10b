#include "eval_runner.h"

#include <chrono>

#include "contain.h"
#include "pcp/base/status_macros.h"
#include "pcp/kernels/backend_factory.h"

namespace pcp::shepherd {

absl::StatusOr<std::unique_ptr<EvalRunner>> EvalRunner::Create(const ModelProgram& program, TokenSequence data,
                                                               int64_t iters, uint64_t seed, int threads,
                                                               std::function<void()> done) {
  std::unique_ptr<EvalRunner> r(new EvalRunner());
  PCP_ASSIGN_OR_RETURN(r->backend_, CreateBackend("cpu", threads));
  // The evaluator holds one copy of the parameters (not an inner loop's train step and AdamW
  // state: the shepherd only estimates losses).
  PCP_ASSIGN_OR_RETURN(r->evaluator_, Evaluator::Create(*r->backend_, program.eval_loss));
  r->data_ = std::move(data);
  r->iters_ = iters;
  r->seed_ = seed;
  r->done_ = std::move(done);
  r->thread_ = std::thread([p = r.get()] { p->Loop(); });
  return r;
}

EvalRunner::~EvalRunner() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void EvalRunner::Start(uint64_t round, std::vector<Tensor> params) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.emplace(round, std::move(params));
  }
  cv_.notify_all();
}

std::optional<EvalRunner::Result> EvalRunner::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<Result> r = std::move(result_);
  result_.reset();
  return r;
}

std::optional<EvalRunner::Result> EvalRunner::Finish() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !pending_.has_value() && !running_; });
  std::optional<Result> r = std::move(result_);
  result_.reset();
  return r;
}

void EvalRunner::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || pending_.has_value(); });
    if (stop_) return;
    // Not a structured binding: the lambda below uses `params`, which clang before 16 cannot
    // capture from one (scripts/fuzz.sh builds with clang-14).
    const uint64_t round = pending_->first;
    const std::vector<Tensor> params = std::move(pending_->second);
    pending_.reset();
    running_ = true;
    lock.unlock();
    const auto t0 = std::chrono::steady_clock::now();
    Result result{.round = round};
    // An exception (e.g. an allocation that fails) fails the estimate, and so the job.
    result.val_loss = Contain([&]() -> absl::StatusOr<float> {
      PCP_RETURN_IF_ERROR(evaluator_->SetParams(params));
      absl::StatusOr<float> loss = evaluator_->MeanLoss(data_, iters_, seed_);
      evaluator_->ReleaseParams();  // no copy of θ between evaluations
      return loss;
    });
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    lock.lock();
    running_ = false;
    result_ = std::move(result);
    cv_.notify_all();
    if (done_) {
      lock.unlock();
      done_();
      lock.lock();
    }
  }
}

}  // namespace pcp::shepherd
