#include "shepherd_metrics.h"

#include <grpcpp/support/server_interceptor.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "pcp/metrics/registry.h"
#include "pcp/rpc/traffic_kind.h"

namespace pcp::shepherd {
namespace {

using metrics::Counter;

constexpr absl::string_view kAdminPrefix = "/pcp.v1.Admin/";

class AdminMetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit AdminMetricsInterceptor(std::string method) : method_(std::move(method)) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      metrics::Get(metrics::kShepherdAdminRequestsTotal,
                   {method_, absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code()))})
          .Increment();
    }
    methods->Proceed();
  }

 private:
  const std::string method_;
};

class AdminMetricsFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    const absl::string_view method = info->method() == nullptr ? "" : info->method();
    if (!absl::StartsWith(method, kAdminPrefix)) return nullptr;
    return new AdminMetricsInterceptor(std::string(method.substr(kAdminPrefix.size())));
  }
};

}  // namespace

void CountSent(const v1::ShepherdMessage& message, size_t bytes) {
  metrics::Get(metrics::kShepherdBytesSentTotal, {TrafficKind(message)}).Increment(static_cast<double>(bytes));
}

void CountReceived(const v1::WorkerMessage& message, size_t bytes) {
  metrics::Get(metrics::kShepherdBytesReceivedTotal, {TrafficKind(message)}).Increment(static_cast<double>(bytes));
}

std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> AdminMetricsInterceptors() {
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> out;
  out.push_back(std::make_unique<AdminMetricsFactory>());
  return out;
}

}  // namespace pcp::shepherd
