#include "worker_metrics.h"

#include "pcp/metrics/registry.h"
#include "pcp/rpc/traffic_kind.h"

namespace pcp::worker {

void CountSent(const v1::WorkerMessage& message, size_t bytes) {
  metrics::Get(metrics::kWorkerBytesSentTotal, {TrafficKind(message)}).Increment(static_cast<double>(bytes));
}

void CountReceived(const v1::ShepherdMessage& message, size_t bytes) {
  metrics::Get(metrics::kWorkerBytesReceivedTotal, {TrafficKind(message)}).Increment(static_cast<double>(bytes));
}

}  // namespace pcp::worker
