// Private: the shepherd's metric updates that need more than one Get() call: bytes by kind
// and codec on the Training stream (with their f32-equivalent size), codec time, and the
// Admin calls counted by a server interceptor. The metric names themselves live in the
// catalog (pcp/metrics/catalog.h).
//
//   CountSent(message, bytes);      // in the Training reactor, once per message written
//   CountReceived(message, bytes);  // once per message read
//   CountCodecSeconds(codec::Codec::kInt8, CodecOp::kDecode, assembler.codec_seconds());
//   { CodecTimer timer(codec::Codec::kInt4, CodecOp::kEncode); ...encode... }
//   double down = ThetaBytesSent();  // for a round's record: θ bytes so far, every codec
//   builder.experimental().SetInterceptorCreators(AdminMetricsInterceptors());
#ifndef PCP_SHEPHERD_SRC_SHEPHERD_METRICS_H_
#define PCP_SHEPHERD_SRC_SHEPHERD_METRICS_H_

#include <chrono>
#include <cstddef>
#include <memory>
#include <vector>

#include "pcp/codec/codec.h"
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

enum class CodecOp { kEncode, kDecode };
// pcp_shepherd_codec_seconds_total{op,codec} += seconds; nothing for f32 (never timed).
void CountCodecSeconds(codec::Codec codec, CodecOp op, double seconds);

// Counts the wall time of its scope with CountCodecSeconds.
class CodecTimer {
 public:
  CodecTimer(codec::Codec codec, CodecOp op) : codec_(codec), op_(op), start_(std::chrono::steady_clock::now()) {}
  ~CodecTimer();
  CodecTimer(const CodecTimer&) = delete;
  CodecTimer& operator=(const CodecTimer&) = delete;

 private:
  codec::Codec codec_;
  CodecOp op_;
  std::chrono::steady_clock::time_point start_;
};

// pcp_shepherd_admin_requests_total{method,code}: one count per finished pcp.v1.Admin call
// (method = the RPC's name, code = its gRPC status name); other services are not counted.
std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> AdminMetricsInterceptors();

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_SHEPHERD_METRICS_H_
