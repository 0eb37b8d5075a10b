#include "shepherd_metrics.h"

#include <grpcpp/support/server_interceptor.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "pcp/codec/codec.h"
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

void Count(metrics::CounterId wire, metrics::CounterId f32, const Traffic& t, size_t bytes) {
  metrics::Get(wire, {t.kind, t.codec}).Increment(static_cast<double>(bytes));
  if (t.f32_bytes > 0) metrics::Get(f32, {t.kind, t.codec}).Increment(static_cast<double>(t.f32_bytes));
}

// The sum over every codec of `counter`{kind, codec}.
double SumOverCodecs(metrics::CounterId counter, absl::string_view kind) {
  double sum = 0;
  for (const auto& entry : codec::kCodecNames) sum += metrics::Get(counter, {kind, entry.second}).Value();
  return sum;
}

}  // namespace

void CountSent(const v1::ShepherdMessage& message, size_t bytes) {
  Count(metrics::kShepherdBytesSentTotal, metrics::kShepherdPayloadF32BytesSentTotal, TrafficOf(message), bytes);
}

void CountReceived(const v1::WorkerMessage& message, size_t bytes) {
  Count(metrics::kShepherdBytesReceivedTotal, metrics::kShepherdPayloadF32BytesReceivedTotal, TrafficOf(message),
        bytes);
}

double ThetaBytesSent() {
  return SumOverCodecs(metrics::kShepherdBytesSentTotal, "theta_full") +
         SumOverCodecs(metrics::kShepherdBytesSentTotal, "theta_update");
}

double DeltaBytesReceived() { return SumOverCodecs(metrics::kShepherdBytesReceivedTotal, "delta"); }

std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> AdminMetricsInterceptors() {
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> out;
  out.push_back(std::make_unique<AdminMetricsFactory>());
  return out;
}

}  // namespace pcp::shepherd
