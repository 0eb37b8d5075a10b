#include "control_service.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "pcp/auth/authorization.h"
#include "pcp/auth/refused_reactor.h"
#include "pcp/rpc/grpc_status.h"

namespace pcp::shepherd {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

// One supervisor stream: gRPC's side of a SupervisorStream, which holds the logic. Every
// reaction is short and never blocks. The stream starts gRPC operations (WriteCommand,
// FinishStream) without its lock held; Send() runs under the registry's lock and starts
// writes, which is safe because gRPC runs a user reactor's reactions (OnWriteDone, which may
// call the registry) on its own threads, never inline in StartWrite.
class ControlService::Reactor final : public grpc::ServerBidiReactor<v1::SupervisorMessage, v1::ControlCommand>,
                                      public ControlTransport {
 public:
  Reactor(ControlService* service, grpc::CallbackServerContext* context, auth::Principal caller)
      : service_(service),
        context_(context),
        stream_(
            service->registry_, &service->options_, [service] { return service->Closed(); }, std::move(caller),
            context->peer(), this) {
    service_->Add(this);  // before any reaction can run, so OnDone always finds it
    StartRead(&in_);
  }

  void Tick(SupervisorStream::Clock::time_point now) { stream_.Tick(now); }
  void End(const absl::Status& why) { stream_.End(why, false, false); }

  void OnReadDone(bool ok) override {
    if (!ok) {
      stream_.OnReadsDone();  // half-closed or cancelled by the supervisor
      return;
    }
    if (stream_.OnRead(in_)) StartRead(&in_);
  }
  void OnWriteDone(bool ok) override { stream_.OnWriteDone(ok); }
  void OnCancel() override { stream_.OnCancel(); }
  void OnDone() override {
    service_->Remove(this);
    stream_.OnDone();
    delete this;
  }

  // ControlTransport
  void WriteCommand(const v1::ControlCommand* command) override { StartWrite(command); }
  void FinishStream(const absl::Status& status) override { Finish(ToGrpcStatus(status)); }
  void CancelStream() override { context_->TryCancel(); }

 private:
  ControlService* const service_;
  grpc::CallbackServerContext* const context_;
  SupervisorStream stream_;
  v1::SupervisorMessage in_;  // owned by the read side (one read at a time)
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
  for (Reactor* r : reactors_) r->End(closed);
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
