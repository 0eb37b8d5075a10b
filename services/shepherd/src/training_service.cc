#include "training_service.h"

#include "pcp/rpc/grpc_status.h"
#include "shepherd_metrics.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {
namespace {

// Reads with StartRead/OnReadDone and writes what the session hands it, one message at a
// time. Every reaction returns at once: the session only queues, copies and validates.
class ConnectReactor final : public grpc::ServerBidiReactor<v1::WorkerMessage, v1::ShepherdMessage>,
                             public SessionTransport {
 public:
  ConnectReactor(grpc::CallbackServerContext* context, std::shared_ptr<WorkerSession> session)
      : context_(context), session_(std::move(session)) {
    session_->AttachTransport(this);
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      // A half-close is the worker leaving; a cancelled call is a broken connection.
      if (context_->IsCancelled()) {
        session_->OnCancelled();
      } else {
        session_->OnReadsDone();
      }
      return;
    }
    CountReceived(in_);
    session_->OnRead(in_);
    if (session_->reading()) StartRead(&in_);
  }
  void OnWriteDone(bool ok) override { session_->OnWriteDone(ok); }
  void OnCancel() override { session_->OnCancelled(); }
  void OnDone() override {
    spdlog::debug("Connect stream of session {} done", session_->session_id());
    session_->OnTransportDone();
    delete this;
  }

  // SessionTransport
  void StartWrite(const v1::ShepherdMessage* message) override {
    CountSent(*message);
    ServerBidiReactor::StartWrite(message);
  }
  void Finish(const absl::Status& status) override { ServerBidiReactor::Finish(ToGrpcStatus(status)); }
  void Cancel() override { context_->TryCancel(); }

 private:
  grpc::CallbackServerContext* context_;
  std::shared_ptr<WorkerSession> session_;
  v1::WorkerMessage in_;
};

}  // namespace

grpc::ServerBidiReactor<v1::WorkerMessage, v1::ShepherdMessage>* TrainingService::Connect(
    grpc::CallbackServerContext* context) {
  return new ConnectReactor(context, registry_->NewSession(context->peer()));
}

}  // namespace pcp::shepherd
