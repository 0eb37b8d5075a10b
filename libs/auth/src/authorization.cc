#include "pcp/auth/authorization.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/server_interceptor.h>

#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include <google/protobuf/message.h>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "pcp/rpc/grpc_status.h"
#include "spdlog/spdlog.h"

namespace pcp::auth {
namespace {

// `text` cut to at most 200 bytes (saying how long it was), for log lines that carry what a
// caller sent.
std::string Bounded(absl::string_view text) {
  constexpr size_t kMax = 200;
  if (text.size() <= kMax) return std::string(text);
  return absl::StrCat(text.substr(0, kMax), "... (", text.size(), " bytes)");
}

using grpc::experimental::InterceptionHookPoints;

constexpr size_t kAuditRequestChars = 200;

// Verdicts of the calls in flight, by their server context. An entry lives from the call's
// initial metadata until the interceptor is destroyed (the call is over), so a context
// address reused by a later call never sees a stale verdict.
class Verdicts {
 public:
  static Verdicts& Get() {
    static auto* verdicts = new Verdicts;
    return *verdicts;
  }
  void Put(const void* context, absl::StatusOr<Principal> verdict) {
    std::lock_guard<std::mutex> lock(mu_);
    map_.insert_or_assign(context, std::move(verdict));
  }
  void Erase(const void* context) {
    std::lock_guard<std::mutex> lock(mu_);
    map_.erase(context);
  }
  absl::StatusOr<Principal> Find(const void* context) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(context);
    if (it == map_.end()) return Principal{};
    return it->second;
  }

 private:
  std::mutex mu_;
  absl::flat_hash_map<const void*, absl::StatusOr<Principal>> map_;
};

absl::string_view ViaName(Principal::Via via) {
  switch (via) {
    case Principal::Via::kCertificate: return "certificate";
    case Principal::Via::kToken: return "token";
    case Principal::Via::kNone: break;
  }
  return "no credential";
}

class AuthorizationInterceptor final : public grpc::experimental::Interceptor {
 public:
  AuthorizationInterceptor(const AuthorizationOptions* options, grpc::experimental::ServerRpcInfo* info)
      : options_(options), info_(info), method_(info->method() == nullptr ? "" : info->method()) {}
  ~AuthorizationInterceptor() override { Verdicts::Get().Erase(info_->server_context()); }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      Decide(*methods->GetRecvInitialMetadata());
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) && Audited() &&
        request_.empty()) {
      // Typed (protobuf) services only: audited methods are Admin's unary calls.
      if (const auto* message = static_cast<const google::protobuf::Message*>(methods->GetRecvMessage())) {
        request_ = message->ShortDebugString();
        if (request_.size() > kAuditRequestChars) request_ = absl::StrCat(request_.substr(0, kAuditRequestChars), "…");
      }
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      grpc::Status status = methods->GetSendStatus();
      if (!verdict_.ok() && status.error_code() != static_cast<grpc::StatusCode>(verdict_.status().code())) {
        status = ToGrpcStatus(verdict_.status());
        methods->ModifySendStatus(status);
      }
      if (Audited()) Audit(status);
    }
    methods->Proceed();
  }

 private:
  bool Audited() const { return rule_ != nullptr && rule_->audit == Audit::kYes; }

  void Decide(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
    rule_ = FindMethodRule(options_->rules, method_);
    std::string authorization;
    if (auto it = metadata.find("authorization"); it != metadata.end()) {
      authorization.assign(it->second.data(), it->second.size());
    }
    std::vector<std::string>& identities = peer_identities_;
    grpc::ServerContextBase* context = info_->server_context();
    if (std::shared_ptr<const grpc::AuthContext> auth = context->auth_context();
        auth != nullptr && auth->IsPeerAuthenticated()) {
      for (const grpc::string_ref& id : auth->GetPeerIdentity()) identities.emplace_back(id.data(), id.size());
    }
    const Authenticator& authn = *options_->authenticator;
    absl::string_view reason;
    const bool open = rule_ != nullptr && rule_->roles.empty();
    if (open || !authn.enabled()) {
      verdict_ = Principal{};
    } else {
      verdict_ = authn.Authenticate(authorization, identities, &reason);
      if (verdict_.ok()) {
        caller_ = *verdict_;
        if (absl::Status allowed = Authorize(rule_, method_, *verdict_, true, &reason); !allowed.ok())
          verdict_ = allowed;
      }
    }
    if (!verdict_.ok()) {
      // The method is the caller's to choose: bounded in the log, as in the metric's label.
      spdlog::warn("refused {} from {}: {}", Bounded(method_), context->peer(), Bounded(verdict_.status().ToString()));
      if (options_->on_refusal) options_->on_refusal(ServiceLabel(method_), reason);
    }
    Verdicts::Get().Put(context, verdict_);
  }

  void Audit(const grpc::Status& status) const {
    // The caller as authenticated, also when its role was not enough. A call judged by its
    // token that also came with a verified certificate names both: the token decided, the
    // certificate says whose connection carried it.
    const std::string certificate =
        peer_identities_.empty() ? ""
                                 : absl::StrCat("certificate '", Bounded(absl::StrJoin(peer_identities_, "', '")), "'");
    std::string who;
    if (caller_.has_value()) {
      who = absl::StrCat("'", caller_->name, "' (", ViaName(caller_->via),
                         caller_->roles.empty() ? "" : absl::StrCat(", role ", caller_->roles.ToString()),
                         caller_->via == Principal::Via::kCertificate || certificate.empty() ? "" : "; ",
                         caller_->via == Principal::Via::kCertificate ? "" : certificate, ")");
    } else if (verdict_.ok()) {
      who = "an anonymous caller (auth off)";
    } else {
      who = certificate.empty() ? std::string("an unauthenticated caller")
                                : absl::StrCat("an unauthenticated caller (", certificate, ")");
    }
    spdlog::info("audit: {} by {} from {}: {}{}{}; request {{{}}}", method_.substr(1), who,
                 info_->server_context()->peer(),
                 absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())), status.ok() ? "" : ": ",
                 status.error_message(), request_);
  }

  const AuthorizationOptions* options_;
  grpc::experimental::ServerRpcInfo* info_;
  const std::string method_;
  const MethodRule* rule_ = nullptr;
  absl::StatusOr<Principal> verdict_ = Principal{};
  std::optional<Principal> caller_;           // authenticated, whatever the verdict
  std::vector<std::string> peer_identities_;  // the verified client certificate's, if any
  std::string request_;
};

class AuthorizationFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit AuthorizationFactory(AuthorizationOptions options) : options_(std::move(options)) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    return new AuthorizationInterceptor(&options_, info);
  }

 private:
  const AuthorizationOptions options_;
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> MakeAuthorizationInterceptorFactory(
    AuthorizationOptions options) {
  return std::make_unique<AuthorizationFactory>(std::move(options));
}

absl::StatusOr<Principal> CallerOf(const grpc::ServerContextBase* context) { return Verdicts::Get().Find(context); }

}  // namespace pcp::auth
