// Private: the shepherd's metric updates that need more than one Get() call: bytes by kind
// on the Training stream, and the Admin calls counted by a server interceptor. The metric
// names themselves live in the catalog (pcp/metrics/catalog.h).
//
//   CountSent(message, bytes);      // in the Training reactor, once per message written
//   CountReceived(message, bytes);  // once per message read
//   builder.experimental().SetInterceptorCreators(AdminMetricsInterceptors());
#ifndef PCP_SHEPHERD_SRC_SHEPHERD_METRICS_H_
#define PCP_SHEPHERD_SRC_SHEPHERD_METRICS_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "pcp/v1/training.pb.h"

namespace grpc::experimental {
class ServerInterceptorFactoryInterface;
}  // namespace grpc::experimental

namespace pcp::shepherd {

// pcp_shepherd_bytes_sent_total{kind} / pcp_shepherd_bytes_received_total{kind}: `bytes`
// of a serialized message, by pcp/rpc/traffic_kind.h's kind.
void CountSent(const v1::ShepherdMessage& message, size_t bytes);
void CountReceived(const v1::WorkerMessage& message, size_t bytes);

// pcp_shepherd_admin_requests_total{method,code}: one count per finished pcp.v1.Admin call
// (method = the RPC's name, code = its gRPC status name); other services are not counted.
std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> AdminMetricsInterceptors();

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_SHEPHERD_METRICS_H_
