#include "coordinator.h"

#include <variant>

#include "absl/strings/str_cat.h"
#include "contain.h"
#include "pcp/base/absl_fmt.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {

Coordinator::Coordinator(const ShepherdConfig* config, JobManager* jobs, WorkerRegistry* registry)
    : config_(config), jobs_(jobs), registry_(registry) {}

Coordinator::~Coordinator() { Stop(); }

void Coordinator::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void Coordinator::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Coordinator::Wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_changed_ = true;
  }
  cv_.notify_all();
}

void Coordinator::Nudge() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    nudged_ = true;
  }
  cv_.notify_all();
}

Coordinator::Status Coordinator::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

std::shared_ptr<const ParamsSnapshot> Coordinator::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snapshot_;
}

void Coordinator::Post(WorkerEvent event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(event));
  }
  cv_.notify_all();
}

void Coordinator::Handle(WorkerEvent& e) {
  // The coordinator's own list of connected workers (a job started later takes them all).
  if (std::holds_alternative<WorkerJoined>(e.body)) {
    if (e.session->ended()) return;
    workers_[e.session.get()] = e.session;
  } else if (std::holds_alternative<WorkerLeft>(e.body)) {
    workers_.erase(e.session.get());
  }
  if (run_) run_->On(e);
}

void Coordinator::MaybeStartJob() {
  while (!run_) {
    std::optional<RunnableJob> next = jobs_->StartNext();
    if (!next.has_value()) return;
    spdlog::info("job {}: {}", next->id, next->resumed ? "resuming after a shepherd restart" : "starting");
    absl::StatusOr<std::unique_ptr<JobRun>> run;
    absl::Status contained = Contain([&] {
      run = JobRun::Start(*next, RunContext{.config = config_,
                                            .jobs = jobs_,
                                            .registry = registry_,
                                            .nudge = [this] { Nudge(); },
                                            .publish =
                                                [this](std::shared_ptr<const ParamsSnapshot> snap) {
                                                  std::lock_guard<std::mutex> lock(mu_);
                                                  snapshot_ = std::move(snap);
                                                }});
      return absl::OkStatus();
    });
    if (!contained.ok()) run = contained;
    if (!run.ok()) {
      spdlog::error("job {} failed to start: {}", next->id, run.status().message());
      jobs_->Finish(next->id, v1::JOB_STATE_FAILED, absl::StrCat("failed to start: ", run.status().message()));
      continue;
    }
    run_ = *std::move(run);
    for (auto& [key, session] : workers_) {
      if (!session->ended()) run_->AddWorker(session);
    }
  }
}

void Coordinator::FailRun(const absl::Status& why) {
  if (!run_) return;
  spdlog::error("job {} failed: {}", run_->job_id(), why.message());
  jobs_->Finish(run_->job_id(), v1::JOB_STATE_FAILED, std::string(why.message()));
  Contain([&] {
    run_->Release(absl::StrCat("job failed: ", why.message()));
    return absl::OkStatus();
  }).IgnoreError();
  run_.reset();
}

void Coordinator::PublishStatus() {
  std::lock_guard<std::mutex> lock(mu_);
  status_.active_job_id = run_ ? run_->job_id() : "";
  status_.workers_in_round = run_ ? run_->workers_in_round() : 0;
}

void Coordinator::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    // Wake for the running job's next deadline or grace period, or at least every 500 ms; a
    // wake-up time already past was acted on by the last Advance: then only the tick.
    const auto now = Clock::now();
    const auto tick = now + std::chrono::milliseconds(500);
    auto wake = run_ ? run_->NextWakeup() : tick;
    if (wake <= now || wake > tick) wake = tick;
    cv_.wait_until(lock, wake, [this] { return stop_ || jobs_changed_ || nudged_ || !events_.empty(); });
    if (stop_) break;
    std::deque<WorkerEvent> events;
    events.swap(events_);
    const bool jobs_changed = jobs_changed_;
    jobs_changed_ = false;
    nudged_ = false;
    lock.unlock();

    absl::Status contained = Contain([&] {
      for (WorkerEvent& e : events) Handle(e);
      return absl::OkStatus();
    });
    if (!contained.ok()) FailRun(contained);
    if (run_ && jobs_changed && !jobs_->IsRunning(run_->job_id())) {
      spdlog::info("job {}: no longer running (cancelled); releasing its workers", run_->job_id());
      run_->Release("job cancelled");
      run_.reset();
    }
    MaybeStartJob();
    while (run_) {
      JobRun::Outcome outcome = JobRun::Outcome::kRunning;
      contained = Contain([&] {
        outcome = run_->Advance(Clock::now());
        return absl::OkStatus();
      });
      if (!contained.ok()) {
        FailRun(contained);
      } else if (outcome == JobRun::Outcome::kRunning) {
        break;
      }
      PublishStatus();
      run_.reset();
      MaybeStartJob();
    }
    PublishStatus();
    lock.lock();
  }
  lock.unlock();
  if (run_) {
    absl::Status s = run_->CheckpointIfBehind();
    if (!s.ok()) spdlog::error("job {}: checkpoint at shutdown failed: {}", run_->job_id(), s.message());
    // No Cancel to the workers: they keep their AdamW state and get the same assignment
    // back from the restarted shepherd.
    spdlog::info("job {}: left running; a restarted shepherd resumes it from its last checkpoint", run_->job_id());
    run_.reset();
  }
}

}  // namespace pcp::shepherd
