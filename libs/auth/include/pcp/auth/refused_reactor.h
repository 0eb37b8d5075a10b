// Reactors that end a streaming call at once with a refusal, for callback-API handlers
// whose caller was refused by the authorization interceptor (pcp/auth/authorization.h).
// Unary handlers need none: they finish context->DefaultReactor() with the status.
//
//   grpc::ServerWriteReactor<v1::JobEvent>* Admin::WatchJob(grpc::CallbackServerContext* ctx, ...) {
//     if (absl::Status s = CallerOf(ctx).status(); !s.ok()) return new RefusedWriteReactor<v1::JobEvent>(s);
//
// Each deletes itself when gRPC is done with it.
#ifndef PCP_AUTH_REFUSED_REACTOR_H_
#define PCP_AUTH_REFUSED_REACTOR_H_

#include <grpcpp/support/server_callback.h>

#include "absl/status/status.h"
#include "pcp/rpc/grpc_status.h"

namespace pcp::auth {

template <typename Response>
class RefusedWriteReactor final : public grpc::ServerWriteReactor<Response> {
 public:
  explicit RefusedWriteReactor(const absl::Status& status) { this->Finish(ToGrpcStatus(status)); }
  void OnDone() override { delete this; }
};

template <typename Request, typename Response>
class RefusedBidiReactor final : public grpc::ServerBidiReactor<Request, Response> {
 public:
  explicit RefusedBidiReactor(const absl::Status& status) { this->Finish(ToGrpcStatus(status)); }
  void OnDone() override { delete this; }
};

}  // namespace pcp::auth

#endif  // PCP_AUTH_REFUSED_REACTOR_H_
