#include "control_stream.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "auth_refusals.h"
#include "pcp/base/unix_time.h"

namespace pcp::shepherd {
namespace {

std::string Text(const absl::Status& s) { return std::string(s.message()); }

}  // namespace

SupervisorStream::SupervisorStream(ControlRegistry* registry, const ControlServiceOptions* options,
                                   std::function<absl::Status()> closed, auth::Principal caller, std::string peer,
                                   ControlTransport* transport)
    : registry_(registry),
      options_(options),
      closed_(std::move(closed)),
      caller_(std::move(caller)),
      peer_(std::move(peer)),
      transport_(transport),
      last_received_(Clock::now().time_since_epoch().count()) {}

void SupervisorStream::Tick(Clock::time_point now) {
  bool registered;
  std::string id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ending_) return;
    registered = token_ != 0;
    id = id_;
  }
  const Clock::duration silent = now - Clock::time_point(Clock::duration(last_received_.load()));
  const auto silent_ms = std::chrono::duration_cast<std::chrono::milliseconds>(silent).count();
  const auto timeout = std::chrono::milliseconds(options_->heartbeat_timeout_ms);
  if (silent >= timeout) {
    End(registered ? absl::UnavailableError(absl::StrCat("supervisor '", id, "' silent for ", silent_ms,
                                                         " ms (timeout ", options_->heartbeat_timeout_ms, " ms)"))
                   : absl::DeadlineExceededError(
                         absl::StrCat("no SupervisorHello within ", options_->heartbeat_timeout_ms, " ms")),
        /*keep_queue=*/false, /*cancel=*/true);
    return;
  }
  if (!registered) return;
  v1::ControlCommand beat;
  {
    std::lock_guard<std::mutex> lock(mu_);
    beat.mutable_heartbeat()->set_sequence(++heartbeat_sequence_);
  }
  beat.mutable_heartbeat()->set_sent_unix_ms(NowUnixMs());
  Enqueue(std::move(beat));
}

void SupervisorStream::End(const absl::Status& why, bool keep_queue, bool cancel) {
  std::string id;
  uint64_t token;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ending_) return;
    ending_ = true;
    end_status_ = why;
    if (!keep_queue) queue_.clear();
    id = id_;
    token = token_;
  }
  if (token != 0) {
    if (why.ok()) {
      spdlog::info("supervisor '{}' ({}) closed its control stream", id, peer_);
    } else {
      spdlog::warn("control stream of supervisor '{}' ({}) ended: {}", id, peer_, Text(why));
    }
    registry_->Disconnect(id, token, why.ok() ? absl::UnavailableError("stream closed") : why);
  }
  if (cancel) transport_->CancelStream();
  Pump();
}

bool SupervisorStream::OnRead(const v1::SupervisorMessage& message) {
  last_received_.store(Clock::now().time_since_epoch().count());
  std::string id;
  uint64_t token;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = id_;
    token = token_;
  }
  if (token == 0) {
    if (absl::Status admitted = Admit(message); !admitted.ok()) {
      spdlog::warn("refused supervisor stream from {}: {}", peer_, Text(admitted));
      v1::ControlCommand welcome;
      welcome.mutable_welcome()->mutable_rejection()->set_code(static_cast<int>(admitted.code()));
      welcome.mutable_welcome()->mutable_rejection()->set_message(Text(admitted));
      welcome.mutable_welcome()->set_shepherd_version(options_->version);
      Enqueue(std::move(welcome));
      End(admitted, /*keep_queue=*/true, /*cancel=*/false);
      return false;
    }
  } else {
    switch (message.kind_case()) {
      case v1::SupervisorMessage::kHeartbeat: registry_->Heartbeat(id, token, message.heartbeat()); break;
      case v1::SupervisorMessage::kAck:
        registry_->Touch(id, token);
        registry_->Acknowledge(id, token, message.ack());
        break;
      case v1::SupervisorMessage::kHello:
        End(absl::InvalidArgumentError("SupervisorHello sent twice on one stream"), false, false);
        return false;
      default: End(absl::InvalidArgumentError("empty SupervisorMessage"), false, false); return false;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  return !ending_;  // no more reads once Finish is under way
}

void SupervisorStream::OnWriteDone(bool ok) {
  bool failed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok) {
      queue_.clear();
      failed = true;
    }
  }
  if (failed) End(absl::UnavailableError("sending to the supervisor failed"), false, false);
  Pump();
}

void SupervisorStream::OnDone() {
  std::string id;
  uint64_t token;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = id_;
    token = token_;
  }
  if (token != 0) registry_->Disconnect(id, token, absl::UnavailableError("stream closed"));
}

absl::Status SupervisorStream::Admit(const v1::SupervisorMessage& message) {
  if (message.kind_case() != v1::SupervisorMessage::kHello) {
    return absl::InvalidArgumentError("the first message must be a SupervisorHello");
  }
  const v1::SupervisorHello& hello = message.hello();
  if (hello.protocol_version() != v1::PROTOCOL_VERSION_1) {
    return absl::FailedPreconditionError(
        absl::StrCat("protocol_version ", hello.protocol_version(),
                     " is not supported; this shepherd speaks PROTOCOL_VERSION_1 (1)"));
  }
  if (absl::Status s = ValidateSupervisorId(hello.supervisor_id()); !s.ok()) return s;
  if (absl::Status bound = auth::CheckNodeIdentity(caller_, hello.supervisor_id()); !bound.ok()) {
    CountAuthRefusal("Control", auth::kReasonNodeMismatch);
    return bound;
  }
  if (absl::Status closed = closed_(); !closed.ok()) return closed;
  absl::StatusOr<uint64_t> token = registry_->Connect(hello, this);
  if (!token.ok()) return token.status();
  v1::ControlCommand welcome;
  welcome.mutable_welcome()->set_heartbeat_interval_ms(options_->heartbeat_interval_ms);
  welcome.mutable_welcome()->set_heartbeat_timeout_ms(options_->heartbeat_timeout_ms);
  welcome.mutable_welcome()->set_shepherd_version(options_->version);
  bool ended;
  absl::Status why;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id_ = hello.supervisor_id();
    token_ = *token;
    ended = ending_;
    why = end_status_;
    if (!ended) {
      // The welcome goes first, before commands the registry may already have queued.
      queue_.push_front(std::move(welcome));
      welcomed_ = true;
    }
  }
  if (ended) {
    // The stream was ended (cancelled, shepherd stopping) while we were admitting it.
    registry_->Disconnect(hello.supervisor_id(), *token, why.ok() ? absl::UnavailableError("stream closed") : why);
    return why.ok() ? absl::CancelledError("stream ended during the handshake") : why;
  }
  spdlog::info("supervisor '{}' connected from {} (host '{}', version {}, worker pid {})", hello.supervisor_id(), peer_,
               hello.host(), hello.version(), hello.worker().pid());
  Pump();
  return absl::OkStatus();
}

void SupervisorStream::Enqueue(v1::ControlCommand command) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ending_) return;
    queue_.push_back(std::move(command));
  }
  Pump();
}

void SupervisorStream::Pump() {
  enum class Action { kNone, kWrite, kFinish } action = Action::kNone;
  absl::Status status;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (writing_ || finished_) return;
    // Nothing but a rejection may be written before the welcome is queued.
    if (!queue_.empty() && (welcomed_ || ending_)) {
      out_ = std::move(queue_.front());
      queue_.pop_front();
      writing_ = true;
      action = Action::kWrite;
    } else if (ending_) {
      finished_ = true;
      status = end_status_;
      action = Action::kFinish;
    }
  }
  if (action == Action::kWrite) transport_->WriteCommand(&out_);
  if (action == Action::kFinish) transport_->FinishStream(status);
}

}  // namespace pcp::shepherd
