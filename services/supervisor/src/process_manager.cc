#include "pcp/supervisor/process_manager.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pcp/base/format_duration.h"
#include "pcp/base/progress_report.h"
#include "pcp/metrics/registry.h"

namespace pcp::supervisor {
namespace {

using Clock = std::chrono::steady_clock;

absl::Duration Since(Clock::time_point t, Clock::time_point now) { return absl::FromChrono(now - t); }

}  // namespace

absl::string_view WorkerStateName(WorkerState state) {
  switch (state) {
    case WorkerState::kRunning: return "running";
    case WorkerState::kRestarting: return "restarting";
    case WorkerState::kBackoff: return "backoff";
    case WorkerState::kDraining: return "draining";
    case WorkerState::kStopped: return "stopped";
  }
  return "unknown";
}

absl::Status ValidateProcessManagerOptions(const ProcessManagerOptions& options) {
  if (options.spawn.path.empty()) {
    return absl::InvalidArgumentError("worker.binary: no worker binary given");
  }
  if (access(options.spawn.path.c_str(), X_OK) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker.binary: '", options.spawn.path, "' is not executable: ", strerror(errno)));
  }
  if (absl::Status s = ValidateBackoffOptions(options.backoff, "worker.backoff"); !s.ok()) {
    return s;
  }
  if (options.healthy_after < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("worker.healthy_after: must be >= 0");
  }
  if (options.grace <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("worker.grace: must be > 0");
  }
  return absl::OkStatus();
}

struct ProcessManager::Request {
  enum class Kind { kRestart, kDrain, kShutdown };
  Kind kind;
  absl::Duration grace;
  Done done;
};

// All state of the manager; every member is guarded by mu_ and changed only by the loop
// thread (requests arrive through a queue), so the loop never races with itself.
class ProcessManager::Loop {
 public:
  explicit Loop(ProcessManagerOptions options)
      : options_(std::move(options)),
        backoff_(options_.backoff, options_.seed),
        wake_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
  ~Loop() {
    if (wake_fd_ >= 0) close(wake_fd_);
    CloseProgressPipe();
  }

  void Run();
  void Post(Request request);
  WorkerStatus Status() const {
    std::lock_guard<std::mutex> lock(mu_);
    return StatusLocked();
  }
  bool WaitFor(const std::function<bool(const WorkerStatus&)>& predicate, absl::Duration timeout,
               WorkerStatus* last) const;
  void SetListener(std::function<void()> listener) {
    std::lock_guard<std::mutex> lock(mu_);
    listener_ = std::move(listener);
  }
  absl::Duration default_grace() const { return options_.grace; }

 private:
  enum class OnExit { kBackoff, kRestartNow, kStop };

  WorkerStatus StatusLocked() const;
  void HandleRequest(Request request);
  void StopChild(absl::Duration grace);
  void ReapIfExited();
  void EscalateIfDue();
  void StartWorker(const std::string& context);
  void EnterBackoff();
  // Counts the bytes the live worker wrote to its progress pipe (pcp/base/progress_report.h).
  void ReadProgress();
  void CloseProgressPipe() {
    if (progress_fd_ >= 0) close(progress_fd_);
    progress_fd_ = -1;
  }
  void Changed() {
    ++changes_;
    listener_due_ = true;
    changed_.notify_all();
  }
  void Answer(Done done, absl::Status status, std::string message) {
    if (done)
      deferred_.push_back([done = std::move(done), status, message = std::move(message)] { done(status, message); });
  }
  void AnswerAll(std::vector<Done>* waiters, const absl::Status& status, const std::string& message) {
    for (Done& done : *waiters) Answer(std::move(done), status, message);
    waiters->clear();
  }
  // Runs answers and the listener without the lock, so they may call back into the manager.
  void RunDeferred(std::unique_lock<std::mutex>& lock);

  const ProcessManagerOptions options_;
  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  Backoff backoff_;
  const int wake_fd_;
  std::deque<Request> requests_;
  std::optional<ChildProcess> child_;
  WorkerState state_ = WorkerState::kStopped;
  OnExit on_exit_ = OnExit::kBackoff;
  bool shutting_down_ = false;
  bool finished_ = false;
  bool term_sent_ = false;
  bool kill_sent_ = false;
  Clock::time_point kill_at_;
  Clock::time_point backoff_until_;
  absl::Duration backoff_delay_;
  uint64_t incarnation_ = 0;
  int progress_fd_ = -1;           // read end of the live worker's progress pipe
  uint64_t progress_reports_ = 0;  // of the live (or just exited) worker
  bool exited_before_ = false;
  ExitInfo last_exit_;
  std::string last_spawn_error_;
  uint64_t changes_ = 0;
  std::vector<Done> restart_waiters_;
  std::vector<Done> drain_waiters_;
  std::function<void()> listener_;
  bool listener_due_ = false;
  std::vector<std::function<void()>> deferred_;
};

WorkerStatus ProcessManager::Loop::StatusLocked() const {
  const Clock::time_point now = Clock::now();
  WorkerStatus s;
  s.state = state_;
  s.incarnation = incarnation_;
  s.restarts = incarnation_ > 0 ? static_cast<uint32_t>(incarnation_ - 1) : 0;
  s.exited_before = exited_before_;
  s.last_exit = last_exit_;
  s.last_spawn_error = last_spawn_error_;
  s.changes = changes_;
  if (child_) {
    s.pid = child_->pid();
    s.uptime = Since(child_->started(), now);
    s.progress_reports = progress_reports_;
  }
  if (state_ == WorkerState::kBackoff) {
    s.backoff_left = std::max(absl::ZeroDuration(), absl::FromChrono(backoff_until_ - now));
    s.backoff_delay = backoff_delay_;
  }
  return s;
}

bool ProcessManager::Loop::WaitFor(const std::function<bool(const WorkerStatus&)>& predicate, absl::Duration timeout,
                                   WorkerStatus* last) const {
  const Clock::time_point deadline = Clock::now() + absl::ToChronoNanoseconds(timeout);
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    WorkerStatus s = StatusLocked();
    const bool held = predicate(s);
    if (held || Clock::now() >= deadline) {
      if (last != nullptr) *last = std::move(s);
      return held;
    }
    // Wake at least every 50 ms: uptime and backoff_left change without a state change.
    changed_.wait_until(lock, std::min(deadline, Clock::now() + std::chrono::milliseconds(50)));
  }
}

void ProcessManager::Loop::Post(Request request) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!finished_) {
      requests_.push_back(std::move(request));
      uint64_t one = 1;
      ssize_t ignored = write(wake_fd_, &one, sizeof one);
      (void)ignored;
      return;
    }
  }
  if (request.done) {
    request.done(absl::FailedPreconditionError("the supervisor has shut down"), "");
  }
}

void ProcessManager::Loop::HandleRequest(Request request) {
  using Kind = Request::Kind;
  if (shutting_down_ && request.kind == Kind::kRestart) {
    Answer(std::move(request.done), absl::FailedPreconditionError("the supervisor is shutting down"), "");
    return;
  }
  const absl::Duration grace = request.grace > absl::ZeroDuration() ? request.grace : options_.grace;
  if (request.kind == Kind::kRestart) {
    restart_waiters_.push_back(std::move(request.done));
    if (child_) {
      on_exit_ = OnExit::kRestartNow;
      state_ = WorkerState::kRestarting;
      StopChild(grace);
      Changed();
    } else {
      StartWorker("restart requested");
    }
    return;
  }
  // Drain or shutdown: a pending restart will not happen.
  if (request.kind == Kind::kShutdown) shutting_down_ = true;
  AnswerAll(&restart_waiters_,
            absl::AbortedError(request.kind == Kind::kDrain ? "superseded by a drain"
                                                            : "the supervisor is shutting down"),
            "");
  if (child_) {
    drain_waiters_.push_back(std::move(request.done));
    on_exit_ = OnExit::kStop;
    state_ = WorkerState::kDraining;
    StopChild(grace);
    Changed();
    return;
  }
  const WorkerState before = state_;
  state_ = WorkerState::kStopped;
  if (before != state_) Changed();
  Answer(std::move(request.done), absl::OkStatus(),
         before == WorkerState::kBackoff ? "worker was waiting to restart; it stays stopped"
                                         : "worker already stopped");
}

void ProcessManager::Loop::StopChild(absl::Duration grace) {
  const Clock::time_point kill_at = Clock::now() + absl::ToChronoNanoseconds(grace);
  if (term_sent_) {
    kill_at_ = std::min(kill_at_, kill_at);
    return;
  }
  spdlog::info("stopping worker pid {} (SIGTERM, SIGKILL after {})", child_->pid(),
               FormatDuration(absl::ToDoubleSeconds(grace)));
  if (absl::Status s = child_->Signal(SIGTERM); !s.ok()) spdlog::warn("{}", std::string(s.message()));
  term_sent_ = true;
  kill_at_ = kill_at;
}

void ProcessManager::Loop::EscalateIfDue() {
  if (!child_ || !term_sent_ || kill_sent_ || Clock::now() < kill_at_) return;
  spdlog::warn("worker pid {} still running after its grace period; sending SIGKILL", child_->pid());
  if (absl::Status s = child_->Signal(SIGKILL); !s.ok()) spdlog::warn("{}", std::string(s.message()));
  kill_sent_ = true;
}

void ProcessManager::Loop::ReadProgress() {
  if (progress_fd_ < 0) return;
  char buffer[256];
  ssize_t n;
  uint64_t before = progress_reports_;
  while ((n = read(progress_fd_, buffer, sizeof buffer)) > 0) progress_reports_ += static_cast<uint64_t>(n);
  // End of file: the worker is gone (or closed its end); nothing more can come.
  if (n == 0) CloseProgressPipe();
  if (progress_reports_ != before) changed_.notify_all();
}

void ProcessManager::Loop::ReapIfExited() {
  if (!child_) return;
  std::optional<ExitInfo> info = child_->TryReap();
  if (!info) return;
  ReadProgress();  // what it reported just before exiting
  CloseProgressPipe();
  const uint64_t rounds = progress_reports_;
  const absl::Duration uptime = Since(child_->started(), Clock::now());
  const std::string message =
      absl::StrCat("worker ", child_->pid(), " exited (", info->ToString(), ") after ",
                   FormatDuration(absl::ToDoubleSeconds(uptime)),
                   rounds > 0 ? absl::StrCat(" and ", rounds, rounds == 1 ? " round" : " rounds") : "");
  child_.reset();
  term_sent_ = kill_sent_ = false;
  exited_before_ = true;
  last_exit_ = *info;
  metrics::Get(metrics::kSupervisorChildUp).Set(0);
  metrics::Get(metrics::kSupervisorLastExitCode).Set(info->exit_code);
  metrics::Get(metrics::kSupervisorLastExitSignal).Set(info->signal);
  const OnExit on_exit = std::exchange(on_exit_, OnExit::kBackoff);
  AnswerAll(&drain_waiters_, absl::OkStatus(), message);
  switch (on_exit) {
    case OnExit::kStop:
      spdlog::info("{}; staying stopped", message);
      state_ = WorkerState::kStopped;
      Changed();
      return;
    case OnExit::kRestartNow:
      spdlog::info("{}; restarting at once", message);
      StartWorker(message);
      return;
    case OnExit::kBackoff:
      // A worker that completed a round was doing useful work: whatever killed it, it is no
      // crash loop, and every second it waits is a round lost. Restart it at once.
      if (rounds > 0) {
        backoff_.Reset();
        spdlog::warn("{}; it made progress, restarting at once", message);
        StartWorker(message);
        return;
      }
      if (uptime >= options_.healthy_after) backoff_.Reset();
      EnterBackoff();
      spdlog::warn("{}; restarting in {}", message, FormatDuration(absl::ToDoubleSeconds(backoff_delay_)));
      return;
  }
}

void ProcessManager::Loop::EnterBackoff() {
  backoff_delay_ = backoff_.Next();
  backoff_until_ = Clock::now() + absl::ToChronoNanoseconds(backoff_delay_);
  metrics::Get(metrics::kSupervisorBackoffSeconds).Set(absl::ToDoubleSeconds(backoff_delay_));
  state_ = WorkerState::kBackoff;
  Changed();
}

void ProcessManager::Loop::StartWorker(const std::string& context) {
  SpawnOptions spawn = options_.spawn;
  spawn.env.emplace_back("PCP_WORKER_INCARNATION", absl::StrCat(incarnation_ + 1));
  // A fresh progress pipe per worker: the write end goes to the child (and is closed here
  // once it has it), so the read end reaches end of file when the worker is gone.
  CloseProgressPipe();
  progress_reports_ = 0;
  int progress[2];
  if (pipe2(progress, O_CLOEXEC | O_NONBLOCK) == 0) {
    spawn.env.emplace_back(kProgressFdEnv, absl::StrCat(progress[1]));
    spawn.keep_fds.push_back(progress[1]);
  } else {
    progress[0] = progress[1] = -1;
    spdlog::warn("no progress pipe for the worker ({}): every exit counts toward the backoff", strerror(errno));
  }
  absl::StatusOr<ChildProcess> child = ChildProcess::Spawn(spawn);
  if (progress[1] >= 0) close(progress[1]);
  if (child.ok()) {
    progress_fd_ = progress[0];
  } else if (progress[0] >= 0) {
    close(progress[0]);
  }
  if (!child.ok()) {
    last_spawn_error_ = std::string(child.status().message());
    EnterBackoff();
    spdlog::error("{}; retrying in {}", last_spawn_error_, FormatDuration(absl::ToDoubleSeconds(backoff_delay_)));
    AnswerAll(&restart_waiters_, child.status(), "");
    return;
  }
  child_.emplace(*std::move(child));
  ++incarnation_;
  metrics::Get(metrics::kSupervisorChildUp).Set(1);
  metrics::Get(metrics::kSupervisorBackoffSeconds).Set(0);
  if (incarnation_ > 1) metrics::Get(metrics::kSupervisorRestartsTotal).Increment();
  last_spawn_error_.clear();
  state_ = WorkerState::kRunning;
  Changed();
  const std::string started = absl::StrCat("started worker ", child_->pid(), " (incarnation ", incarnation_, ")");
  spdlog::info("{}", started);
  AnswerAll(&restart_waiters_, absl::OkStatus(), absl::StrCat(context, "; ", started));
}

void ProcessManager::Loop::RunDeferred(std::unique_lock<std::mutex>& lock) {
  while (!deferred_.empty() || listener_due_) {
    std::vector<std::function<void()>> run = std::move(deferred_);
    deferred_.clear();
    std::function<void()> listener = listener_due_ ? listener_ : nullptr;
    listener_due_ = false;
    lock.unlock();
    for (auto& fn : run) fn();
    if (listener) listener();
    lock.lock();
  }
}

void ProcessManager::Loop::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!options_.start_stopped) StartWorker("first start");
  while (true) {
    while (!requests_.empty()) {
      Request request = std::move(requests_.front());
      requests_.pop_front();
      HandleRequest(std::move(request));
    }
    ReapIfExited();
    EscalateIfDue();
    if (state_ == WorkerState::kBackoff && !child_ && !shutting_down_ && Clock::now() >= backoff_until_) {
      StartWorker(absl::StrCat("restart after ", FormatDuration(absl::ToDoubleSeconds(backoff_delay_)), " backoff"));
    }
    if (shutting_down_ && !child_) {
      if (state_ != WorkerState::kStopped) {
        state_ = WorkerState::kStopped;
        Changed();
      }
      break;
    }
    RunDeferred(lock);
    if (!requests_.empty()) continue;

    // Sleep until the worker exits, a request arrives, or a timer is due.
    std::optional<Clock::time_point> wake;
    if (child_ && term_sent_ && !kill_sent_) wake = kill_at_;
    if (state_ == WorkerState::kBackoff && !child_) wake = backoff_until_;
    int timeout_ms = -1;
    if (wake) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(*wake - Clock::now()).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left, 0, 60'000));
    }
    struct pollfd fds[3] = {{.fd = wake_fd_, .events = POLLIN, .revents = 0},
                            {.fd = -1, .events = POLLIN, .revents = 0},
                            {.fd = progress_fd_, .events = POLLIN, .revents = 0}};
    if (child_) {
      if (child_->pidfd() >= 0) {
        fds[1].fd = child_->pidfd();
      } else if (timeout_ms < 0 || timeout_ms > 20) {
        timeout_ms = 20;  // no pidfd (old kernel): poll for the exit
      }
    }
    lock.unlock();
    poll(fds, 3, timeout_ms);
    uint64_t drained;
    ssize_t ignored = read(wake_fd_, &drained, sizeof drained);
    (void)ignored;
    lock.lock();
    ReadProgress();
  }
  finished_ = true;
  // Requests that raced with the shutdown.
  while (!requests_.empty()) {
    Answer(std::move(requests_.front().done), absl::FailedPreconditionError("the supervisor has shut down"), "");
    requests_.pop_front();
  }
  RunDeferred(lock);
  changed_.notify_all();
}

// ------------------------------------------------------------------ ProcessManager

ProcessManager::ProcessManager(ProcessManagerOptions options) : loop_(std::make_unique<Loop>(std::move(options))) {}

absl::StatusOr<std::unique_ptr<ProcessManager>> ProcessManager::Start(ProcessManagerOptions options) {
  if (absl::Status s = ValidateProcessManagerOptions(options); !s.ok()) return s;
  std::unique_ptr<ProcessManager> manager(new ProcessManager(std::move(options)));
  manager->thread_ = std::thread([loop = manager->loop_.get()] { loop->Run(); });
  return manager;
}

ProcessManager::~ProcessManager() { Shutdown(absl::ZeroDuration()); }

WorkerStatus ProcessManager::Status() const { return loop_->Status(); }

bool ProcessManager::WaitFor(const std::function<bool(const WorkerStatus&)>& predicate, absl::Duration timeout,
                             WorkerStatus* last) const {
  return loop_->WaitFor(predicate, timeout, last);
}

void ProcessManager::Restart(absl::Duration grace, Done done) {
  loop_->Post({Request::Kind::kRestart, grace, std::move(done)});
}

void ProcessManager::Drain(absl::Duration grace, Done done) {
  loop_->Post({Request::Kind::kDrain, grace, std::move(done)});
}

void ProcessManager::Shutdown(absl::Duration grace) {
  std::call_once(joined_, [&] {
    loop_->Post({Request::Kind::kShutdown, grace, nullptr});
    if (thread_.joinable()) thread_.join();
  });
}

void ProcessManager::SetChangeListener(std::function<void()> listener) { loop_->SetListener(std::move(listener)); }

}  // namespace pcp::supervisor
