// Authorization of every call a gRPC server receives, in one server interceptor: it
// authenticates the caller (pcp/auth/authenticator.h), looks the method up in the
// service's MethodRule table, counts refusals and writes the audit line of audited methods.
// Handlers ask for the verdict with CallerOf() before they do anything.
//
//   Authenticator authn = ...;                     // from the config; outlives the server
//   std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> f;
//   f.push_back(MakeAuthorizationInterceptorFactory(
//       {.authenticator = &authn, .rules = kShepherdMethodRules,
//        .on_refusal = [](absl::string_view service, absl::string_view reason) { ... }}));
//   builder.experimental().SetInterceptorCreators(std::move(f));
//
//   grpc::ServerUnaryReactor* Admin::CancelJob(grpc::CallbackServerContext* ctx, ...) {
//     absl::StatusOr<Principal> caller = CallerOf(ctx);
//     if (!caller.ok()) return Finish(ctx, caller.status());   // UNAUTHENTICATED / PERMISSION_DENIED
//
// Why an interceptor plus a question in the handler: gRPC 1.51 gives a server interceptor
// the method name but no way to end a call before its handler runs, and an
// AuthMetadataProcessor can end it but does not see the method (and aborts on insecure
// credentials). So the interceptor decides and the handler obeys. As a safety net, a refused
// call's final status is replaced by the refusal even if a handler forgot to ask.
//
// The audit line (spdlog, info): "audit: pcp.v1.Admin/CancelJob by 'ops' (token, role admin)
// from ipv4:127.0.0.1:5123: OK; request {job_id: "job-0001"}"; the request is cut at 200
// characters. A call on a server without this interceptor has no verdict: CallerOf returns
// an anonymous principal (the services' own unit tests run that way).
#ifndef PCP_AUTH_AUTHORIZATION_H_
#define PCP_AUTH_AUTHORIZATION_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pcp/auth/authenticator.h"
#include "pcp/auth/method_rules.h"

namespace grpc {
class ServerContextBase;
namespace experimental {
class ServerInterceptorFactoryInterface;
}  // namespace experimental
}  // namespace grpc

namespace pcp::auth {

struct AuthorizationOptions {
  const Authenticator* authenticator = nullptr;  // must outlive the server
  std::vector<MethodRule> rules;                 // the method strings must outlive the server
  // Called once per refused call: ServiceLabel(method) and a kReason* constant.
  std::function<void(absl::string_view service, absl::string_view reason)> on_refusal;
};

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> MakeAuthorizationInterceptorFactory(
    AuthorizationOptions options);

// The verdict on the call of `context`: its principal, or the refusal to finish it with.
absl::StatusOr<Principal> CallerOf(const grpc::ServerContextBase* context);

}  // namespace pcp::auth

#endif  // PCP_AUTH_AUTHORIZATION_H_
