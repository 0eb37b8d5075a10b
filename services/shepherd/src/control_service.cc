#include "control_service.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <utility>

#include "absl/strings/str_cat.h"
#include "auth_refusals.h"
#include "pcp/auth/authorization.h"
#include "pcp/auth/refused_reactor.h"
#include "pcp/rpc/grpc_status.h"

namespace pcp::shepherd {
namespace {

using Clock = std::chrono::steady_clock;

int64_t NowUnixMs() { return absl::ToUnixMillis(absl::Now()); }

std::string Text(const absl::Status& s) { return std::string(s.message()); }

}  // namespace

// One supervisor stream. Every reaction is short and never blocks. gRPC operations
// (StartWrite, Finish) are started without mu_ held. Send() runs under the registry's lock
// and starts writes; that is safe because gRPC runs a user reactor's reactions (OnWriteDone,
// which may call the registry) on its own threads, never inline in StartWrite.
class ControlService::Reactor final
    : public grpc::ServerBidiReactor<v1::SupervisorMessage, v1::ControlCommand>,
      public ControlSession {
 public:
  Reactor(ControlService* service, grpc::CallbackServerContext* context, auth::Principal caller)
      : service_(service),
        caller_(std::move(caller)),
        registry_(service->registry_),
        context_(context),
        peer_(context->peer()),
        last_received_(Clock::now().time_since_epoch().count()) {
    service_->Add(this);  // before any reaction can run, so OnDone always finds it
    StartRead(&in_);
  }

  // ControlSession: called by the registry (under its lock).
  void Send(v1::ControlCommand command) override { Enqueue(std::move(command)); }

  // Called by the service's ticker: heartbeat, or end a silent stream.
  void Tick(Clock::time_point now) {
    bool registered;
    std::string id;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ending_) return;
      registered = token_ != 0;
      id = id_;
    }
    const Clock::duration silent =
        now - Clock::time_point(Clock::duration(last_received_.load()));
    const auto silent_ms = std::chrono::duration_cast<std::chrono::milliseconds>(silent).count();
    const auto timeout = std::chrono::milliseconds(service_->options_.heartbeat_timeout_ms);
    if (silent >= timeout) {
      End(registered ? absl::UnavailableError(absl::StrCat(
                           "supervisor '", id, "' silent for ", silent_ms, " ms (timeout ",
                           service_->options_.heartbeat_timeout_ms, " ms)"))
                     : absl::DeadlineExceededError(absl::StrCat(
                           "no SupervisorHello within ", service_->options_.heartbeat_timeout_ms,
                           " ms")),
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

  // Ends the stream with `why` (the first call wins) and leaves the registry.
  // keep_queue: send what is queued first (a rejection's welcome). cancel: the peer is
  // presumed dead; cancel rather than wait for writes.
  void End(const absl::Status& why, bool keep_queue, bool cancel) {
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
    if (cancel) context_->TryCancel();
    Pump();
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      End(absl::OkStatus(), false, false);  // half-closed or cancelled by the supervisor
      return;
    }
    last_received_.store(Clock::now().time_since_epoch().count());
    std::string id;
    uint64_t token;
    {
      std::lock_guard<std::mutex> lock(mu_);
      id = id_;
      token = token_;
    }
    if (token == 0) {
      if (absl::Status admitted = Admit(in_); !admitted.ok()) {
        spdlog::warn("refused supervisor stream from {}: {}", peer_, Text(admitted));
        v1::ControlCommand welcome;
        welcome.mutable_welcome()->mutable_rejection()->set_code(
            static_cast<int>(admitted.code()));
        welcome.mutable_welcome()->mutable_rejection()->set_message(Text(admitted));
        welcome.mutable_welcome()->set_shepherd_version(service_->options_.version);
        Enqueue(std::move(welcome));
        End(admitted, /*keep_queue=*/true, /*cancel=*/false);
        return;
      }
    } else {
      switch (in_.kind_case()) {
        case v1::SupervisorMessage::kHeartbeat:
          registry_->Heartbeat(id, token, in_.heartbeat());
          break;
        case v1::SupervisorMessage::kAck:
          registry_->Touch(id, token);
          registry_->Acknowledge(id, token, in_.ack());
          break;
        case v1::SupervisorMessage::kHello:
          End(absl::InvalidArgumentError("SupervisorHello sent twice on one stream"), false,
              false);
          return;
        default:
          End(absl::InvalidArgumentError("empty SupervisorMessage"), false, false);
          return;
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ending_) return;  // no more reads once Finish is under way
    }
    StartRead(&in_);
  }

  void OnWriteDone(bool ok) override {
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

  void OnCancel() override { End(absl::CancelledError("stream cancelled"), false, false); }

  void OnDone() override {
    service_->Remove(this);
    std::string id;
    uint64_t token;
    {
      std::lock_guard<std::mutex> lock(mu_);
      id = id_;
      token = token_;
    }
    if (token != 0) registry_->Disconnect(id, token, absl::UnavailableError("stream closed"));
    delete this;
  }

 private:
  // Checks the hello and admits the stream into the registry.
  absl::Status Admit(const v1::SupervisorMessage& message) {
    if (message.kind_case() != v1::SupervisorMessage::kHello) {
      return absl::InvalidArgumentError("the first message must be a SupervisorHello");
    }
    const v1::SupervisorHello& hello = message.hello();
    if (hello.protocol_version() != v1::PROTOCOL_VERSION_1) {
      return absl::FailedPreconditionError(absl::StrCat(
          "protocol_version ", hello.protocol_version(),
          " is not supported; this shepherd speaks PROTOCOL_VERSION_1 (1)"));
    }
    if (absl::Status s = ValidateSupervisorId(hello.supervisor_id()); !s.ok()) return s;
    if (absl::Status bound = auth::CheckNodeIdentity(caller_, hello.supervisor_id()); !bound.ok()) {
      CountAuthRefusal("Control", auth::kReasonNodeMismatch);
      return bound;
    }
    if (absl::Status closed = service_->Closed(); !closed.ok()) return closed;
    absl::StatusOr<uint64_t> token = registry_->Connect(hello, this);
    if (!token.ok()) return token.status();
    v1::ControlCommand welcome;
    welcome.mutable_welcome()->set_heartbeat_interval_ms(service_->options_.heartbeat_interval_ms);
    welcome.mutable_welcome()->set_heartbeat_timeout_ms(service_->options_.heartbeat_timeout_ms);
    welcome.mutable_welcome()->set_shepherd_version(service_->options_.version);
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
      registry_->Disconnect(hello.supervisor_id(), *token,
                            why.ok() ? absl::UnavailableError("stream closed") : why);
      return why.ok() ? absl::CancelledError("stream ended during the handshake") : why;
    }
    spdlog::info("supervisor '{}' connected from {} (host '{}', version {}, worker pid {})",
                 hello.supervisor_id(), peer_, hello.host(), hello.version(),
                 hello.worker().pid());
    Pump();
    return absl::OkStatus();
  }

  void Enqueue(v1::ControlCommand command) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ending_) return;
      queue_.push_back(std::move(command));
    }
    Pump();
  }

  // Starts the next write, or Finish once ending and nothing is left to write.
  void Pump() {
    enum class Action { kNone, kWrite, kFinish } action = Action::kNone;
    grpc::Status status;
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
        status = ToGrpcStatus(end_status_);
        action = Action::kFinish;
      }
    }
    if (action == Action::kWrite) StartWrite(&out_);
    if (action == Action::kFinish) Finish(status);
  }

  ControlService* const service_;
  const auth::Principal caller_;  // who opened the stream; its hello must be for its own id
  ControlRegistry* const registry_;
  grpc::CallbackServerContext* const context_;
  const std::string peer_;
  std::atomic<Clock::rep> last_received_;
  v1::SupervisorMessage in_;  // owned by the read side (one read at a time)

  std::mutex mu_;
  std::deque<v1::ControlCommand> queue_;
  v1::ControlCommand out_;  // being written; touched only while !writing_
  bool writing_ = false;
  bool welcomed_ = false;
  bool ending_ = false;
  bool finished_ = false;
  absl::Status end_status_;
  std::string id_;
  uint64_t token_ = 0;  // 0 until admitted
  uint64_t heartbeat_sequence_ = 0;
};

ControlService::ControlService(ControlRegistry* registry, ControlServiceOptions options)
    : registry_(registry), options_(std::move(options)), ticker_([this] { TickLoop(); }) {}

ControlService::~ControlService() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  ticker_.join();
}

grpc::ServerBidiReactor<v1::SupervisorMessage, v1::ControlCommand>* ControlService::Supervise(
    grpc::CallbackServerContext* context) {
  absl::StatusOr<auth::Principal> caller = auth::CallerOf(context);
  if (!caller.ok()) {
    return new auth::RefusedBidiReactor<v1::SupervisorMessage, v1::ControlCommand>(caller.status());
  }
  return new Reactor(this, context, *std::move(caller));
}

void ControlService::Add(Reactor* reactor) {
  std::lock_guard<std::mutex> lock(mu_);
  reactors_.insert(reactor);
}

void ControlService::Remove(Reactor* reactor) {
  std::lock_guard<std::mutex> lock(mu_);
  reactors_.erase(reactor);
}

void ControlService::EndAllStreams(const absl::Status& why) {
  const absl::Status closed = why.ok() ? absl::UnavailableError("the shepherd is shutting down") : why;
  {
    std::lock_guard<std::mutex> lock(closed_mu_);
    closed_ = closed;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (Reactor* r : reactors_) r->End(closed, false, false);
}

absl::Status ControlService::Closed() const {
  std::lock_guard<std::mutex> lock(closed_mu_);
  return closed_;
}

void ControlService::TickLoop() {
  const auto interval = std::chrono::milliseconds(std::max<uint32_t>(options_.heartbeat_interval_ms, 10));
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const Clock::time_point now = Clock::now();
    // Reactors remove themselves under mu_ before they are deleted, so each is alive here.
    for (Reactor* r : reactors_) r->Tick(now);
    cv_.wait_for(lock, interval, [this] { return stopping_; });
  }
}

}  // namespace pcp::shepherd
