#include "pcp/shepherd/control_registry.h"

#include <spdlog/spdlog.h>

#include <future>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "pcp/base/unix_time.h"

namespace pcp::shepherd {
namespace {

const char* CommandName(const v1::ControlCommand& command) {
  switch (command.kind_case()) {
    case v1::ControlCommand::kRestartWorker: return "restart_worker";
    case v1::ControlCommand::kDrainWorker: return "drain_worker";
    case v1::ControlCommand::kShutdown: return "shutdown";
    default: return nullptr;
  }
}

}  // namespace

absl::Status ValidateSupervisorId(absl::string_view id) {
  bool ok = !id.empty() && id.size() <= 128;
  for (char c : id) {
    ok = ok && (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == ':' || c == '-');
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("supervisor_id '", absl::CHexEscape(id.substr(0, 160)),
                   "': expected 1-128 characters of letters, digits, '.', '_', ':' or '-'"));
}

v1::ControlCommand MakeRestartWorker(absl::string_view reason, uint32_t grace_ms) {
  v1::ControlCommand c;
  c.mutable_restart_worker()->set_reason(std::string(reason));
  c.mutable_restart_worker()->set_grace_ms(grace_ms);
  return c;
}

v1::ControlCommand MakeDrainWorker(absl::string_view reason, uint32_t grace_ms) {
  v1::ControlCommand c;
  c.mutable_drain_worker()->set_reason(std::string(reason));
  c.mutable_drain_worker()->set_grace_ms(grace_ms);
  return c;
}

v1::ControlCommand MakeShutdown(absl::string_view reason, uint32_t grace_ms) {
  v1::ControlCommand c;
  c.mutable_shutdown()->set_reason(std::string(reason));
  c.mutable_shutdown()->set_grace_ms(grace_ms);
  return c;
}

ControlRegistry::ControlRegistry(absl::Duration forget_after)
    : forget_after_(absl::ToChronoSeconds(forget_after)), timer_([this] { TimerLoop(); }) {}

void ControlRegistry::ForgetGoneLocked(Clock::time_point now) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    const bool gone = !it->second.info.connected && now - it->second.last_seen > forget_after_;
    it = gone ? entries_.erase(it) : std::next(it);
  }
}

ControlRegistry::~ControlRegistry() {
  std::map<uint64_t, Pending> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    pending.swap(pending_);
    timer_cv_.notify_all();
  }
  timer_.join();
  for (auto& [id, p] : pending) {
    p.done(absl::UnavailableError(
        absl::StrCat("command ", id, " (", p.what, ") abandoned: the shepherd is shutting down")));
  }
}

SupervisorInfo ControlRegistry::Snapshot(const Entry& entry, Clock::time_point now) const {
  SupervisorInfo info = entry.info;
  info.last_seen = absl::FromChrono(now - entry.last_seen);
  return info;
}

std::vector<SupervisorInfo> ControlRegistry::ListSupervisors() const {
  const Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<SupervisorInfo> out;
  out.reserve(entries_.size());
  for (const auto& [id, entry] : entries_) out.push_back(Snapshot(entry, now));
  return out;
}

std::optional<SupervisorInfo> ControlRegistry::GetSupervisor(absl::string_view id) const {
  const Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return std::nullopt;
  return Snapshot(it->second, now);
}

uint32_t ControlRegistry::connected() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t n = 0;
  for (const auto& [id, entry] : entries_) n += entry.info.connected ? 1 : 0;
  return n;
}

absl::StatusOr<uint64_t> ControlRegistry::Connect(const v1::SupervisorHello& hello, ControlSession* session) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return absl::UnavailableError("the shepherd is shutting down");
  // New ids keep arriving on a long-lived shepherd: the entries of long-gone ones go.
  ForgetGoneLocked(Clock::now());
  Entry& entry = entries_[hello.supervisor_id()];
  if (entry.info.connected) {
    return absl::AlreadyExistsError(absl::StrCat("supervisor_id '", hello.supervisor_id(),
                                                 "' is already connected (from host '", entry.info.host,
                                                 "'); a second live stream with the same id is refused"));
  }
  entry.token = next_token_++;
  entry.session = session;
  entry.last_seen = Clock::now();
  SupervisorInfo& info = entry.info;
  info.supervisor_id = hello.supervisor_id();
  info.host = hello.host();
  info.version = hello.version();
  info.connected = true;
  info.worker = hello.worker();
  info.connected_unix_ms = NowUnixMs();
  info.disconnected_unix_ms = 0;
  info.disconnect_reason.clear();
  ++info.connections;
  info.heartbeats = 0;
  info.last_heartbeat_sequence = 0;
  return entry.token;
}

void ControlRegistry::Touch(absl::string_view id, uint64_t token) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it != entries_.end() && it->second.token == token) it->second.last_seen = Clock::now();
}

void ControlRegistry::Heartbeat(absl::string_view id, uint64_t token, const v1::SupervisorHeartbeat& heartbeat) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.token != token || !it->second.info.connected) return;
  Entry& entry = it->second;
  entry.last_seen = Clock::now();
  if (heartbeat.has_worker()) entry.info.worker = heartbeat.worker();
  ++entry.info.heartbeats;
  entry.info.last_heartbeat_sequence = heartbeat.heartbeat().sequence();
}

void ControlRegistry::Acknowledge(absl::string_view id, uint64_t token, const v1::CommandAck& ack) {
  CommandCallback done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(ack.command_id());
    if (it == pending_.end() || it->second.supervisor_id != id || it->second.token != token) {
      spdlog::warn(
          "supervisor '{}' acknowledged command {}, which is not pending for it "
          "(timed out or unknown)",
          std::string(id), ack.command_id());
      return;
    }
    done = std::move(it->second.done);
    spdlog::info("supervisor '{}' acknowledged command {} ({}): code {} {}", std::string(id), ack.command_id(),
                 it->second.what, ack.code(), ack.message());
    pending_.erase(it);
  }
  done(ack);
}

void ControlRegistry::Disconnect(absl::string_view id, uint64_t token, const absl::Status& why) {
  std::vector<std::pair<uint64_t, Pending>> failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end() || it->second.token != token || !it->second.info.connected) return;
    Entry& entry = it->second;
    entry.info.connected = false;
    entry.session = nullptr;
    entry.info.disconnected_unix_ms = NowUnixMs();
    entry.info.disconnect_reason = why.ok() ? "stream ended" : std::string(why.message());
    for (auto p = pending_.begin(); p != pending_.end();) {
      if (p->second.supervisor_id == id && p->second.token == token) {
        failed.emplace_back(p->first, std::move(p->second));
        p = pending_.erase(p);
      } else {
        ++p;
      }
    }
  }
  for (auto& [command_id, p] : failed) {
    p.done(absl::UnavailableError(absl::StrCat("supervisor '", std::string(id),
                                               "' disconnected before acknowledging command ", command_id, " (", p.what,
                                               ")")));
  }
}

void ControlRegistry::SendCommand(absl::string_view id, v1::ControlCommand command, absl::Duration timeout,
                                  CommandCallback done) {
  const char* what = CommandName(command);
  if (what == nullptr) {
    done(absl::InvalidArgumentError("command: expected restart_worker, drain_worker or shutdown"));
    return;
  }
  absl::Status refused;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) {
      refused = absl::NotFoundError(absl::StrCat("unknown supervisor '", std::string(id), "'"));
    } else if (!it->second.info.connected || it->second.session == nullptr) {
      refused = absl::UnavailableError(absl::StrCat("supervisor '", std::string(id), "' is not connected (",
                                                    it->second.info.disconnect_reason, ")"));
    } else if (stopping_) {
      refused = absl::UnavailableError("the shepherd is shutting down");
    } else {
      const uint64_t command_id = next_command_id_++;
      command.set_command_id(command_id);
      Pending& p = pending_[command_id];
      p.supervisor_id = std::string(id);
      p.token = it->second.token;
      p.what = what;
      p.deadline = Clock::now() + absl::ToChronoNanoseconds(timeout);
      p.done = std::move(done);
      spdlog::info("sending command {} ({}) to supervisor '{}'", command_id, what, std::string(id));
      it->second.session->Send(std::move(command));
      timer_cv_.notify_all();
      return;
    }
  }
  done(refused);
}

absl::StatusOr<v1::CommandAck> ControlRegistry::SendCommandAndWait(absl::string_view id, v1::ControlCommand command,
                                                                   absl::Duration timeout) {
  auto promise = std::make_shared<std::promise<absl::StatusOr<v1::CommandAck>>>();
  std::future<absl::StatusOr<v1::CommandAck>> future = promise->get_future();
  SendCommand(id, std::move(command), timeout,
              [promise](absl::StatusOr<v1::CommandAck> outcome) { promise->set_value(std::move(outcome)); });
  return future.get();  // resolved by the ack, a disconnect, the timer or the destructor
}

void ControlRegistry::TimerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const Clock::time_point now = Clock::now();
    std::vector<std::pair<uint64_t, Pending>> expired;
    Clock::time_point next = Clock::time_point::max();
    for (auto p = pending_.begin(); p != pending_.end();) {
      if (p->second.deadline <= now) {
        expired.emplace_back(p->first, std::move(p->second));
        p = pending_.erase(p);
      } else {
        next = std::min(next, p->second.deadline);
        ++p;
      }
    }
    if (!expired.empty()) {
      lock.unlock();
      for (auto& [command_id, p] : expired) {
        spdlog::warn("command {} ({}) to supervisor '{}' not acknowledged in time", command_id, p.what,
                     p.supervisor_id);
        p.done(absl::DeadlineExceededError(absl::StrCat("supervisor '", p.supervisor_id,
                                                        "' did not acknowledge command ", command_id, " (", p.what,
                                                        ") in time; it may still be carried out")));
      }
      lock.lock();
      continue;
    }
    if (next == Clock::time_point::max()) {
      timer_cv_.wait(lock);
    } else {
      timer_cv_.wait_until(lock, next);
    }
  }
}

}  // namespace pcp::shepherd
