#include "worker_metrics.h"

#include "pcp/metrics/registry.h"

namespace pcp::worker {

void CountSent(const v1::WorkerMessage& message) {
  static const metrics::Counter delta = metrics::Get(metrics::kWorkerBytesSentTotal, {"delta"});
  static const metrics::Counter control = metrics::Get(metrics::kWorkerBytesSentTotal, {"control"});
  const double bytes = static_cast<double>(message.ByteSizeLong());
  (message.kind_case() == v1::WorkerMessage::kResultChunk ? delta : control).Increment(bytes);
}

void CountReceived(const v1::ShepherdMessage& message) {
  static const metrics::Counter params = metrics::Get(metrics::kWorkerBytesReceivedTotal, {"params"});
  static const metrics::Counter program = metrics::Get(metrics::kWorkerBytesReceivedTotal, {"program"});
  static const metrics::Counter shard = metrics::Get(metrics::kWorkerBytesReceivedTotal, {"shard"});
  static const metrics::Counter control = metrics::Get(metrics::kWorkerBytesReceivedTotal, {"control"});
  const double bytes = static_cast<double>(message.ByteSizeLong());
  switch (message.kind_case()) {
    case v1::ShepherdMessage::kParameterChunk: params.Increment(bytes); break;
    case v1::ShepherdMessage::kProgramChunk: program.Increment(bytes); break;
    case v1::ShepherdMessage::kShardChunk: shard.Increment(bytes); break;
    default: control.Increment(bytes); break;
  }
}

}  // namespace pcp::worker
