#include "worker_registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/metrics/registry.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {
namespace {

// pcp_shepherd_workers{state}: every slot by the phase of its last heartbeat, recounted on
// every heartbeat tick.
template <typename SlotMap>
void SetWorkerGauges(const SlotMap& slots) {
  static const char* const kStates[] = {"idle",     "preparing", "ready",       "receiving",
                                        "training", "sending",   "disconnected"};
  double count[7] = {};
  for (const auto& [id, slot] : slots) {
    int i = 0;
    if (!slot.info.worker_connected()) {
      i = 6;
    } else {
      switch (slot.info.phase()) {
        case v1::WORKER_PHASE_PREPARING: i = 1; break;
        case v1::WORKER_PHASE_READY: i = 2; break;
        case v1::WORKER_PHASE_RECEIVING: i = 3; break;
        case v1::WORKER_PHASE_TRAINING: i = 4; break;
        case v1::WORKER_PHASE_SENDING: i = 5; break;
        default: i = 0; break;  // idle, or joined without a heartbeat yet
      }
    }
    ++count[i];
  }
  for (int i = 0; i < 7; ++i) metrics::Get(metrics::kShepherdWorkers, {kStates[i]}).Set(count[i]);
}

}  // namespace

WorkerRegistry::WorkerRegistry(SessionOptions options, double heartbeat_timeout_s, double heartbeat_interval_s,
                               double forget_after_s)
    : options_(std::move(options)),
      timeout_s_(heartbeat_timeout_s),
      interval_s_(heartbeat_interval_s),
      forget_after_s_(forget_after_s) {}

WorkerRegistry::~WorkerRegistry() { Stop(absl::UnavailableError("shepherd shutting down")); }

void WorkerRegistry::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { HeartbeatLoop(); });
}

void WorkerRegistry::Stop(const absl::Status& why) {
  std::vector<std::shared_ptr<WorkerSession>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    all.assign(sessions_.begin(), sessions_.end());
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (auto& s : all) s->Close(why);
}

std::shared_ptr<WorkerSession> WorkerRegistry::NewSession(std::string peer, auth::Principal caller) {
  auto session = std::make_shared<WorkerSession>(absl::StrCat("s-", next_session_++), std::move(peer), options_, this,
                                                 sink_, std::move(caller));
  std::lock_guard<std::mutex> lock(mu_);
  sessions_.insert(session);
  return session;
}

void WorkerRegistry::HeartbeatLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, std::chrono::duration<double>(interval_s_), [this] { return stopping_; });
    if (stopping_) break;
    std::vector<std::shared_ptr<WorkerSession>> all(sessions_.begin(), sessions_.end());
    lock.unlock();
    std::vector<std::shared_ptr<WorkerSession>> gone;
    for (auto& s : all) {
      if (s->Tick(timeout_s_)) {
        gone.push_back(s);
      } else {
        s->SendHeartbeat();
      }
    }
    lock.lock();
    for (auto& s : gone) sessions_.erase(s);
    SetWorkerGauges(slots_);
  }
}

absl::Status WorkerRegistry::AdmitJoin(const std::shared_ptr<WorkerSession>& session) {
  const v1::Join& join = session->join();
  std::shared_ptr<WorkerSession> replaced;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return absl::UnavailableError("the shepherd is shutting down");
    const auto now = std::chrono::steady_clock::now();
    for (auto it = slots_.begin(); it != slots_.end();) {
      const bool gone = it->second.live.expired() &&
                        std::chrono::duration<double>(now - it->second.last_seen).count() > forget_after_s_;
      it = gone && it->first != join.supervisor_id() ? slots_.erase(it) : std::next(it);
    }
    Slot& slot = slots_[join.supervisor_id()];
    std::shared_ptr<WorkerSession> live = slot.live.lock();
    if (live != nullptr && !live->ended()) {
      const v1::Join& old = live->join();
      if (join.incarnation() <= old.incarnation()) {
        return absl::AlreadyExistsError(
            absl::StrCat("supervisor id '", join.supervisor_id(), "' is already used by a live worker (session ",
                         live->session_id(), " from ", live->peer(), ", pid ", old.pid(), ", incarnation ",
                         old.incarnation(), "); a replacement must announce a higher incarnation"));
      }
      replaced = live;
    }
    slot.live = session;
    slot.last_seen = std::chrono::steady_clock::now();
    v1::WorkerInfo& info = slot.info;
    info.set_supervisor_id(join.supervisor_id());
    info.set_host(join.host());
    info.set_worker_connected(true);
    info.set_session_id(session->session_id());
    info.set_backend(join.backend());
    info.set_device(join.device());
    info.set_threads(join.threads());
    info.set_version(join.version());
    info.set_phase(v1::WORKER_PHASE_IDLE);
  }
  if (replaced != nullptr) {
    spdlog::warn("worker {}: incarnation {} replaces session {} (incarnation {})", join.supervisor_id(),
                 join.incarnation(), replaced->session_id(), replaced->join().incarnation());
    replaced->Close(absl::AbortedError(
                        absl::StrCat("replaced by a newer worker process (incarnation ", join.incarnation(), ")")),
                    /*peer_dead=*/true);
  }
  return absl::OkStatus();
}

void WorkerRegistry::OnJoined(const std::shared_ptr<WorkerSession>& session) {
  const v1::Join& j = session->join();
  spdlog::info("worker {} joined: session {}, pid {}, incarnation {}, host {}, {} ({}), {} threads, from {}",
               j.supervisor_id(), session->session_id(), j.pid(), j.incarnation(), j.host(),
               j.backend() == v1::BACKEND_VULKAN ? "vulkan" : "cpu", j.device(), j.threads(), session->peer());
  if (sink_ != nullptr) sink_->Post(WorkerEvent{session, WorkerJoined{}});
}

void WorkerRegistry::OnHeartbeat(const std::shared_ptr<WorkerSession>& session, const v1::WorkerHeartbeat& hb) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(session->supervisor_id());
  if (it == slots_.end() || it->second.live.lock() != session) return;
  it->second.last_seen = std::chrono::steady_clock::now();
  it->second.info.set_phase(hb.phase());
}

void WorkerRegistry::OnEnded(const std::shared_ptr<WorkerSession>& session, const absl::Status& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slots_.find(session->supervisor_id());
    if (it != slots_.end() && it->second.live.lock() == session) {
      it->second.live.reset();
      it->second.info.set_worker_connected(false);
      it->second.info.set_phase(v1::WORKER_PHASE_UNSPECIFIED);
      it->second.last_seen = std::chrono::steady_clock::now();
    }
  }
  if (why.ok()) {
    spdlog::info("worker {} left: session {} ended by the worker", session->supervisor_id(), session->session_id());
  } else {
    spdlog::warn("worker {} left: session {}: {}", session->supervisor_id(), session->session_id(), why.ToString());
  }
  if (sink_ != nullptr) sink_->Post(WorkerEvent{session, WorkerLeft{why}});
}

std::vector<v1::WorkerInfo> WorkerRegistry::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<v1::WorkerInfo> out;
  const auto now = std::chrono::steady_clock::now();
  for (const auto& [id, slot] : slots_) {
    v1::WorkerInfo info = slot.info;
    std::shared_ptr<WorkerSession> live = slot.live.lock();
    const double seen_s =
        live != nullptr ? live->seconds_since_receive() : std::chrono::duration<double>(now - slot.last_seen).count();
    info.set_last_seen_ms(static_cast<uint64_t>(seen_s * 1000.0));
    out.push_back(std::move(info));
  }
  return out;  // std::map: sorted by supervisor id
}

uint32_t WorkerRegistry::connected() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t n = 0;
  for (const auto& [id, slot] : slots_) n += slot.info.worker_connected() ? 1 : 0;
  return n;
}

void WorkerRegistry::NoteActivity(const std::string& supervisor_id, const std::string& job_id, uint64_t round) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(supervisor_id);
  if (it == slots_.end()) return;
  it->second.info.set_job_id(job_id);
  it->second.info.set_round(round);
}

void WorkerRegistry::NoteRoundDelivered(const std::string& supervisor_id, const v1::RoundResult& result,
                                        uint64_t staleness) {
  // Idle share of the round: the wait before its compute against that wait plus the compute.
  const double compute_ms = result.step_time_ms() * result.steps();
  const double idle_ms = std::max(0.0, result.network_wait_ms());
  const double idle_fraction = idle_ms + compute_ms > 0 ? idle_ms / (idle_ms + compute_ms) : 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slots_.find(supervisor_id);
    if (it == slots_.end()) return;
    v1::WorkerInfo& info = it->second.info;
    info.set_rounds_completed(info.rounds_completed() + 1);
    info.set_tokens_per_second(result.tokens_per_second());
    info.set_step_time_ms(result.step_time_ms());
    info.set_round_steps(result.steps());
    info.set_staleness(staleness);
    info.set_idle_fraction(idle_fraction);
  }
  metrics::Get(metrics::kShepherdWorkerStepSeconds, {supervisor_id}).Set(result.step_time_ms() / 1000.0);
  metrics::Get(metrics::kShepherdWorkerTokensPerSecond, {supervisor_id}).Set(result.tokens_per_second());
  metrics::Get(metrics::kShepherdWorkerRoundSteps, {supervisor_id}).Set(static_cast<double>(result.steps()));
  metrics::Get(metrics::kShepherdWorkerStaleness, {supervisor_id}).Set(static_cast<double>(staleness));
  metrics::Get(metrics::kShepherdWorkerIdleSecondsTotal, {supervisor_id}).Increment(idle_ms / 1000.0);
}

}  // namespace pcp::shepherd
