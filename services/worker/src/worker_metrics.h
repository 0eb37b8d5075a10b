// Private: the worker's byte counters on its Training stream (names in pcp/metrics/catalog.h).
//
//   CountSent(message, buffer.Length());       // once per message written to the shepherd
//   CountReceived(message, buffer.Length());   // once per message read from it
#ifndef PCP_WORKER_SRC_WORKER_METRICS_H_
#define PCP_WORKER_SRC_WORKER_METRICS_H_

#include "pcp/v1/training.pb.h"

namespace pcp::worker {

// pcp_worker_bytes_sent_total{kind} / pcp_worker_bytes_received_total{kind}: `bytes` (the
// message's size on the wire), by pcp/rpc/traffic_kind.h's kind.
void CountSent(const v1::WorkerMessage& message, size_t bytes);
void CountReceived(const v1::ShepherdMessage& message, size_t bytes);

}  // namespace pcp::worker

#endif  // PCP_WORKER_SRC_WORKER_METRICS_H_
