#include "worker_metrics.h"

#include "pcp/metrics/registry.h"
#include "pcp/rpc/traffic_kind.h"

namespace pcp::worker {
namespace {

void Count(metrics::CounterId wire, metrics::CounterId f32, const Traffic& t, size_t bytes) {
  metrics::Get(wire, {t.kind, t.codec}).Increment(static_cast<double>(bytes));
  if (t.f32_bytes > 0) metrics::Get(f32, {t.kind, t.codec}).Increment(static_cast<double>(t.f32_bytes));
}

}  // namespace

void CountSent(const v1::WorkerMessage& message, size_t bytes) {
  Count(metrics::kWorkerBytesSentTotal, metrics::kWorkerPayloadF32BytesSentTotal, TrafficOf(message), bytes);
}

void CountReceived(const v1::ShepherdMessage& message, size_t bytes) {
  Count(metrics::kWorkerBytesReceivedTotal, metrics::kWorkerPayloadF32BytesReceivedTotal, TrafficOf(message), bytes);
}

}  // namespace pcp::worker
