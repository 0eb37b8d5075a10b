// Private: the shepherd's metric updates that need more than one Get() call: bytes by kind
// on the Training stream, and the Admin calls counted by a server interceptor. The metric
// names themselves live in the catalog (pcp/metrics/catalog.h).
//
//   CountSent(message);        // in the Training reactor, once per message written
//   CountReceived(message);    // once per message read
//   builder.experimental().SetInterceptorCreators(AdminMetricsInterceptors());
#ifndef PCP_SHEPHERD_SRC_SHEPHERD_METRICS_H_
#define PCP_SHEPHERD_SRC_SHEPHERD_METRICS_H_

#include <memory>
#include <vector>

#include "pcp/v1/training.pb.h"

namespace grpc::experimental {
class ServerInterceptorFactoryInterface;
}  // namespace grpc::experimental

namespace pcp::shepherd {

// pcp_shepherd_bytes_sent_total{kind}: serialized size of a message to a worker
// (parameter_chunk = params, program_chunk = program, shard_chunk = shard, else control).
void CountSent(const v1::ShepherdMessage& message);
// pcp_shepherd_bytes_received_total{kind}: result_chunk = delta, else control.
void CountReceived(const v1::WorkerMessage& message);

// pcp_shepherd_admin_requests_total{method,code}: one count per finished pcp.v1.Admin call
// (method = the RPC's name, code = its gRPC status name); other services are not counted.
std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> AdminMetricsInterceptors();

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_SHEPHERD_METRICS_H_
