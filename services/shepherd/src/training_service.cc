#include "training_service.h"

#include "absl/strings/str_cat.h"
#include "pcp/auth/authorization.h"
#include "pcp/auth/refused_reactor.h"
#include "pcp/rpc/chunk_wire.h"
#include "pcp/rpc/grpc_status.h"
#include "shepherd_metrics.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {
namespace {

// Reads with StartRead/OnReadDone and writes what the session hands it, one message at a
// time. Every reaction returns at once: the session only queues, copies and validates.
// Messages travel as raw ByteBuffers so that chunk data is neither copied into protobuf
// messages on the way out nor out of them on the way in (pcp/rpc/chunk_wire.h); the bytes
// on the wire are the same protobuf messages as with the generated typed API.
class ConnectReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
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
    const size_t bytes = in_.Length();
    if (absl::Status parsed = parser_.Parse(&in_, kResultChunkDataPath, &message_); !parsed.ok()) {
      session_->Close(absl::InvalidArgumentError(
          absl::StrCat("a message of ", bytes, " bytes is not a valid pcp.v1.WorkerMessage: ", parsed.message())));
      return;
    }
    CountReceived(message_, bytes);
    session_->OnRead(message_, parser_.payload());
    if (session_->reading()) StartRead(&in_);
  }
  void OnWriteDone(bool ok) override {
    out_.Clear();
    session_->OnWriteDone(ok);
  }
  void OnCancel() override { session_->OnCancelled(); }
  void OnDone() override {
    spdlog::debug("Connect stream of session {} done", session_->session_id());
    session_->OnTransportDone();
    delete this;
  }

  // SessionTransport
  void StartWrite(const v1::ShepherdMessage* message, const ChunkPayload* payload) override {
    if (payload != nullptr) {
      out_ = SerializeWithPayload(*message, kParameterChunkDataPath, *payload);
    } else {
      grpc::Slice slice(message->SerializeAsString());
      out_ = grpc::ByteBuffer(&slice, 1);
    }
    CountSent(*message, out_.Length());
    ServerBidiReactor::StartWrite(&out_);
  }
  void Finish(const absl::Status& status) override { ServerBidiReactor::Finish(ToGrpcStatus(status)); }
  void Cancel() override { context_->TryCancel(); }

 private:
  grpc::CallbackServerContext* context_;
  std::shared_ptr<WorkerSession> session_;
  grpc::ByteBuffer in_, out_;
  ChunkMessageParser parser_;
  v1::WorkerMessage message_;
};

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* TrainingService::Connect(
    grpc::CallbackServerContext* context) {
  absl::StatusOr<auth::Principal> caller = auth::CallerOf(context);
  if (!caller.ok()) return new auth::RefusedBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>(caller.status());
  return new ConnectReactor(context, registry_->NewSession(context->peer(), *std::move(caller)));
}

}  // namespace pcp::shepherd
