// Private: the shepherd's metric updates that need more than one Get() call: bytes by kind
// and codec on the Training stream (with their f32-equivalent size), and the Admin calls
// counted by a server interceptor. The metric names themselves live in the catalog
// (pcp/metrics/catalog.h; codec time: pcp/metrics/codec_seconds.h).
//
//   CountSent(message, bytes);      // in the Training reactor, once per message written
//   CountReceived(message, bytes);  // once per message read
//   double down = ThetaBytesSent();  // for a round's record: θ bytes so far, every codec
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

// pcp_shepherd_bytes_sent_total{kind,codec} / pcp_shepherd_bytes_received_total{kind,codec}:
// `bytes` of a serialized message, by pcp/rpc/traffic_kind.h's kind and codec; and for tensor
// chunks pcp_shepherd_payload_f32_bytes_{sent,received}_total{kind,codec}.
void CountSent(const v1::ShepherdMessage& message, size_t bytes);
void CountReceived(const v1::WorkerMessage& message, size_t bytes);

// Totals so far of the bytes above: θ sent (in full and as updates) and Δ received, over
// every codec.
double ThetaBytesSent();
double DeltaBytesReceived();

// pcp_shepherd_admin_requests_total{method,code}: one count per finished pcp.v1.Admin call
// (method = the RPC's name, code = its gRPC status name); other services are not counted.
std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> AdminMetricsInterceptors();

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_SHEPHERD_METRICS_H_
